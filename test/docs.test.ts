// Every code block of the documentation runs: README.md, docs/**/*.md and packages/*/README.md.
//
// The convention, for whoever writes a page:
//
// - ```js and ```mjs: a complete ES module, run with node against the built packages (`pnpm build` first;
//   `pnpm test` does it). It must exit 0 on its own (close what it opened: `await client.quit()`,
//   `limiter.close()`), within 20 s. A block that calls `.listen(` is a server: it runs with `PORT` set
//   to a free port (so write `app.listen(process.env.PORT ?? 3000)`), the test sends it `GET /` once,
//   expects an answer below 500, and kills it.
// - ```ts: a complete module, type-checked (not run) under `strict`, without `skipLibCheck`, all in one
//   TypeScript program, against the built packages' types (with legacy decorators, as NestJS uses them).
// - Redis: a block reads `process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'`; the test starts a Redis of
//   its own and sets `REDIS_URL`. A block that names `Cluster(` or `createCluster(` gets a real Cluster
//   too, its nodes in `REDIS_CLUSTER_NODES` (`'127.0.0.1:7000,127.0.0.1:7001'`, the examples' variable).
// - A fragment (a few lines that need names from elsewhere) follows the comment
//   `<!-- fragment of: docs/page.md#name -->`, and the complete block it belongs to follows
//   `<!-- name: name -->` (a name unique in its file). A fragment is checked appended to that block: with
//   it, a TS fragment type-checks; a JS fragment parses (`node --check`).
// - `<!-- not run: why -->` before a block skips it (say why: it needs a Sentinel, a real network...).
// - `<!-- run with: jest -->` (a CommonJS test file) or `<!-- run with: vitest -->` (an ES module one)
//   before a js block: that runner runs it, and it must pass within 90 s; Jest runs with
//   --detectOpenHandles, and any open handle it reports fails the block. A node:test file is a plain js block (node runs it).
// - Anything else is not a program and is not run: ```sh (commands; each `pnpm <script>` must be a script
//   of package.json and each `node <file>` an existing file), ```text, ```http, ```json.
//
// The counts of blocks run, type-checked and skipped are printed at the end.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { type Block, BUILT, extractBlocks, PACKAGES, ROOT, runDir, startServerBlock } from './support/doc-blocks';
import { type RedisCluster, type RedisServer, startCluster, startServer } from './support/redis';

jest.setTimeout(240_000);

/** node processes at once: the CI box has 2 cores. */
const CONCURRENCY = 3;

function docFiles(): string[] {
  const files = ['README.md'];
  const walk = (dir: string) => {
    if (!existsSync(join(ROOT, dir))) return;
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) files.push(path);
    }
  };
  walk('docs');
  for (const pkg of PACKAGES) if (existsSync(join(ROOT, 'packages', pkg, 'README.md'))) files.push(`packages/${pkg}/README.md`);
  return files;
}

const where = (b: Block) => `${b.file}:${b.line}`;
const isJs = (b: Block) => b.lang === 'js' || b.lang === 'mjs' || b.lang === 'javascript';
const isTs = (b: Block) => b.lang === 'ts' || b.lang === 'typescript';
const needsCluster = (b: Block) => /\b(Cluster|createCluster)\(/.test(b.code);

/** The command a block runs with: node, or its test runner's CLI (a test file of its dir). */
function commandOf(b: Block, file: string, dir: string): string[] {
  if (b.runWith === 'jest')
    return [require.resolve('jest/bin/jest'), '--rootDir', dir, '--runTestsByPath', file, '--detectOpenHandles', '--ci'];
  if (b.runWith === 'vitest') return [join(ROOT, 'node_modules', 'vitest', 'vitest.mjs'), 'run', file, '--root', dir];
  return [file];
}

function runNode(args: string[], env: NodeJS.ProcessEnv, cwd: string, timeoutMs: number): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, args, { cwd, env, timeout: timeoutMs, killSignal: 'SIGKILL' }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
      resolve({ code, out: `${stdout}${stderr}`.slice(-2000) });
    });
  });
}

/** Starts a server block, waits for it to answer `GET /` (below 500), kills it. */
async function runServer(file: string, env: NodeJS.ProcessEnv, cwd: string): Promise<string | undefined> {
  const server = await startServerBlock(file, env, cwd);
  try {
    if (server.status === undefined) return server.error;
    return server.status < 500 ? undefined : `GET / answered ${server.status}:\n${server.output()}`;
  } finally {
    await server.stop();
  }
}

