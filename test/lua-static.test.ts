// The scripts of lua/ run on every server a team runs (docs/redis.md, Servers): every key a script touches
// comes from KEYS (Dragonfly refuses any other), no script carries a shebang flag line, and a missing
// script is told by the NOSCRIPT prefix of the error, not by its wording (Valkey 8 words it otherwise).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DECIDE_SCRIPT, HOME_SCRIPT, LUA_LINES, REGION_SCRIPT, RULES_SCRIPT } from '../packages/core/src/lua.generated';
import { redisRules } from '../packages/core/src/store/redis/rules';
import type { ScriptClient } from '../packages/core/src/store/redis/script-client';
import { luaSource, runDecide } from '../packages/core/src/store/redis/scripts';
import { undeclaredKeys } from './support/lua-keys';

const LUA = join(__dirname, '..', 'lua');
const SCRIPTS = { decide: DECIDE_SCRIPT, rules: RULES_SCRIPT, region: REGION_SCRIPT, home: HOME_SCRIPT };
/** The scripts shipped as they are, not built from several files: their lines are their file's. */
const WHOLE: Partial<Record<keyof typeof SCRIPTS, string>> = { rules: 'lua/rules.lua', region: 'lua/region.lua', home: 'lua/home.lua' };
type Script = keyof typeof SCRIPTS;
/** What the check found in `source` (one of SCRIPTS, or a changed copy), each at its lua/ file and line. */
const check = (script: Script, source = SCRIPTS[script]) =>
  undeclaredKeys(source).map(
    ({ line, problem }) => `${WHOLE[script] !== undefined ? `${WHOLE[script]}:${line}` : luaSource(line)}: ${problem}`,
  );

