// lua/ is the one source of every script. This builds the decide script from it: prelude.lua, then
// algorithm(code), in which each algorithm file (the others) is the branch of the code the file declares:
// it makes the file's functions and returns its <name> step and its <name>_adjust function (charge
// without a check, refund, or give a slot back), and decide.lua. It writes the script with the algorithm
// codes to src/lua.generated.ts, so the built package carries it and works on its own, from ESM and CJS
// alike. Runs on `pnpm install` and on every build.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('../../../lua/', import.meta.url));
const read = (f) => readFileSync(dir + f, 'utf8');
const algorithms = readdirSync(dir)
  .filter((f) => f.endsWith('.lua') && f !== 'prelude.lua' && f !== 'decide.lua')
  .sort()
  .map((file) => {
    const source = read(file);
    const name = file.slice(0, -'.lua'.length);
    const code = /^-- code: (\w+)$/m.exec(source)?.[1];
    const fn = name.replaceAll('-', '_');
    if (!code) throw new Error(`lua/${file}: no '-- code: xx' line`);
    if (!source.includes(`local function ${fn}(`)) throw new Error(`lua/${file}: no 'local function ${fn}('`);
    if (!source.includes(`local function ${fn}_adjust(`)) throw new Error(`lua/${file}: no 'local function ${fn}_adjust('`);
    return { name, code, fn, source };
  });
// A call makes the functions of the algorithms it uses only: Redis makes a script's closures at every
// call, and all of them together cost a call of 16 decisions 1,350 instructions per decision (4%).
const branches = algorithms.map(
  (a, i) => `${i === 0 ? 'if' : 'elseif'} code == '${a.code}' then\n${a.source}\nreturn ${a.fn}, ${a.fn}_adjust`,
);
const table = `local function algorithm(code)\n${branches.join('\n')}\nend\nend\n`;
const script = [read('prelude.lua'), table, read('decide.lua')].join('\n');
const codes = Object.fromEntries(algorithms.map((a) => [a.name, a.code]));
writeFileSync(
  fileURLToPath(new URL('../src/lua.generated.ts', import.meta.url)),
  `// Generated from lua/ by scripts/gen-lua.mjs. Do not edit.\n` +
    `/** The code each algorithm's script declares, by algorithm: the Lua dispatches on it. */\n` +
    `export const ALGORITHM_CODES = ${JSON.stringify(codes)} as const;\n` +
    `export const DECIDE_SCRIPT = ${JSON.stringify(script)};\n`,
);
