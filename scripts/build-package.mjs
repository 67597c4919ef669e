// Builds one package (the cwd) as ESM and CJS with declarations, from src/ into dist/.
// The source maps and declaration maps point at ../../src/*.ts: the package ships src/ (its `files`), so
// they resolve in an installed package, and "go to definition" lands in the TypeScript source.
//
// A package whose dist/ was built from the same inputs is not built again, so that `pnpm start` and
// `pnpm test` take seconds when nothing changed. The inputs are hashed, not dated: its sources (for core,
// src/lua.generated.ts, which gen-lua writes from lua/ before this runs), its package.json and tsconfig,
// the base tsconfig, the lockfile (the dependencies' types), this script, and the builds of the workspace
// packages it depends on. A fresh clone has no dist/ and builds everything.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const require = createRequire(import.meta.url);
const tsc = require.resolve('typescript/bin/tsc');
/** Where a package's last build keeps the hash of its inputs: beside dist/, so that it is never packed. */
const STAMP = join('node_modules', '.cache', 'sluice-build');
/** What the build writes last: no dist/ without it, however an earlier build ended. */
const LAST_OUTPUT = join('dist', 'esm', 'package.json');

function inputsHash() {
  const hash = createHash('sha256');
  const add = (file) =>
    hash
      .update(`${file}\0`)
      .update(existsSync(file) ? readFileSync(file) : '\0none')
      .update('\0');
  const sources = readdirSync('src', { recursive: true, encoding: 'utf8' })
    .map((file) => join('src', file))
    .filter((file) => !file.endsWith('.test.ts') && statSync(file).isFile())
    .sort();
  for (const file of ['package.json', 'tsconfig.build.json', ...sources]) add(file);
  for (const file of ['tsconfig.base.json', 'pnpm-lock.yaml', 'scripts/build-package.mjs']) add(join(root, file));
  hash.update(JSON.parse(readFileSync(require.resolve('typescript/package.json'), 'utf8')).version);
  // A workspace dependency's declarations are this package's inputs too: its stamp stands for them.
  const { dependencies = {} } = JSON.parse(readFileSync('package.json', 'utf8'));
  for (const [name, range] of Object.entries(dependencies).sort()) {
    if (String(range).startsWith('workspace:')) add(join('node_modules', name, STAMP));
  }
  return hash.digest('hex');
}

const inputs = inputsHash();
if (existsSync(LAST_OUTPUT) && existsSync(STAMP) && readFileSync(STAMP, 'utf8') === inputs) {
  console.log('dist/ is up to date');
} else {
  rmSync(STAMP, { force: true });
  rmSync('dist', { recursive: true, force: true });
  const run = (...args) => execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', ...args], { stdio: 'inherit' });
  run('--outDir', 'dist/esm');
  run('--outDir', 'dist/cjs', '--module', 'commonjs', '--moduleResolution', 'node10');
  mkdirSync('dist/cjs', { recursive: true });
  writeFileSync('dist/cjs/package.json', '{ "type": "commonjs" }\n');
  writeFileSync(LAST_OUTPUT, '{ "type": "module" }\n');
  mkdirSync(join('node_modules', '.cache'), { recursive: true });
  writeFileSync(STAMP, inputs);
}
// The one LICENSE lives at the repository root; a package ships a copy (gitignored), made here because
// `prepack` runs this build.
copyFileSync(join(root, 'LICENSE'), 'LICENSE');
