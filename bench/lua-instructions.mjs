// Redis instructions per decision of the shipped script, counted by valgrind's callgrind: a count,
// not a time, so it repeats to within about 1% whatever else the machine does, and compares script
// variants that wall-clock benchmarks on a shared 2-core VM cannot tell apart. redis-server runs under
// callgrind on a free port; after a warm-up (every key written) the counters are zeroed, BATCHES script
// calls of BATCH consume decisions each go over 10,000 keys, and the instructions redis-server executed
// in that span (the whole server: networking, the script, the commands) are divided by the decisions;
// so are those spent inside the script calls alone, which the server's timers (more of them the longer
// a run takes on a busy machine) do not blur: compare variants on that figure.
// Usage: pnpm --filter @sluice/core build && node bench/lua-instructions.mjs
//   [--algorithm tb|fw|sw|sl|ca] [--limit 1000] [--window 3600000] [--batch 512] [--batches 200] [--functions [hoisted]]
//   [--pair | --settle] [--script variant.lua]
// --pair: a concurrent slot taken then released (two calls of BATCH each); --settle: a token-bucket consume
// of cost 2 then an adjustment by -1 (what a settled HTTP request costs). Figures are then per pair.
// A calendar quota (ca) takes its candidate period starts as --window (see lua/calendar.lua), e.g. a UTC
// day's: --window "$(node -e 'const d=864e5,m=Math.floor(Date.now()/d)*d;console.log([m-d,m,m+d,m+2*d].join(" "))')"
// --functions: the same script as a Redis Function (FUNCTION LOAD once, then FCALL instead of EVALSHA):
// the generated script wrapped whole in a library (`#!lua name=sluice`, one registered function whose
// keys and args are its KEYS and ARGV). --functions hoisted: the algorithms' definitions run once, at
// FUNCTION LOAD, instead of at every call (see library()). --batch 1 gives the cost of a call
// (with one decision): a call of b decisions costs about C + b * D. --script: count a variant of the
// generated script (same protocol) instead of the built one, e.g. a copy with a fast path taken out.
// Needs valgrind (callgrind_control, callgrind_annotate) on PATH.
import { execFileSync, spawn } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { DECIDE_SCRIPT as SHIPPED } from '../packages/core/dist/esm/lua.generated.js';
import { freePort } from '../test/support/redis-harness.mjs';
import { arg } from './args.mjs';

const ALGORITHM = arg('algorithm', 'tb');
const LIMIT = arg('limit', '1000');
const WINDOW = arg('window', '3600000');
const BATCH = Number(arg('batch', 512));
const BATCHES = Number(arg('batches', 200));
const KEYS = 10_000;
const PAIR = process.argv.includes('--pair');
const SETTLE = process.argv.includes('--settle');
const at = process.argv.indexOf('--functions');
const FUNCTIONS = at < 0 ? undefined : process.argv[at + 1] === 'hoisted' ? 'hoisted' : 'wrapped';
// --script <file>: a variant of the generated script (same protocol) to count instead of the shipped one.
const SCRIPT = arg('script', '');
const DECIDE_SCRIPT = SCRIPT ? readFileSync(SCRIPT, 'utf8') : SHIPPED;
// A spec in ARGV (packages/core/src/store/protocol.ts): code, limit, window ms, burst, calendar period starts.
const SPEC = ALGORITHM === 'ca' ? ['ca', LIMIT, '86400000', LIMIT, WINDOW] : [ALGORITHM, LIMIT, WINDOW, LIMIT, ''];

