// What a user installs: every package packed by scripts/pack-packages.mjs (what `pnpm pack:all` runs, here
// on the build that `pnpm test` makes first), its tarball installed with plain `npm install` into fresh npm
// projects next to ioredis 6, next to ioredis 5, and with no Redis client. In each, an ES module app, a
// CommonJS app and strict TypeScript (no skipLibCheck; NodeNext as ESM and as CJS, and node10) must work.
// And a new app installed with the Express line the script prints, as the README says; and a tiny
// project per test runner (Jest, Vitest, node:test) whose test of an app's limits passes under fake
// timers with nothing left open. Fixtures: test/consumers/packed/, test/consumers/runners/.
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { type RedisServer, startRedis } from './support/redis';

const root = resolve(__dirname, '..');
const fixtures = join(__dirname, 'consumers', 'packed');
const PACKAGES = ['core', 'express', 'fastify', 'koa', 'hono', 'graphql', 'nestjs'];
const tsc = require.resolve('typescript/bin/tsc', { paths: [root] });

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end (or kills it after `timeout` ms); never rejects, so results can be awaited in any order. */
function run(file: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env, timeout = 0): Promise<Result> {
  return new Promise((done) => {
    execFile(file, args, { cwd, env, timeout, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      done({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

function ok(result: Result, what: string): Result {
  if (result.code !== 0) throw new Error(`${what} exited with ${result.code}\n${result.stdout}\n${result.stderr}`);
  return result;
}

/** At most `n` of the CPU-bound checks at once, so that twelve of them do not thrash two cores. */
function pool(n: number) {
  let active = 0;
  const waiting: Array<() => void> = [];
  return async <T>(job: () => Promise<T>): Promise<T> => {
    if (active >= n) await new Promise<void>((r) => waiting.push(r));
    active++;
    try {
      return await job();
    } finally {
      active--;
      waiting.shift()?.();
    }
  };
}

/** The version of a package the repository itself is tested with, so a consumer project installs the same. */
const repoVersion = (name: string): string => JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')).version;

// pnpm passes its settings to scripts as npm_config_* variables; the consumer's `npm install` must see none.
const npmEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)));

interface Project {
  name: string;
  /** The ioredis range the project depends on, or none: the app has no Redis client. */
  ioredis?: string;
  /** The major version of ioredis it must end up with. */
  major?: number;
  /** Dev dependencies of its own, beyond the framework types every project has. */
  types?: Record<string, string>;
  /**
   * Module settings its strict TypeScript check runs under. NodeNext reads the ESM and CJS declarations;
   * node10 (old CommonJS setups) reads `types` and typesVersions. Each tsc run checks every library anew
   * (about 5 s of CPU), so node10 runs in one project, the one with no Redis client.
   */
  tsc: Array<'nodenext' | 'node10'>;
}

const PROJECTS: Project[] = [
  // ioredis 6's own declarations import redis-errors, which ships no types: without skipLibCheck an app that
  // imports ioredis 6 needs @types/redis-errors (the README says so). The range is ioredis 6's own devDependency.
  { name: 'ioredis-6', ioredis: '^6.0.0', major: 6, types: { '@types/redis-errors': '^1.2.1' }, tsc: ['nodenext'] },
  { name: 'ioredis-5', ioredis: repoVersion('ioredis'), major: 5, tsc: ['nodenext'] },
  { name: 'no-redis-client', tsc: ['nodenext', 'node10'] },
];

/** A project whose test of its app's limits runs under a test runner's fake timers (test/consumers/runners/). */
interface RunnerProject {
  name: string;
  /** Its test file, and the adapter its app uses. */
  file: string;
  adapter: 'express' | 'fastify';
  /** What it installs beside the packed packages and ioredis, at the repository's versions. */
  dependencies: string[];
  /** More of its package.json. */
  manifest?: Record<string, unknown>;
  /** node's arguments that run its tests. */
  args: string[];
}

const RUNNERS: RunnerProject[] = [
  {
    name: 'jest',
    file: 'jest.test.cjs',
    adapter: 'express',
    dependencies: ['express', 'supertest', 'jest'],
    // Every timer faked from the start; process.nextTick left alone, for ioredis to connect on (docs/testing.md).
    manifest: { jest: { fakeTimers: { enableGlobally: true, doNotFake: ['nextTick'] } } },
    args: ['node_modules/jest/bin/jest.js', '--ci', '--detectOpenHandles'],
  },
  {
    name: 'vitest',
    file: 'vitest.test.mjs',
    adapter: 'fastify',
    dependencies: ['fastify', 'vitest'],
    args: ['node_modules/vitest/vitest.mjs', 'run'],
  },
  { name: 'node-test', file: 'node-test.test.mjs', adapter: 'fastify', dependencies: ['fastify'], args: ['--test'] },
];
/** Each runner project's test run (after its install). */
const runnerRuns = new Map<string, Promise<Result>>();

let work: string;
let redis: RedisServer;
/** A new app that ran the printed Express line, then readme-app.mjs; then the printed CLI line, then `npx sluice`. */
let readmeApp: Promise<{ install: Result; app?: Result; cliInstall?: Result; cli?: Result }>;
const tarballs = new Map<string, string>();
const installs = new Map<string, Promise<Result>>();
const checks = new Map<string, Promise<Result>>();

/** Packs every package into `into` as `pnpm pack:all` does, on the build there is (pnpm test builds first); resolves to what it printed. */
async function packAll(into: string): Promise<string> {
  const out = ok(await run(process.execPath, [join(root, 'scripts', 'pack-packages.mjs'), '--into', into], root, npmEnv), 'pack-packages');
  for (const file of readdirSync(into)) {
    const pkg = /^sluice-(.+)-\d+\.\d+\.\d+.*\.tgz$/.exec(file)?.[1];
    if (pkg !== undefined) tarballs.set(pkg, join(into, file));
  }
  return out.stdout;
}

/** The line the pack script prints under `# heading`. */
function printedLine(printed: string, heading: string): string {
  const lines = printed.split('\n');
  const line = lines[lines.indexOf(`# ${heading}`) + 1];
  if (line === undefined || !line.startsWith('npm install ')) throw new Error(`no npm install line under # ${heading} in:\n${printed}`);
  return line;
}

function writeProject(project: Project): string {
  const dir = join(work, project.name);
  mkdirSync(dir);
  const dependencies: Record<string, string> = {};
  for (const pkg of PACKAGES) dependencies[`@sluice/${pkg}`] = `file:${tarballs.get(pkg)}`;
  const frameworks = ['express', 'fastify', 'koa', 'hono', '@hono/node-server'];
  const nest = ['@nestjs/common', '@nestjs/core', '@nestjs/platform-express', 'reflect-metadata', 'rxjs'];
  for (const name of [...frameworks, ...nest]) dependencies[name] = repoVersion(name);
  if (project.ioredis) dependencies.ioredis = project.ioredis;
  const devDependencies = {
    ...Object.fromEntries(['@types/express', '@types/koa', '@types/node'].map((name) => [name, repoVersion(name)])),
    ...project.types,
  };
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name: `consumer-${project.name}`, private: true, dependencies, devDependencies }),
  );
  for (const file of ['exercise.cjs', 'esm.mjs', 'cjs.cjs']) cpSync(join(fixtures, file), join(dir, file));
  // One TypeScript source in three folders: the nearest package.json says how NodeNext reads it.
  const folders: Array<[string, string]> = [
    ['esm', 'module'],
    ['cjs', 'commonjs'],
    ['node10', 'commonjs'],
  ];
  for (const [sub, type] of folders) {
    mkdirSync(join(dir, sub));
    writeFileSync(join(dir, sub, 'package.json'), JSON.stringify({ type }));
    for (const file of tsSources(project)) cpSync(join(fixtures, file), join(dir, sub, file));
  }
  return dir;
}

const tsSources = (project: Project) => (project.ioredis ? ['types.ts', 'redis-types.ts'] : ['types.ts']);
// A Node app's settings (no DOM lib), strict, and the libraries' declarations checked too.
const strict = [
  '--noEmit',
  '--strict',
  '--skipLibCheck',
  'false',
  '--esModuleInterop',
  '--target',
  'es2022',
  '--lib',
  'es2022',
  '--types',
  'node',
];
const TSC_ARGS = {
  nodenext: (project: Project) => [
    '--module',
    'nodenext',
    '--moduleResolution',
    'nodenext',
    ...['esm', 'cjs'].flatMap((sub) => tsSources(project).map((f) => `${sub}/${f}`)),
  ],
  node10: (project: Project) => ['--module', 'commonjs', '--moduleResolution', 'node10', ...tsSources(project).map((f) => `node10/${f}`)],
};

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'sluice-packages-'));
  const into = join(work, 'tarballs');
  mkdirSync(into);
  const started = startRedis();
  const printed = await packAll(into);
  redis = await started;
  const readme = join(work, 'readme-app');
  mkdirSync(readme);
  writeFileSync(join(readme, 'package.json'), JSON.stringify({ name: 'readme-app', private: true }));
  cpSync(join(fixtures, 'readme-app.mjs'), join(readme, 'app.mjs'));
  // The lines as printed; the flags only let npm reuse its cache and stay quiet.
  const npmLine = (heading: string) =>
    run('sh', ['-c', `${printedLine(printed, heading)} --prefer-offline --no-audit --no-fund`], readme, npmEnv);
  readmeApp = (async () => {
    const install = await npmLine('Express');
    if (install.code !== 0) return { install };
    const app = await run(process.execPath, ['app.mjs'], readme, process.env, 60_000);
    const cliInstall = await npmLine('the sluice command');
    if (cliInstall.code !== 0) return { install, app, cliInstall };
    return { install, app, cliInstall, cli: await run('npx', ['--no-install', 'sluice', '--version'], readme, npmEnv, 60_000) };
  })();
  const cpu = pool(Math.max(2, availableParallelism()));
  for (const runner of RUNNERS) {
    const dir = join(work, `runner-${runner.name}`);
    mkdirSync(dir);
    const dependencies: Record<string, string> = { ioredis: repoVersion('ioredis') };
    for (const pkg of ['core', runner.adapter]) dependencies[`@sluice/${pkg}`] = `file:${tarballs.get(pkg)}`;
    for (const name of runner.dependencies) dependencies[name] = repoVersion(name);
    writeFileSync(
      join(dir, 'package.json'),
      JSON.stringify({ name: `runner-${runner.name}`, private: true, dependencies, ...runner.manifest }),
    );
    cpSync(join(__dirname, 'consumers', 'runners', runner.file), join(dir, runner.file));
    const install = run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund'], dir, npmEnv);
    // A run that does not end on its own within 120 s is killed: something was left open.
    const env = { ...npmEnv, REDIS_URL: redis.url, CI: 'true', NO_COLOR: '1' };
    runnerRuns.set(
      runner.name,
      install.then((i) => (i.code === 0 ? cpu(() => run(process.execPath, runner.args, dir, env, 120_000)) : i)),
    );
  }
  for (const project of PROJECTS) {
    const dir = writeProject(project);
    // Plain `npm install`; --prefer-offline only lets it reuse the npm cache without asking the registry again.
    const install = run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund'], dir, npmEnv);
    installs.set(project.name, install);
    const after = (name: string, file: string, args: string[], env: NodeJS.ProcessEnv = process.env) =>
      checks.set(
        `${project.name} ${name}`,
        install.then((i) => (i.code === 0 ? cpu(() => run(file, args, dir, env)) : i)),
      );
    const env = { ...process.env, REDIS_URL: project.ioredis ? redis.url : '' };
    after('esm', process.execPath, ['esm.mjs'], env);
    after('cjs', process.execPath, ['cjs.cjs'], env);
    for (const mode of project.tsc) after(mode, process.execPath, [tsc, ...strict, ...TSC_ARGS[mode](project)]);
  }
}, 600_000);

