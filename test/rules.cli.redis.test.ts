// The rules commands of the built `sluice` (pnpm build first) against the Redis an app's limiter uses: what
// the CLI writes is in force in the app's process within refresh + 500 ms; `rules list` and `inspect` show
// it; `rules remove` lifts it; a bad pattern exits 2 and writes nothing; a command names the prefix it
// wrote to, and says so when no limiter of that prefix reads rules from the store.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { createLimiter, createRules, type Rule, redisStore } from '@sluice/core';
import Redis from 'ioredis';
import { type RedisServer, startRedis, uniquePrefix } from './support/redis';
import { msUntil, until } from './support/until';

jest.setTimeout(120_000);

const BIN = join(__dirname, '..', 'packages', 'cli', 'dist', 'esm', 'bin.js');
const REFRESH_MS = 1000;

function sluice(args: string[], url: string): Promise<{ status: number; stdout: string; stderr: string }> {
  const { REDIS_URL: _, ...env } = process.env;
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args, '--redis', url], { env, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ status: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
  });
}

describe('sluice override / deny / allow / rules (the built command) against the Redis of the app', () => {
  let server: RedisServer;
  let client: Redis;
  beforeAll(async () => {
    server = await startRedis();
    client = new Redis(server.url);
    await new Promise((r) => client.once('ready', r));
  });
  afterAll(async () => {
    client.disconnect();
    await server.stop();
  });

  it('round trip: each command is in force in the app within refresh + 500 ms, listed, inspected and removed', async () => {
    const prefix = uniquePrefix();
    const store = redisStore({ client });
    const rules = createRules({ store, prefix, refresh: REFRESH_MS });
    const limiter = createLimiter({ policy: '2/1h', store, prefix, rules, timeout: 2000 });
    const url = server.url;
    const p = ['--prefix', prefix];
    try {
      // Raise one customer's limit. The command's own run (node starting) is not the rule's delay: time from its end.
      let run = await sluice(['override', 'set', 'customer:42', '1000/1h', '--reason', 'ticket 1234', ...p], url);
      expect(run).toMatchObject({ status: 0, stdout: expect.stringMatching(/^override "customer:42": 1000\/1h/) });
      let took = await msUntil(
        Date.now(),
        () => limiter.peek('customer:42'),
        (d) => d.limit === 1000,
        { withinMs: REFRESH_MS + 500 * 3, everyMs: 20, what: 'in force' },
      );
      expect(took).toBeLessThanOrEqual(REFRESH_MS + 500);

      // Block a network, for an hour.
      run = await sluice(['deny', 'add', '198.51.100.0/24', '--ttl', '1h', ...p], url);
      expect(run.status).toBe(0);
      took = await msUntil(
        Date.now(),
        () => limiter.peek('any', { ip: '198.51.100.9' }),
        (d) => d.source === 'rule',
        { withinMs: REFRESH_MS + 500 * 3, everyMs: 20, what: 'in force' },
      );
      expect(took).toBeLessThanOrEqual(REFRESH_MS + 500);

      run = await sluice(['allow', 'add', 'health-check', ...p], url);
      expect(run.status).toBe(0);

      // rules list --json: the three, as the API lists them.
      run = await sluice(['rules', 'list', '--json', ...p], url);
      expect(run.status).toBe(0);
      const listed = JSON.parse(run.stdout) as Rule[];
      expect(listed.map((r) => `${r.kind} ${r.pattern}`).sort()).toEqual([
        'allow health-check',
        'deny 198.51.100.0/24',
        'override customer:42',
      ]);
      expect(listed.find((r) => r.kind === 'override')).toMatchObject({ policy: ['1000/1h'], reason: 'ticket 1234' });
      expect((listed.find((r) => r.kind === 'deny')?.expiresAt ?? 0) - Date.now()).toBeGreaterThan(3_000_000);
      run = await sluice(['rules', 'list', ...p], url);
      expect(run.stdout).toMatch(/^deny {2}"198\.51\.100\.0\/24" {2}until /m);

      // inspect shows the rule in force.
      run = await sluice(['inspect', '198.51.100.77', '--policy', '2/1h', ...p], url);
      expect(run.status).toBe(0);
      expect(JSON.parse(run.stdout)).toMatchObject({ allowed: false, source: 'rule', rule: { kind: 'deny', pattern: '198.51.100.0/24' } });
      run = await sluice(['inspect', 'customer:42', '--policy', '2/1h', ...p], url);
      expect(JSON.parse(run.stdout)).toMatchObject({ limit: 1000, rule: { kind: 'override', pattern: 'customer:42' } });

      // Lift the block; clear the override.
      run = await sluice(['rules', 'remove', 'deny', '198.51.100.0/24', ...p], url);
      expect(run).toMatchObject({ status: 0, stdout: expect.stringMatching(/^removed deny/) });
      took = await msUntil(
        Date.now(),
        () => limiter.peek('any', { ip: '198.51.100.9' }),
        (d) => d.source === 'store',
        { withinMs: REFRESH_MS + 500 * 3, everyMs: 20, what: 'in force' },
      );
      expect(took).toBeLessThanOrEqual(REFRESH_MS + 500);
      run = await sluice(['override', 'clear', 'customer:42', ...p], url);
      expect(run.status).toBe(0);
      await msUntil(
        Date.now(),
        () => limiter.peek('customer:42'),
        (d) => d.limit === 2,
        { withinMs: REFRESH_MS + 500 * 3, everyMs: 20, what: 'in force' },
      );
    } finally {
      await limiter.close();
      await rules.close();
    }
  });

  it('a rule command names the prefix it wrote to, and says so when no limiter reading that prefix is seen in the store', async () => {
    const prefix = uniquePrefix();
    const unread = /^sluice: no limiter reading the rules of prefix "(.+)" has been seen in this store lately: .*--prefix/;
    // The app's limiter uses its own prefix; the operator forgets --prefix: the rule lands under 'sluice'.
    let run = await sluice(['deny', 'add', '127.0.0.1'], server.url);
    expect(run).toMatchObject({ status: 0, stdout: 'deny "127.0.0.1" (prefix "sluice")\n' });
    expect(unread.exec(run.stderr)?.[1]).toBe('sluice');
    run = await sluice(['deny', 'add', '127.0.0.1', '--prefix', prefix], server.url);
    expect(run).toMatchObject({ status: 0, stdout: `deny "127.0.0.1" (prefix "${prefix}")\n` });
    expect(unread.exec(run.stderr)?.[1]).toBe(prefix);
    // `inspect` runs a limiter with the prefix's rules for a moment: it is not an app's, and marks nothing.
    run = await sluice(['inspect', '127.0.0.1', '--policy', '2/1h', '--prefix', prefix], server.url);
    expect(run.status).toBe(0);
    expect(await client.exists(`${prefix}:{#rules}:seen`)).toBe(0);

    // Once a limiter reads the prefix's rules, it is seen (marked at each of its refreshes).
    const store = redisStore({ client });
    const rules = createRules({ store, prefix, refresh: 200 });
    const limiter = createLimiter({ policy: '2/1h', store, prefix, rules, timeout: 2000 });
    try {
      await until(
        () => client.pttl(`${prefix}:{#rules}:seen`),
        (ms) => ms > 0,
        { withinMs: 5000, what: 'the limiter seen' },
      );
      for (const args of [
        ['deny', 'add', '127.0.0.2'],
        ['rules', 'list'],
        ['rules', 'remove', 'deny', '127.0.0.2'],
      ]) {
        run = await sluice([...args, '--prefix', prefix], server.url);
        expect([args.join(' '), run.status, run.stderr]).toEqual([args.join(' '), 0, '']);
      }
      expect((await limiter.peek('127.0.0.1')).source).toBe('rule');
    } finally {
      await limiter.close();
      await rules.close();
    }
  });

  it('a bad pattern, policy or --ttl exits 2 and writes nothing; a store that is down exits 1', async () => {
    const prefix = uniquePrefix();
    const p = ['--prefix', prefix];
    for (const args of [
      ['deny', 'add', '10.0.0.1', '10.0.0.0/33'],
      ['override', 'set', 'k', '-5/m'],
      ['allow', 'add', 'k', '--ttl', 'soon'],
      ['rules', 'remove', 'block', 'k'],
      ['deny', 'remove', 'k'],
    ]) {
      const run = await sluice([...args, ...p], server.url);
      expect([args.join(' '), run.status]).toEqual([args.join(' '), 2]);
      expect(run.stderr).toMatch(/^sluice: .+\n$/);
    }
    expect(await client.exists(`${prefix}:{#rules}:set`)).toBe(0);
    const down = await sluice(['deny', 'add', 'k', ...p, '--timeout', '2s'], 'redis://127.0.0.1:1');
    expect(down.status).toBe(1);
  });
});