/** The library FUNCTION LOAD takes: DECIDE_SCRIPT as the body of one function, or with its definitions hoisted out. */
function library(mode) {
  const head = '#!lua name=sluice\n';
  if (mode === 'wrapped') return `${head}redis.register_function('sluice_decide', function(KEYS, ARGV)\n${DECIDE_SCRIPT}\nend)\n`;
  // The definitions come first, then decide.lua, whose per-call part starts with its locals of KEYS and ARGV.
  const split = DECIDE_SCRIPT.search(/^local KEYS, ARGV = KEYS, ARGV$/m);
  if (split < 0) throw new Error('lua-instructions: the decide script has changed shape; update library()');
  // While a library loads it sees no globals but a reduced `redis` (no string, math, redis.call): the
  // files' top-level aliases (`local floor, format, call = math.floor, string.format, redis.call`, the
  // same names for the same values in every file) become upvalues the function sets on its first call,
  // and the top-level plain values (`local SLACK = 0`) upvalues it sets at every call.
  const aliases = new Map();
  const defs = DECIDE_SCRIPT.slice(0, split).replace(/^local ([\w, ]+) = ([\w., ]+)$/gm, (_line, names, values) => {
    const vs = values.split(',').map((v) => v.trim());
    names.split(',').forEach((n, i) => {
      const name = n.trim();
      if (aliases.has(name) && aliases.get(name) !== vs[i]) throw new Error(`lua-instructions: ${name} aliases two values`);
      aliases.set(name, vs[i]);
    });
    return '';
  });
  // The library's references (`redis.call`, `string.format`) are set once; the prelude's per-call state
  // (SLACK, the written-state memo: plain values) at every call, as a script's top level would.
  const all = [...aliases];
  const once = all.filter(([, v]) => v.includes('.'));
  const each = all.filter(([, v]) => !v.includes('.'));
  const assign = (pairs) => `${pairs.map(([n]) => n).join(', ')} = ${pairs.map(([, v]) => v).join(', ')}`;
  const body = DECIDE_SCRIPT.slice(split);
  return (
    `${head}local ${all.map(([n]) => n).join(', ')}\n${defs}\nredis.register_function('sluice_decide', function(KEYS, ARGV)\n` +
    `if not call then ${assign(once)} end\n${each.length > 0 ? `${assign(each)}\n` : ''}${body}\nend)\n`
  );
}