afterAll(async () => {
  await Promise.all([...checks.values(), ...installs.values(), ...runnerRuns.values(), readmeApp]);
  await redis?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
}, 600_000);

function mapsUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.map'))
    .map((f) => join(dir, f));
}

describe('the packed packages', () => {
  const installed = (pkg: string) => join(work, 'no-redis-client', 'node_modules', '@sluice', pkg);

  beforeAll(async () => {
    ok(await installs.get('no-redis-client')!, 'npm install (no-redis-client)');
  }, 600_000);

  it.each(PACKAGES)('@sluice/%s ships a LICENSE, a README and the metadata a registry page shows', (pkg) => {
    const dir = installed(pkg);
    expect(readFileSync(join(dir, 'LICENSE'), 'utf8')).toBe(readFileSync(join(root, 'LICENSE'), 'utf8'));
    expect(readFileSync(join(dir, 'README.md'), 'utf8')).toContain(`# @sluice/${pkg}`);
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    expect(manifest).toMatchObject({
      name: `@sluice/${pkg}`,
      license: 'MIT',
      repository: { type: 'git', directory: `packages/${pkg}` },
      engines: { node: expect.any(String) },
    });
    for (const field of ['description', 'author']) expect(typeof manifest[field]).toBe('string');
    // The package's own page, not another package's.
    expect(manifest.homepage).toMatch(new RegExp(`/packages/${pkg}#readme$`));
    expect(typeof manifest.bugs?.url).toBe('string');
    expect(manifest.keywords.length).toBeGreaterThan(0);
    // pnpm pack turned workspace:* into the version, or npm could not have installed it.
    expect(JSON.stringify(manifest.dependencies ?? {})).not.toContain('workspace:');
  });

  it.each(PACKAGES)('@sluice/%s has source maps whose every source is in the package', (pkg) => {
    const dir = installed(pkg);
    const maps = mapsUnder(join(dir, 'dist'));
    expect(maps.length).toBeGreaterThan(0);
    const missing: string[] = [];
    for (const map of maps) {
      const { sources, sourcesContent, sourceRoot = '' } = JSON.parse(readFileSync(map, 'utf8'));
      expect(sources.length).toBeGreaterThan(0);
      sources.forEach((source: string, i: number) => {
        const file = resolve(dirname(map), sourceRoot, source);
        if (typeof sourcesContent?.[i] !== 'string' && (!existsSync(file) || relative(dir, file).startsWith('..'))) {
          missing.push(`${relative(dir, map)} -> ${source}`);
        }
      });
    }
    expect(missing).toEqual([]);
  });

  it('the adapters use the one installed @sluice/core, not a copy of their own', () => {
    const lock = JSON.parse(readFileSync(join(work, 'no-redis-client', 'package-lock.json'), 'utf8'));
    const cores = Object.keys(lock.packages).filter((path) => path.endsWith('node_modules/@sluice/core'));
    expect(cores).toEqual(['node_modules/@sluice/core']);
    expect(lock.packages['node_modules/@sluice/core'].resolved).toMatch(/^file:/);
  });
});

