// lua/ is the one source of every script. This builds the decide script from it: prelude.lua, every
// algorithm file (the others), ALGORITHMS (each algorithm's function by the code its file declares),
// ADJUSTS (its <name>_adjust function: charge without a check, refund, or give a slot back)
// and decide.lua, and writes it with the algorithm codes to src/lua.generated.ts, so the built package
// carries it and works on its own, from ESM and CJS alike. Runs on `pnpm install` and on every build.
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
const table =
  `local ALGORITHMS = { ${algorithms.map((a) => `${a.code} = ${a.fn}`).join(', ')} }\n` +
  `local ADJUSTS = { ${algorithms.map((a) => `${a.code} = ${a.fn}_adjust`).join(', ')} }\n`;
const script = [read('prelude.lua'), ...algorithms.map((a) => a.source), table, read('decide.lua')].join('\n');
const codes = Object.fromEntries(algorithms.map((a) => [a.name, a.code]));
writeFileSync(
  fileURLToPath(new URL('../src/lua.generated.ts', import.meta.url)),
  `// Generated from lua/ by scripts/gen-lua.mjs. Do not edit.\n` +
    `/** The code each algorithm's script declares, by algorithm: the Lua dispatches on it. */\n` +
    `export const ALGORITHM_CODES = ${JSON.stringify(codes)} as const;\n` +
    `export const DECIDE_SCRIPT = ${JSON.stringify(script)};\n`,
);