const port = await freePort();
const out = join(tmpdir(), `sluice-callgrind-${port}`);
const proc = spawn(
  'valgrind',
  ['--tool=callgrind', `--callgrind-out-file=${out}`, 'redis-server', '--port', String(port), '--save', '', '--appendonly', 'no'],
  { stdio: 'ignore' },
);
const client = new Redis({ port, lazyConnect: true, retryStrategy: () => null });
client.on('error', () => {});
try {
  for (let i = 0; ; i++) {
    try {
      await client.connect();
      break;
    } catch (error) {
      if (i === 100) throw error;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  const sha = await client.script('LOAD', DECIDE_SCRIPT);
  if (FUNCTIONS) await client.call('FUNCTION', 'LOAD', 'REPLACE', library(FUNCTIONS));
  let n = 0;
  // The script's call guard (lua/decide.lua), and the number of the last call.
  const GUARD = 'b:guard';
  let calls = 0;
  // One run of BATCH alike decisions (see packages/core/src/store/protocol.ts): count, op, cost, idTtl, slots,
  // one policy, spec 1.
  const call = async () => {
    const keys = Array.from({ length: BATCH }, () => `b:{k${n++ % KEYS}}:p`);
    if (PAIR || SETTLE) {
      // Two calls alike, each of BATCH decisions: a take of a slot then its release (--pair), or a consume
      // of cost 2 then its adjustment by -1 (--settle: what an HTTP settle costs a request).
      const slots = PAIR ? keys.map((_, i) => `s${n}-${i}`).join(' ') : '';
      const spec = () => [String(++calls), '', '1', ...(PAIR ? ['cc', LIMIT, WINDOW, LIMIT, ''] : ['tb', LIMIT, WINDOW, LIMIT, ''])];
      const take = [...spec(), String(BATCH), 'c', PAIR ? '1' : '2', '0', slots, '1', '1'];
      const taken = await client.evalsha(sha, BATCH + 1, GUARD, ...keys, ...take);
      if (taken.length !== 3 * BATCH || taken[2] !== 0) throw new Error(`unexpected reply: ${taken.slice(0, 6)}`);
      await client.evalsha(sha, BATCH + 1, GUARD, ...keys, ...spec(), String(BATCH), PAIR ? 'r' : 'a', '-1', '0', slots, '1', '1');
      return;
    }
    const args = [String(++calls), '', '1', ...SPEC, String(BATCH), 'c', '1', '0', '', '1', '1'];
    const reply = FUNCTIONS
      ? await client.call('FCALL', 'sluice_decide', BATCH + 1, GUARD, ...keys, ...args)
      : await client.evalsha(sha, BATCH + 1, GUARD, ...keys, ...args);
    // Both forms must decide alike: every decision of a call answered, each allowed (limits far above use).
    if (reply.length !== 3 * BATCH || reply[2] !== 0) throw new Error(`unexpected reply: ${reply.slice(0, 6)}`);
  };
  while (n < KEYS) await call();
  execFileSync('callgrind_control', ['-z', String(proc.pid)], { stdio: 'ignore' });
  for (let i = 0; i < BATCHES; i++) await call();
  execFileSync('callgrind_control', ['-d', String(proc.pid)], { stdio: 'ignore' });
  const dump = readdirSync(tmpdir())
    .filter((f) => f.startsWith(`sluice-callgrind-${port}.`))
    .sort()
    .at(-1);
  const annotated = execFileSync('callgrind_annotate', [join(tmpdir(), dump)], { encoding: 'utf8', maxBuffer: 1e8 });
  const total = Number(/([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS/.exec(annotated)[1].replace(/,/g, ''));
  // The scripts' own share (EVALSHA's or FCALL's command function, inclusive): the whole server's count also holds its
  // timers (serverCron), which grow with wall time, so on a busy machine it varies by a few %; this does not.
  const inclusive = execFileSync('callgrind_annotate', ['--inclusive=yes', join(tmpdir(), dump)], { encoding: 'utf8', maxBuffer: 1e8 });
  const scripts = Number(
    /([\d,]+) \([\d.]+%\)\s+\S*:(?:evalGenericCommand|fcallCommand)\b/.exec(inclusive)?.[1].replace(/,/g, '') ?? Number.NaN,
  );
  const f = (x) => Math.round(x).toLocaleString('en-US');
  console.log(
    `${FUNCTIONS ? `FCALL (${FUNCTIONS})` : 'EVALSHA'} ${PAIR ? 'take+release' : SETTLE ? 'consume+adjust' : ALGORITHM} ${LIMIT}/${WINDOW}ms, ${BATCHES} calls of ${BATCH}: ` +
      `${f(total / (BATCHES * BATCH))} instructions per ${PAIR || SETTLE ? 'pair' : 'decision'}, ${f(total / BATCHES)} per ${PAIR || SETTLE ? 'pair of calls' : 'call'}; ` +
      `${f(scripts / (BATCHES * BATCH))} of them in the script calls`,
  );
  // One file per algorithm: each is its own run (--algorithm picks one).
  const { writeResults } = SCRIPT ? { writeResults: () => {} } : await import('./results.mjs');
  writeResults(`lua-instructions-${PAIR ? 'pair' : SETTLE ? 'settle' : ALGORITHM}`, {
    settings: { algorithm: ALGORITHM, limit: Number(LIMIT), windowMs: Number(WINDOW), batch: BATCH, batches: BATCHES, keys: KEYS },
    instructions: total,
    instructionsPerDecision: total / (BATCHES * BATCH),
  });
} finally {
  client.disconnect();
  proc.kill('SIGKILL');
  for (const f of readdirSync(tmpdir())) if (f.startsWith(`sluice-callgrind-${port}`)) rmSync(join(tmpdir(), f), { force: true });
}
