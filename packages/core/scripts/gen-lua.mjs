// lua/ is the one source of every script. This builds the decide script from it: prelude.lua, then
// algorithm(code), in which each algorithm file (the others) is the branch of the code the file declares:
// it makes the file's functions and returns its <name> step and its <name>_adjust function (charge
// without a check, refund, or give a slot back), and its <name>_reserve when it has one (a place in
// line: limiter.wait), and decide.lua. Each file's text opens with a
// `-- lua/<file>:1` marker, and LUA_LINES maps every line of the script back to its file and line, so
// that a Redis error (`user_script:123: ...`) names lua/<file>:<line> (store/redis/store.ts rewrites it). It
// writes the script, the map and the algorithm codes to src/lua.generated.ts, so the built package
// carries them and works on its own, from ESM and CJS alike. Runs on `pnpm install` and on every build.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('../../../lua/', import.meta.url));
const read = (f) => readFileSync(dir + f, 'utf8').replace(/\n$/, '');
// Scripts of their own, not branches of decide: rules.lua is the rules' script (RULES_SCRIPT, store/redis/rules.ts),
// region.lua and home.lua the two sides of a limit across regions (REGION_SCRIPT, HOME_SCRIPT, store/redis/leases.ts).
const NOT_ALGORITHMS = ['prelude.lua', 'decide.lua', 'rules.lua', 'region.lua', 'home.lua'];
const algorithms = readdirSync(dir)
  .filter((f) => f.endsWith('.lua') && !NOT_ALGORITHMS.includes(f))
  .sort()
  .map((file) => {
    const source = read(file);
    const name = file.slice(0, -'.lua'.length);
    const code = /^-- code: (\w+)$/m.exec(source)?.[1];
    const fn = name.replaceAll('-', '_');
    if (!code) throw new Error(`lua/${file}: no '-- code: xx' line`);
    if (!source.includes(`local function ${fn}(`)) throw new Error(`lua/${file}: no 'local function ${fn}('`);
    if (!source.includes(`local function ${fn}_adjust(`)) throw new Error(`lua/${file}: no 'local function ${fn}_adjust('`);
    // <name>_reserve is optional: only the algorithms that can reserve a place in line have one.
    const reserve = source.includes(`local function ${fn}_reserve(`);
    return { file, name, code, fn, source, reserve };
  });

// The script's lines, and the map: [first line of the script, file, its first line, lines] per file.
const lines = [];
const map = [];
const glue = (text) => lines.push(text);
function file(name, source = read(name)) {
  glue(`-- lua/${name}:1`);
  const body = source.split('\n');
  map.push([lines.length + 1, `lua/${name}`, 1, body.length]);
  for (const line of body) lines.push(line);
}
file('prelude.lua');
// A call makes the functions of the algorithms it uses only: Redis makes a script's closures at every
// call, and all of them together cost a call of 16 decisions 1,350 instructions per decision (4%).
glue('local function algorithm(code)');
algorithms.forEach((a, i) => {
  glue(`${i === 0 ? 'if' : 'elseif'} code == '${a.code}' then`);
  file(a.file, a.source);
  glue(`return ${a.fn}, ${a.fn}_adjust${a.reserve ? `, ${a.fn}_reserve` : ''}`);
});
glue('end');
glue('end');
file('decide.lua');

const codes = Object.fromEntries(algorithms.map((a) => [a.name, a.code]));
writeFileSync(
  fileURLToPath(new URL('../src/lua.generated.ts', import.meta.url)),
  `// Generated from lua/ by scripts/gen-lua.mjs. Do not edit.\n` +
    `/** The code each algorithm's script declares, by algorithm: the Lua dispatch on it. */\n` +
    `export const ALGORITHM_CODES = ${JSON.stringify(codes)} as const;\n` +
    `export const DECIDE_SCRIPT = ${JSON.stringify(`${lines.join('\n')}\n`)};\n` +
    `/** lua/rules.lua as it is: the rules' reads and writes (store/redis/rules.ts). */\n` +
    `export const RULES_SCRIPT = ${JSON.stringify(`${read('rules.lua')}\n`)};\n` +
    `/** lua/region.lua as it is: a region's leased tokens (store/redis/leases.ts). */\n` +
    `export const REGION_SCRIPT = ${JSON.stringify(`${read('region.lua')}\n`)};\n` +
    `/** lua/home.lua as it is: the home's global buckets and its grants (store/redis/leases.ts). */\n` +
    `export const HOME_SCRIPT = ${JSON.stringify(`${read('home.lua')}\n`)};\n` +
    `/** Per lua/ file: the script's line its text starts on, the file, the file's line there, and its lines. */\n` +
    `export const LUA_LINES: readonly (readonly [number, string, number, number])[] = ${JSON.stringify(map)};\n`,
);