describe('installed the way the README says: `pnpm pack:all`, then the line it prints', () => {
  it('a new Express app installs with the printed Express line and answers 200, then 429', async () => {
    const { install, app } = await readmeApp;
    ok(install, 'the printed npm install line');
    expect(JSON.parse(ok(app as Result, 'node app.mjs').stdout)).toEqual([200, 429]);
  }, 600_000);

  it('the printed CLI line installs the `sluice` command: npx sluice --version', async () => {
    const { cliInstall, cli } = await readmeApp;
    ok(cliInstall as Result, 'the printed npm install line of the CLI');
    expect(ok(cli as Result, 'npx sluice --version').stdout.trim()).toBe(
      JSON.parse(readFileSync(join(root, 'packages', 'cli', 'package.json'), 'utf8')).version,
    );
  }, 600_000);
});

describe.each(PROJECTS)('installed with npm into a fresh project: $name', (project) => {
  const dir = () => join(work, project.name);
  const check = (name: string) => checks.get(`${project.name} ${name}`)!;

  beforeAll(async () => {
    ok(await installs.get(project.name)!, `npm install (${project.name})`);
  }, 600_000);

  it(project.ioredis ? `has ioredis ${project.major}` : 'has no Redis client, and npm did not add one', () => {
    const manifest = join(dir(), 'node_modules', 'ioredis', 'package.json');
    if (project.major === undefined) expect(existsSync(manifest)).toBe(false);
    else expect(Number(JSON.parse(readFileSync(manifest, 'utf8')).version.split('.')[0])).toBe(project.major);
  });

  it.each([
    ['esm', 'an ES module app imports'],
    ['cjs', 'a CommonJS app requires'],
  ])(
    '%s: %s every package from its own build, limits, and answers 429 in Express, Fastify, Koa, Hono and NestJS; builds the GraphQL plugins',
    async (build) => {
      const out = JSON.parse(ok(await check(build), `node ${build}`).stdout);
      for (const [specifier, file] of Object.entries(out.resolved as Record<string, string>)) {
        expect(relative(dir(), file).split(/[\\/]/).slice(0, 5)).toEqual([
          'node_modules',
          ...specifier.split('/').slice(0, 2),
          'dist',
          build,
        ]);
      }
      expect(out.memory).toEqual([true, true, false]);
      expect(out.refused).toEqual({ sluiceError: true, code: 'ERR_SLUICE_OPTION' });
      expect(out.exports).toEqual(Array(10).fill('function'));
      for (const framework of ['express', 'fastify', 'koa', 'hono', 'nestjs']) {
        expect(out[framework]).toEqual({ statuses: [200, 429], policy: '"1-per-60s";q=1;w=60' });
      }
      expect(out.graphql).toEqual({ plugins: ['function', 'function', 'function'], directives: true, refused: 'ERR_SLUICE_OPTION' });
      if (project.ioredis) expect(out.redis).toEqual({ allowed: [true, false], sources: ['store', 'store'] });
      else expect(out.redis).toBeUndefined();
    },
    600_000,
  );

  it.each(project.tsc)(
    'strict TypeScript without skipLibCheck: %s',
    async (mode) => {
      const result = await check(mode);
      expect(`${result.stdout}${result.stderr}`).toBe('');
      expect(result.code).toBe(0);
    },
    600_000,
  );

  // With the tarballs installed and no client, a plain `npm i ioredis@6` adds it in place, and finishes. It
  // runs after every other test of the file that reads this project, because it changes it.
  if (project.major === undefined) {
    it('then adds ioredis 6 in place with a plain `npm install ioredis@6`', async () => {
      await Promise.all([...checks].filter(([name]) => name.startsWith(`${project.name} `)).map(([, result]) => result));
      const args = ['install', '--prefer-offline', '--no-audit', '--no-fund', 'ioredis@^6.0.0'];
      // Minutes on the busiest machine; a resolver that loops is killed here rather than at jest's timeout.
      ok(await run('npm', args, dir(), npmEnv, 300_000), 'npm install ioredis@6');
      const manifest = JSON.parse(readFileSync(join(dir(), 'node_modules', 'ioredis', 'package.json'), 'utf8'));
      expect(Number(manifest.version.split('.')[0])).toBe(6);
    }, 600_000);
  }
});

describe("a test of an app's limits in a fresh project per test runner, under its fake timers, on Redis", () => {
  it.each(RUNNERS.map((r) => [r.name]))(
    '%s: passes, ends on its own, and leaves nothing open',
    async (name) => {
      const result = ok(await (runnerRuns.get(name) as Promise<Result>), `${name} in runner-${name}`);
      const out = `${result.stdout}${result.stderr}`;
      expect(out).not.toMatch(/open handles? potentially keeping Jest from exiting|did not exit one second|close timed out/);
      if (name === 'jest') expect(out).toMatch(/Tests:\s+3 passed, 3 total/);
      if (name === 'vitest') expect(out).toMatch(/Tests\s+2 passed \(2\)/);
      if (name === 'node-test') expect(out).toMatch(/# pass 2\n# fail 0/);
    },
    600_000,
  );
});
