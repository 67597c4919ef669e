// The built `sluice` command (pnpm build first) against a real Redis: on keys written by a limiter and by each
// adapter (Express, Fastify, Koa on redisStore), and its exit statuses.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { createLimiter, type Decision, redisStore } from '@sluice/core';
import Redis from 'ioredis';
import { harnesses } from './support/http';
import { type RedisServer, startServer, uniquePrefix } from './support/redis';

// Each case starts node a few times: on a loaded machine a start alone can take seconds.
jest.setTimeout(120_000);

const BIN = join(__dirname, '..', 'packages', 'cli', 'dist', 'esm', 'bin.js');

interface Run {
  status: number;
  stdout: string;
  stderr: string;
}

function sluice(args: string[], env: Record<string, string> = {}, killAfter = 60_000): Promise<Run> {
  const { REDIS_URL: _, ...inherited } = process.env;
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: { ...inherited, ...env }, timeout: killAfter }, (error, stdout, stderr) => {
      const status = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
      resolve({ status, stdout, stderr });
    });
  });
}

/** A peek's Decision; on stderr nothing, or the one line that says no counter was found (a full bucket). */
async function inspect(args: string[]): Promise<Decision> {
  const run = await sluice(['inspect', ...args]);
  expect(run.status).toBe(0);
  expect(run.stderr).toMatch(/^(sluice: no counter found for [^\n]+\n)?$/);
  return JSON.parse(run.stdout) as Decision;
}