describe('every key a script touches comes from KEYS', () => {
  it.each(Object.keys(SCRIPTS) as Script[])('in the %s script', (script) => {
    expect(check(script)).toEqual([]);
  });

  it('the scripts checked are all of lua/', () => {
    const files = readdirSync(LUA).filter((f) => f.endsWith('.lua'));
    expect([...LUA_LINES.map(([, file]) => file), ...Object.values(WHOLE)].sort()).toEqual(files.map((f) => `lua/${f}`).sort());
  });

  // Each change must apply: when the scripts change shape, change these with them.
  const changed = (source: string, from: RegExp, to: string) => {
    const out = source.replace(from, to);
    expect(out).not.toBe(source);
    return out;
  };

  it('a key the decide loop passes to an algorithm is followed into it, through get and put', () => {
    const found = check('decide', changed(DECIDE_SCRIPT, /\b(\w+)\(KEYS\[k\]/, '$1(ARGV[k]'));
    expect(found).toEqual(expect.arrayContaining([expect.stringMatching(/^lua\/prelude\.lua:\d+: call\('GET', key\)/)]));
  });

  it('a key a helper builds is caught in the real scripts', () => {
    expect(check('decide', changed(DECIDE_SCRIPT, /call\('GET', key\)/, "call('GET', 'sluice:' .. key)"))).toEqual([
      expect.stringMatching(/^lua\/prelude\.lua:\d+: call\('GET', 'sluice:' \.\. key\): 'sluice:' \.\. key is not from KEYS$/),
    ]);
    expect(check('rules', changed(RULES_SCRIPT, /call\('HGETALL', KEYS\[2\]\)/, "call('HGETALL', 'rules')"))).toEqual([
      expect.stringMatching(/^lua\/rules\.lua:\d+: call\('HGETALL', 'rules'\): 'rules' is not from KEYS$/),
    ]);
  });

  it.each([
    ['a key built from an argument', "local call = redis.call\nlocal prefix = ARGV[1]\nreturn call('GET', prefix .. 'x')"],
    ['a literal key', "return redis.call('SET', 'fixed', 1)"],
    [
      'a helper called once with a key and once without',
      "local function get(key) return redis.call('GET', key) end\nget(KEYS[1])\nreturn get(ARGV[1])",
    ],
    [
      'an algorithm, reached through a table of functions, called without a key',
      "local function step(key) return redis.call('GET', key) end\nlocal fns = { step }\nfns[1](KEYS[1])\nreturn fns[1]('other')",
    ],
    ['a local key assigned another value', "local key = KEYS[1]\nif ARGV[1] ~= '' then key = ARGV[1] end\nreturn redis.call('GET', key)"],
    ['pcall(redis.call, ...)', "return pcall(redis.call, 'GET', ARGV[1])"],
    ['a second key of DEL through redis.pcall', "return redis.pcall('DEL', KEYS[1], ARGV[1])"],
    ['a command outside COMMANDS', "return redis.call('KEYS', '*')"],
    ['a command that is not a literal', 'return redis.call(ARGV[1], KEYS[1])'],
    ['redis.call kept in a table', "local t = { redis.call }\nreturn t[1]('GET', KEYS[1])"],
    ['a write into KEYS', "KEYS[1] = ARGV[1]\nreturn redis.call('GET', KEYS[1])"],
    ['redis reached through _G', "return _G.redis.call('GET', 'x')"],
    [
      'a helper handed to table.sort',
      "local function get(key) return redis.call('GET', key) end\ntable.sort({ KEYS[1] }, get)\nreturn get(KEYS[1])",
    ],
  ])('the check refuses %s', (_name, source) => {
    expect(undeclaredKeys(source)).not.toEqual([]);
  });

  it('the check takes keys passed through locals, helpers, a table of functions and pcall', () => {
    const source = [
      'local call, KEYS = redis.call, KEYS',
      "local function get(key) return call('GET', key) end",
      "local function step(key, n) call('SET', key, n) return get(key) end",
      'local fns = { step }',
      'local run, key = fns[1], KEYS[2]',
      'run(KEYS[1], 1)',
      'fns[1](key, #KEYS)',
      'table.sort({ 2, 1 }, function(a, b) return a < b end)',
      "return pcall(call, 'DEL', KEYS[1], key)",
    ].join('\n');
    expect(undeclaredKeys(source)).toEqual([]);
  });
});

it('no script carries a shebang flag line (#!lua flags=...), which Redis 6.2 does not read', () => {
  for (const file of readdirSync(LUA)) expect(readFileSync(join(LUA, file), 'utf8').startsWith('#!')).toBe(false);
  for (const script of Object.values(SCRIPTS)) expect(script.startsWith('#!')).toBe(false);
});

describe('a missing script is told by the NOSCRIPT prefix of the error, whatever its wording', () => {
  /** A client whose EVALSHA answers `error`, and whose EVAL runs (rules' version 3 at 1000 ms). */
  function client(error: string) {
    const evals: string[] = [];
    const c: ScriptClient = {
      cluster: false,
      down: () => undefined,
      connecting: () => false,
      whenSettled: () => {},
      evalsha: () => Promise.reject(new Error(error)),
      eval: (script) => {
        evals.push(script);
        return Promise.resolve(script === RULES_SCRIPT ? 1 : [3, 1000]);
      },
      del: () => Promise.resolve(0),
      masters: () => Promise.resolve([]),
      detach: () => {},
    };
    return { c, evals };
  }

  it.each([
    ['Redis 7', 'NOSCRIPT No matching script. Please use EVAL.'],
    ['Valkey 8', 'NOSCRIPT No matching script.'],
  ])("%s's wording: the decide and rules scripts are sent again by EVAL", async (_server, message) => {
    const { c, evals } = client(message);
    await expect(runDecide(c, ['g', 'k'], ['1', ''], () => '2')).resolves.toEqual([3, 1000]);
    await expect(redisRules(c).seen('p')).resolves.toBe(true);
    expect(evals).toEqual([DECIDE_SCRIPT, RULES_SCRIPT]);
  });

  it('an error that names NOSCRIPT later on is not one: nothing is sent again', async () => {
    const { c, evals } = client('ERR Error running script: NOSCRIPT');
    await expect(runDecide(c, ['g', 'k'], ['1', ''], () => '2')).rejects.toThrow('ERR Error running script');
    await expect(redisRules(c).seen('p')).rejects.toThrow('ERR Error running script');
    expect(evals).toEqual([]);
  });
});
