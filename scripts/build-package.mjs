// Builds one package (the cwd) as ESM and CJS with declarations, from src/ into dist/.
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
rmSync('dist', { recursive: true, force: true });
const run = (...args) => execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', ...args], { stdio: 'inherit' });
run('--outDir', 'dist/esm');
run('--outDir', 'dist/cjs', '--module', 'commonjs', '--moduleResolution', 'node10');
mkdirSync('dist/cjs', { recursive: true });
writeFileSync('dist/cjs/package.json', '{ "type": "commonjs" }\n');
writeFileSync('dist/esm/package.json', '{ "type": "module" }\n');