describe('sluice (the built command)', () => {
  let server: RedisServer;
  let client: Redis;
  beforeAll(async () => {
    server = await startServer();
    client = new Redis({ port: server.port });
    await new Promise((r) => client.once('ready', r)); // the store refuses calls made before the first connect
  });
  afterAll(async () => {
    client.disconnect();
    await server.stop();
  });

  // Hour-long windows in these tests: a node start takes seconds on a busy machine, and a minute-long one
  // would refill between a charge and the inspect that counts it.
  it('inspects a limiter key with several policies (a peek: twice the same), and resets it', async () => {
    const prefix = uniquePrefix();
    const policies = ['3/1h', '{"limit":100,"window":"1h","algorithm":"sliding-window"}'];
    const limiter = createLimiter({
      prefix,
      policy: policies.map((p) => (p.startsWith('{') ? JSON.parse(p) : p)),
      store: redisStore({ client }),
    });
    await limiter.consume('user:42');
    await limiter.consume('user:42', { cost: 1 });
    const args = ['user:42', '--redis', server.url, '--prefix', prefix, ...policies.flatMap((p) => ['--policy', p])];
    const first = await inspect(args);
    expect(first).toMatchObject({ allowed: true, limit: 3, remaining: 1, policy: '3-per-3600s', source: 'store' });
    expect(first.policies.map((p) => [p.name, p.remaining])).toEqual([
      ['3-per-3600s', 1],
      ['100-per-3600s', 98],
    ]);
    expect((await inspect(args)).remaining).toBe(1);
    const reset = await sluice(['reset', ...args]);
    expect(reset).toMatchObject({ status: 0, stderr: '' });
    expect(reset.stdout).toContain('user:42');
    expect((await inspect(args)).remaining).toBe(3);
    expect((await limiter.consume('user:42')).remaining).toBe(2);
    await limiter.close();
  });

  it('with --shards, inspects and resets every shard of a split key', async () => {
    const prefix = uniquePrefix();
    const limiter = createLimiter({ prefix, policy: '40/1h', shards: 4, store: redisStore({ client }) });
    for (let i = 0; i < 24; i++) await limiter.consume('hot');
    expect((await client.keys(`${prefix}:*`)).length).toBeGreaterThan(1);
    const args = ['hot', '--redis', server.url, '--prefix', prefix, '--policy', '40/1h'];
    // Without --shards it reads another counter, one nobody wrote.
    expect((await inspect(args)).remaining).toBe(40);
    expect((await inspect([...args, '--shards', '4'])).remaining).toBeLessThan(40);
    expect(await sluice(['reset', ...args, '--shards', '4'])).toMatchObject({ status: 0, stderr: '' });
    expect(await client.keys(`${prefix}:*`)).toEqual([]);
    await limiter.close();
  });

  // Each adapter's counters: app-level under its mount's scope ('*' at an Express or Koa app's root), route-level under 'POST /login'.
  const appScope = { express: '*', fastify: 'GET /items', koa: '*', hono: '*' } as const;
  const appCount = { express: 4, fastify: 2, koa: 4, hono: 4 } as const; // Fastify's route options replace the app's
  describe.each(harnesses)('keys written by $name', (harness) => {
    it("inspects the app-level counter (--scope '*' at an app's root) and the route counters of a client IP, and a reset lets it in again", async () => {
      const [appPrefix, routePrefix] = [uniquePrefix(), uniquePrefix()];
      const store = redisStore({ client });
      const app = await harness.start({
        app: { policy: '10/1h', store, prefix: appPrefix },
        routes: [
          { method: 'GET', path: '/items' },
          { method: 'POST', path: '/login', options: { policy: '3/1h', store, prefix: routePrefix } },
        ],
      });
      try {
        const send = (method: string, path: string) => fetch(`${app.url}${path}`, { method }).then((r) => r.status);
        expect([await send('GET', '/items'), await send('GET', '/items')]).toEqual([200, 200]);
        expect([await send('POST', '/login'), await send('POST', '/login')]).toEqual([200, 200]);

        const common = ['127.0.0.1', '--ip', '--redis', server.url];
        const atApp = await inspect([...common, '--prefix', appPrefix, '--policy', '10/1h', '--scope', appScope[harness.name]]);
        expect(atApp).toMatchObject({ source: 'store', remaining: 10 - appCount[harness.name] });
        const route = [...common, '--prefix', routePrefix, '--policy', '3/1h', '--scope', 'POST /login'];
        expect(await inspect(route)).toMatchObject({ source: 'store', allowed: true, remaining: 1 });
        // Another client, or another scope, is another counter: untouched.
        expect(
          (await inspect(['203.0.113.9', ...common.slice(1), '--prefix', routePrefix, '--policy', '3/1h', '--scope', 'POST /login']))
            .remaining,
        ).toBe(3);
        expect((await inspect([...common, '--prefix', routePrefix, '--policy', '3/1h', '--scope', 'POST /logout'])).remaining).toBe(3);

        expect(await send('POST', '/login')).toBe(200);
        expect((await inspect(route)).remaining).toBe(0);
        expect(await sluice(['reset', ...route])).toMatchObject({ status: 0, stderr: '' });
        expect((await inspect(route)).remaining).toBe(3);
        // Without the reset this one would be the fourth of 3 a minute.
        expect(await send('POST', '/login')).toBe(200);
      } finally {
        await app.close();
      }
    });
  });

  // A mistyped scope must not read as a full bucket: inspect says that no counter was found.
  it('inspect says when no counter exists for the key, scope, prefix and policies given', async () => {
    const prefix = uniquePrefix();
    const limiter = createLimiter({ prefix, policy: ['3/1h', '1000/day'], store: redisStore({ client }) });
    await limiter.consume('203.0.113.7', { scope: 'POST /login' });
    const args = ['203.0.113.7', '--redis', server.url, '--prefix', prefix, '--policy', '3/1h', '--policy', '1000/day'];
    const found = await sluice(['inspect', ...args, '--scope', 'POST /login']);
    expect(found).toMatchObject({ status: 0, stderr: '' });
    expect(JSON.parse(found.stdout)).toMatchObject({ source: 'store', remaining: 2 });
    for (const [flags, scope] of [
      [['--scope', 'POST /logon'], ', scope "POST /logon"'],
      [[], ''],
    ] as const) {
      const missed = await sluice(['inspect', ...args, ...flags]);
      expect(missed.status).toBe(0);
      expect(JSON.parse(missed.stdout)).toMatchObject({ source: 'store', remaining: 3 });
      expect(missed.stderr).toBe(
        `sluice: no counter found for "203.0.113.7" (prefix ${JSON.stringify(prefix)}${scope}): showing a full bucket. ` +
          'If the app has limited this client, check the key, --scope, --prefix and --policy against it\n',
      );
    }
    await limiter.close();
  });

  it('exits 2 on a bad argument with one line on stderr, never echoing the Redis URL', async () => {
    const url = 'redis://admin:hunter2@127.0.0.1:1';
    const bad = [
      ['inspect', 'k', '--redis', url],
      ['inspect', '--redis', url, '--policy', '5/1m'],
      ['frob', 'k', '--redis', url, '--policy', '5/1m'],
      ['inspect', 'k', '--redis', url, '--policy', '5/fortnight'],
      ['inspect', 'k', '--redis', url, '--policy', '{"limit":'],
      ['inspect', 'k', '--redis', url, '--policy', '5/1m', '--prefix', 'has space'],
      ['inspect', 'k', '--redis', 'http://admin:hunter2@127.0.0.1:1', '--policy', '5/1m'],
      ['inspect', 'k', '--policy', '5/1m'],
      ['inspect', 'k', '--redis', url, '--policy', '5/1m', '--bogus'],
      ['inspect', 'not an ip', '--ip', '--redis', url, '--policy', '5/1m'],
      ['inspect', 'k', '--redis', url, '--policy', '5/1m', '--shards', 'many'],
    ];
    // Three at a time: a dozen node starts in a row is slow on a busy machine.
    const runs: Run[] = [];
    for (let i = 0; i < bad.length; i += 3) runs.push(...(await Promise.all(bad.slice(i, i + 3).map((args) => sluice(args)))));
    bad.forEach((args, i) => {
      const run = runs[i] as Run;
      expect({ args, status: run.status, stdout: run.stdout }).toEqual({ args, status: 2, stdout: '' });
      expect(run.stderr).toMatch(/^sluice: [^\n]+\n$/);
      expect(run.stderr).not.toContain('hunter2');
    });
  });

  it('exits 1 when the store fails, naming the cause and not the password', async () => {
    const dead = await startServer();
    await dead.kill();
    const url = `redis://admin:hunter2@127.0.0.1:${dead.port}`;
    for (const command of ['inspect', 'reset']) {
      const run = await sluice([command, 'k', '--policy', '5/1m'], { REDIS_URL: url });
      expect(run).toMatchObject({ status: 1, stdout: '' });
      expect(run.stderr).toMatch(/^sluice: the store failed: .*ECONNREFUSED.*\n$/);
      expect(run.stderr).not.toContain('hunter2');
    }
    await dead.stop();
  });

  describe('the CLI never hangs', () => {
    // A server that accepts connections and never answers, nor closes its side when the client closes its own.
    let silent: Server;
    let port: number;
    const held: Socket[] = [];
    beforeAll(async () => {
      silent = createServer({ allowHalfOpen: true }, (socket) => {
        held.push(socket);
        socket.on('error', () => {});
      });
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      port = (silent.address() as { port: number }).port;
    });
    afterAll(async () => {
      for (const socket of held) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    });

    /** The run, and how long it took; killed after 30 s (a hang). */
    async function timed(args: string[]): Promise<Run & { ms: number }> {
      const started = Date.now();
      const run = await sluice(args, {}, 30_000);
      return { ...run, ms: Date.now() - started };
    }

    it('gives up after --timeout on a server that never answers: exit 1, one line, and the process ends', async () => {
      // What starting node costs on this machine now, so that the bound below measures the CLI, not the load.
      const start = (await timed(['--version'])).ms;
      const url = `redis://admin:hunter2@127.0.0.1:${port}`;
      for (const args of [
        ['inspect', 'k', '--policy', '5/1m', '--redis', url, '--timeout', '500ms'],
        ['reset', 'k', '--policy', '5/1m', '--redis', url, '--timeout', '500'],
        ['inspect', 'k', '--policy', '5/1m', '--redis', url, '--timeout', '0.5s', '--cluster'],
        ['reset', 'k', '--policy', '5/1m', '--redis', url, '--timeout', '500ms', '--cluster'],
      ]) {
        const run = await timed(args);
        const node = args.includes('--cluster') ? 'the cluster node ' : '';
        expect({ args, status: run.status, stdout: run.stdout, stderr: run.stderr }).toEqual({
          args,
          status: 1,
          stdout: '',
          stderr: `sluice: no answer from ${node}redis://127.0.0.1:${port} within 500 ms\n`,
        });
        // 500 ms, node's start, and 5 s of slack for a busy 2-core machine; a hang is killed at 30 s.
        expect(run.ms).toBeLessThan(start + 500 + 5000);
      }
    });

    it('takes --timeout as a duration, exits 2 on a bad one, and answers within it when Redis does', async () => {
      const common = ['inspect', 'k', '--policy', '5/1m', '--redis', server.url];
      for (const timeout of ['soon', '0', '0ms', '-1', '', '25d', '5 seconds']) {
        const run = await sluice([...common, `--timeout=${timeout}`]);
        expect({ timeout, status: run.status, stdout: run.stdout }).toEqual({ timeout, status: 2, stdout: '' });
        expect(run.stderr).toMatch(/^sluice: --timeout must be [^\n]+\n$/);
      }
      for (const timeout of ['10s', '10000', '1m']) {
        const run = await sluice([...common, '--timeout', timeout]);
        expect(run).toMatchObject({ status: 0, stderr: expect.stringMatching(/^sluice: no counter found for "k"/) });
        expect(JSON.parse(run.stdout)).toMatchObject({ source: 'store', remaining: 5 });
      }
    });

    it('--version and -v print the version of @sluice/cli', async () => {
      const { version } = JSON.parse(readFileSync(join(__dirname, '..', 'packages', 'cli', 'package.json'), 'utf8')) as { version: string };
      for (const flag of ['--version', '-v']) {
        expect(await sluice([flag])).toEqual({ status: 0, stdout: `${version}\n`, stderr: '' });
      }
      const help = await sluice(['--help']);
      expect(help.stdout).toContain('--timeout');
      expect(help.stdout).toContain('--version');
    });
  });

  it('reads REDIS_URL, and --help prints the usage and exits 0', async () => {
    const run = await sluice(['inspect', 'fresh', '--policy', '5/1m'], { REDIS_URL: server.url });
    expect(run.status).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ allowed: true, remaining: 5, source: 'store' });
    const help = await sluice(['--help']);
    expect(help).toMatchObject({ status: 0, stderr: '' });
    expect(help.stdout).toMatch(/^Usage: sluice <inspect\|reset> KEY/);
    for (const option of ['--redis', '--prefix', '--policy', '--scope']) expect(help.stdout).toContain(option);
  });
});
