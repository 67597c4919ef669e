// Builds one package (the cwd) as ESM and CJS with declarations, from src/ into dist/.
// The source maps and declaration maps point at ../../src/*.ts: the package ships src/ (its `files`), so
// they resolve in an installed package, and "go to definition" lands in the TypeScript source.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
rmSync('dist', { recursive: true, force: true });
const run = (...args) => execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', ...args], { stdio: 'inherit' });
run('--outDir', 'dist/esm');
run('--outDir', 'dist/cjs', '--module', 'commonjs', '--moduleResolution', 'node10');
mkdirSync('dist/cjs', { recursive: true });
writeFileSync('dist/cjs/package.json', '{ "type": "commonjs" }\n');
writeFileSync('dist/esm/package.json', '{ "type": "module" }\n');
// The one LICENSE lives at the repository root; a package ships a copy (gitignored), made here because
// `prepack` runs this build.
copyFileSync(new URL('../LICENSE', import.meta.url), 'LICENSE');
