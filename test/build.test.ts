// scripts/build-package.mjs builds a package only when its inputs changed, so that `pnpm start` and
// `pnpm test` take seconds when nothing did: held here in a scratch workspace of two packages (b depends
// on a), built with this repository's TypeScript.
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

jest.setTimeout(180_000);

const root = join(__dirname, '..');
let work: string;

function write(file: string, text: string): void {
  mkdirSync(join(file, '..'), { recursive: true });
  writeFileSync(file, text);
}

/** Builds packages/NAME of the scratch workspace; resolves to 'built' or 'skipped'. */
function build(name: string): Promise<'built' | 'skipped'> {
  return new Promise((done, fail) => {
    const script = join(work, 'scripts', 'build-package.mjs');
    execFile(process.execPath, [script], { cwd: join(work, 'packages', name), encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error) fail(new Error(`build of ${name} failed: ${stdout}${stderr}`));
      else done(stdout.includes('dist/ is up to date') ? 'skipped' : 'built');
    });
  });
}

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'sluice-build-'));
  for (const file of ['scripts/build-package.mjs', 'tsconfig.base.json', 'LICENSE', 'pnpm-lock.yaml'])
    cpSync(join(root, file), join(work, file));
  symlinkSync(join(root, 'node_modules'), join(work, 'node_modules'), 'dir');
  for (const [name, dependencies] of [
    ['a', {}],
    ['b', { a: 'workspace:*' }],
  ] as const) {
    const dir = join(work, 'packages', name);
    write(join(dir, 'package.json'), JSON.stringify({ name, type: 'module', dependencies }));
    cpSync(join(root, 'packages', 'core', 'tsconfig.build.json'), join(dir, 'tsconfig.build.json'));
    write(join(dir, 'src', 'index.ts'), `export const ${name} = 1;\n`);
  }
  mkdirSync(join(work, 'packages', 'b', 'node_modules'));
  symlinkSync(join(work, 'packages', 'a'), join(work, 'packages', 'b', 'node_modules', 'a'), 'dir');
});

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('building a package', () => {
  it('builds one without dist/, and not again from the same inputs', async () => {
    expect(await build('a')).toBe('built');
    expect(existsSync(join(work, 'packages', 'a', 'dist', 'esm', 'index.js'))).toBe(true);
    expect(existsSync(join(work, 'packages', 'a', 'dist', 'cjs', 'index.js'))).toBe(true);
    expect(await build('a')).toBe('skipped');
    // A test file is no input of the build.
    write(join(work, 'packages', 'a', 'src', 'index.test.ts'), 'export {};\n');
    expect(await build('a')).toBe('skipped');
  });

  it('rebuilds a package whose source changed, and then the packages that depend on it', async () => {
    await build('a');
    expect(await build('b')).toBe('built');
    expect(await build('b')).toBe('skipped');
    write(join(work, 'packages', 'a', 'src', 'index.ts'), 'export const a = 2;\n');
    expect(await build('a')).toBe('built');
    expect(await build('b')).toBe('built');
    expect(await build('b')).toBe('skipped');
  });

  it('rebuilds a package whose dist/ was removed', async () => {
    await build('a');
    rmSync(join(work, 'packages', 'a', 'dist'), { recursive: true });
    expect(await build('a')).toBe('built');
  });
});