async function pool<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await work(items[next++] as T);
    }),
  );
}

/** The `pnpm <script>` and `node <file>` a sh block names must exist. */
function checkShell(block: Block, scripts: Record<string, string>): string[] {
  const problems: string[] = [];
  const builtins = new Set(['install', 'i', 'add', 'exec', 'dlx', 'run', 'test', 'pack', 'publish', 'build', '-r', '--filter']);
  for (const raw of block.code.split('\n')) {
    const line = raw.replace(/#.*$/, '');
    for (const m of line.matchAll(/(?:^|[;&|(]\s*|\s)pnpm\s+(?:-s\s+)?([\w:.-]+)/g)) {
      const script = m[1] as string;
      if (!(script in scripts) && !builtins.has(script)) problems.push(`pnpm ${script}: no such script in package.json`);
      if ((script === 'test' || script === 'build') && !(script in scripts)) problems.push(`pnpm ${script}: no such script`);
    }
    for (const m of line.matchAll(/(?:^|\s)node\s+((?:\.{0,2}\/)?[\w./-]+\.(?:mjs|cjs|js))/g)) {
      const path = m[1] as string;
      if (!existsSync(join(ROOT, path))) problems.push(`node ${path}: no such file`);
    }
  }
  return problems;
}

const REPO = /^https:\/\/github\.com\/sluice-js\/sluice(?:\/(?:blob|tree)\/main\/([^#]*))?\/?(#.*)?$/;

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchors(path: string): Set<string> {
  const text = readFileSync(path, 'utf8').replace(/^(\s*)(`{3,}|~{3,})[\s\S]*?^\1\2\s*$/gm, '');
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of text.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = slug(m[1] as string);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Why a link from `file` is dead, or undefined. Links to other sites are not followed. */
function checkLink(file: string, link: string): string | undefined {
  let target: string;
  let hash: string | undefined;
  const repo = REPO.exec(link);
  if (repo) {
    target = repo[1] ?? 'README.md';
    hash = repo[2]?.slice(1);
  } else if (/^[a-z][\w+.-]*:/i.test(link)) {
    return undefined;
  } else {
    const [path = '', h] = link.split('#');
    target = path === '' ? file : join(file, '..', path);
    hash = h;
  }
  target = relative(ROOT, join(ROOT, target)).replace(/\/$/, '');
  if (!existsSync(join(ROOT, target))) return `no file ${target}`;
  if (hash === undefined || hash === '' || !target.endsWith('.md')) return undefined;
  if (existsSync(join(ROOT, target, 'README.md'))) target = join(target, 'README.md');
  return anchors(join(ROOT, target)).has(decodeURIComponent(hash)) ? undefined : `no heading #${hash} in ${target}`;
}

describe('the documentation', () => {
  const blocks = docFiles().flatMap((file) => extractBlocks(file, readFileSync(join(ROOT, file), 'utf8')));
  const byName = new Map<string, Block>();
  for (const b of blocks) if (b.name !== undefined) byName.set(`${b.file}#${b.name}`, b);
  const counts = { run: 0, typeChecked: 0, parsed: 0, shellChecked: 0, skipped: 0 };
  let dir: string;
  let redis: RedisServer | undefined;
  let cluster: RedisCluster | undefined;
  let typeCheck: Promise<{ files: Map<string, Block>; output: string }>;

  /**
   * Writes the TS blocks (a fragment appended to its complete block) and type-checks them in one tsc
   * program, in a child process: it runs while the JS blocks do.
   */
  function startTypeCheck(tsDir: string): Promise<{ files: Map<string, Block>; output: string }> {
    mkdirSync(tsDir);
    const files = new Map<string, Block>();
    blocks.forEach((b, i) => {
      if (b.skip !== undefined) return;
      const base = b.fragmentOf !== undefined ? byName.get(b.fragmentOf) : undefined;
      if (!(isTs(b) || (base !== undefined && isTs(base)))) return;
      const code = base !== undefined ? `${base.code}\n// the fragment:\n${b.code}` : b.code;
      writeFileSync(join(tsDir, `block-${i}.ts`), `${code}\nexport {};\n`);
      files.set(`block-${i}.ts`, b);
    });
    const compilerOptions = {
      strict: true,
      noEmit: true,
      skipLibCheck: false,
      target: 'es2022',
      module: 'nodenext',
      moduleResolution: 'nodenext',
      lib: ['es2023'],
      types: ['node'],
      typeRoots: [join(ROOT, 'node_modules', '@types')],
      esModuleInterop: true,
      // NestJS's decorators (docs/nestjs.md) are TypeScript's legacy ones, with their parameter types.
      experimentalDecorators: true,
      emitDecoratorMetadata: true,
    };
    writeFileSync(join(tsDir, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: [...files.keys()] }));
    const tsc = require.resolve('typescript/bin/tsc');
    return new Promise((resolve) => {
      if (files.size === 0) return resolve({ files, output: '' });
      execFile(
        process.execPath,
        [tsc, '-p', 'tsconfig.json', '--pretty', 'false'],
        { cwd: tsDir, maxBuffer: 16 << 20 },
        (_e, stdout, stderr) => resolve({ files, output: `${stdout}${stderr}` }),
      );
    });
  }

  beforeAll(async () => {
    for (const pkg of PACKAGES) {
      if (!existsSync(join(BUILT, pkg, 'dist'))) throw new Error(`${join(BUILT, pkg, 'dist')} is missing: run pnpm build first`);
    }
    dir = runDir();
    typeCheck = startTypeCheck(join(dir, 'ts'));
  });
  afterAll(async () => {
    await redis?.stop();
    await cluster?.stop();
    await typeCheck; // tsc reads the dir: not removed under it (when -t left its test out)
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    const total = blocks.length;
    // console.log: jest shows it from a worker too (a worker's own stdout may be swallowed).
    console.log(
      `docs blocks: ${total} in ${new Set(blocks.map((b) => b.file)).size} files; ${counts.run} run with node, ` +
        `${counts.typeChecked} type-checked, ${counts.parsed} JS fragments parsed, ${counts.shellChecked} sh checked, ` +
        `${counts.skipped} skipped (text, output, not run)`,
    );
  });

  it('reads the convention: names, fragments, blocks not run, fences in lists, test runners', () => {
    const md = [
      '<!-- name: app -->',
      '```js',
      'const app = 1;',
      '```',
      '',
      '<!-- fragment of: docs/x.md#app -->',
      '```ts',
      'app;',
      '```',
      'Text between.',
      '```js',
      'plain();',
      '```',
      '<!-- not run: it needs a network -->',
      '```js',
      'away();',
      '```',
      '- a list item:',
      '  ```sh',
      '  pnpm test',
      '  ```',
      '<!-- run with: vitest -->',
      '```js',
      "test('x', () => {});",
      '```',
    ].join('\n');
    expect(extractBlocks('docs/x.md', md)).toEqual([
      { file: 'docs/x.md', line: 2, lang: 'js', code: 'const app = 1;\n', name: 'app' },
      { file: 'docs/x.md', line: 7, lang: 'ts', code: 'app;\n', fragmentOf: 'docs/x.md#app' },
      { file: 'docs/x.md', line: 11, lang: 'js', code: 'plain();\n' },
      { file: 'docs/x.md', line: 15, lang: 'js', code: 'away();\n', skip: 'it needs a network' },
      { file: 'docs/x.md', line: 19, lang: 'sh', code: 'pnpm test\n' },
      { file: 'docs/x.md', line: 23, lang: 'js', code: "test('x', () => {});\n", runWith: 'vitest' },
    ]);
    expect(checkShell({ file: 'x', line: 1, lang: 'sh', code: 'pnpm stat && node bench/nothing.mjs\n' }, { start: '' })).toEqual([
      'pnpm stat: no such script in package.json',
      'node bench/nothing.mjs: no such file',
    ]);
  });

  it('finds blocks, and every fragment names a complete block that exists', () => {
    expect(blocks.length).toBeGreaterThan(0);
    const dangling = blocks
      .filter((b) => b.fragmentOf !== undefined && !byName.has(b.fragmentOf))
      .map((b) => `${where(b)}: ${b.fragmentOf}`);
    expect(dangling).toEqual([]);
    const unnamedLang = blocks.filter((b) => b.lang === '').map(where);
    expect(unnamedLang).toEqual([]); // every fence says what it holds
  });

  it('links to files and headings that exist', () => {
    const problems: string[] = [];
    for (const file of docFiles()) {
      const text = readFileSync(join(ROOT, file), 'utf8').replace(/^(\s*)(`{3,}|~{3,})[\s\S]*?^\1\2\s*$/gm, '');
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const problem = checkLink(file, m[1] as string);
        if (problem !== undefined) problems.push(`${file}: ${m[1]}: ${problem}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('sh blocks name scripts and files that exist', () => {
    const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    const problems = blocks
      .filter((b) => (b.lang === 'sh' || b.lang === 'bash' || b.lang === 'shell') && b.skip === undefined)
      .flatMap((b) => {
        counts.shellChecked++;
        return checkShell(b, scripts).map((p) => `${where(b)}: ${p}`);
      });
    expect(problems).toEqual([]);
  });

  it('TS blocks type-check under strict without skipLibCheck, in one program', async () => {
    const { files, output } = await typeCheck;
    counts.typeChecked = files.size;
    const problems: string[] = [];
    for (const line of output.split('\n')) {
      const m = /^(block-\d+\.ts)\((\d+),\d+\): error (TS\d+: .*)$/.exec(line);
      if (m) {
        const block = files.get(m[1] as string);
        const at = block ? `${where(block)} (line ${m[2]} of the block${block.fragmentOf ? ' and its fragment' : ''})` : m[1];
        problems.push(`${at}: ${m[3]}`);
      } else if (line.trim() !== '') {
        if (problems.length === 0) problems.push(line);
        else problems[problems.length - 1] += `\n${line}`;
      }
    }
    expect(problems).toEqual([]);
  });

  it('JS blocks run with node against the built packages (servers answer GET /)', async () => {
    const js = blocks.filter((b) => b.skip === undefined && b.fragmentOf === undefined && isJs(b));
    if (js.length > 0) redis = await startServer();
    if (js.some(needsCluster)) cluster = await startCluster();
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      REDIS_URL: redis?.url,
      REDIS_CLUSTER_NODES: cluster
        ?.startupNodes()
        .map((n) => `${n.host}:${n.port}`)
        .join(','),
      NODE_ENV: 'test',
    };
    const failures: string[] = [];
    await pool(js, CONCURRENCY, async (b) => {
      const ext = b.runWith === 'jest' ? '.test.cjs' : b.runWith === 'vitest' ? '.test.mjs' : '.mjs';
      const file = join(dir, `${b.file.replace(/[^\w]/g, '_')}_${b.line}${ext}`);
      writeFileSync(file, b.code);
      counts.run++;
      if (/\.listen\(/.test(b.code)) {
        const error = await runServer(file, env, dir);
        if (error !== undefined) failures.push(`${where(b)}: ${error}`);
      } else {
        // A test runner starts (transforms, workers) in seconds of its own: under load, more than 20.
        const seconds = b.runWith === undefined ? 20 : 90;
        const { code, out } = await runNode(commandOf(b, file, dir), env, dir, seconds * 1000);
        if (code !== 0)
          failures.push(`${where(b)}: exit ${code === null ? `by timeout (${seconds} s): close what the block opens` : code}\n${out}`);
        else if (/open handles? potentially keeping Jest from exiting/.test(out))
          failures.push(`${where(b)}: Jest found open handles\n${out}`);
      }
    });
    expect(failures).toEqual([]);
  });

  it('JS fragments parse appended to their complete block', async () => {
    const fragments = blocks.filter((b) => b.skip === undefined && b.fragmentOf !== undefined && isJs(b));
    const failures: string[] = [];
    await pool(fragments, CONCURRENCY, async (b) => {
      const base = byName.get(b.fragmentOf as string);
      if (base === undefined || isTs(base)) return; // reported above; type-checked with its TS block
      const file = join(dir, `fragment_${b.file.replace(/[^\w]/g, '_')}_${b.line}.mjs`);
      writeFileSync(file, `${base.code}\n${b.code}`);
      counts.parsed++;
      const out = await new Promise<string | undefined>((resolve) =>
        execFile(process.execPath, ['--check', file], (error, _o, stderr) => resolve(error ? stderr : undefined)),
      );
      if (out !== undefined) failures.push(`${where(b)}: ${out}`);
    });
    expect(failures).toEqual([]);
  });

  it('counts what it skipped', () => {
    counts.skipped = blocks.filter((b) => b.skip !== undefined || !(isJs(b) || isTs(b) || ['sh', 'bash', 'shell'].includes(b.lang))).length;
    expect(counts.run + counts.typeChecked + counts.parsed + counts.shellChecked + counts.skipped).toBe(blocks.length);
  });
});
