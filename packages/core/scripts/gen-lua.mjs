// lua/ is the one source of every script. This inlines them into src/lua.generated.ts so the built
// package carries them and works on its own, from ESM and CJS alike.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('../../../lua/', import.meta.url));
// The algorithm files define local functions that decide.lua dispatches to, so they come first.
const files = ['token-bucket.lua', 'fixed-window.lua', 'sliding-window.lua', 'sliding-log.lua', 'decide.lua'];
const script = files.map((f) => readFileSync(dir + f, 'utf8')).join('\n');
writeFileSync(
  fileURLToPath(new URL('../src/lua.generated.ts', import.meta.url)),
  `// Generated from lua/ by scripts/gen-lua.mjs. Do not edit.\nexport const DECIDE_SCRIPT = ${JSON.stringify(script)};\n`,
);
