// adjust, idempotent ids and concurrent policies against real Redis (standalone and Cluster): the Lua
// and the memory store decide the same on random sequences; ids charge once across clients; slots are
// taken atomically, given back, freed by their lease (a killed process's too) and counted locally
// while the store is down.
import { type ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import { createLimiter, type PolicyInput, redisStore } from '@sluice/core';
import fc from 'fast-check';
import Redis, { Cluster } from 'ioredis';
import { differential } from './support/differential';
import { freePort, type RedisCluster, sleep, startCluster, type startRedis, uniquePrefix } from './support/redis';
import { startRedisWithClient, stopRedisWithClient } from './support/redis-client';
import { until } from './support/until';

const ALGORITHMS = ['token-bucket', 'fixed-window', 'sliding-window', 'sliding-log'] as const;

describe('adjust, ids and concurrent slots on a real Redis', () => {
  let server: Awaited<ReturnType<typeof startRedis>>;
  let client: Redis;
  beforeAll(async () => {
    ({ server, client } = await startRedisWithClient());
  });
  afterAll(() => stopRedisWithClient({ server, client }));

  it('the Lua and the memory store decide the same on random consumes, adjusts, ids and releases (property)', async () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('consume' as const), cost: fc.integer({ min: 1, max: 4 }) }),
      fc.record({ kind: fc.constant('consume' as const), id: fc.constantFrom('a', 'b', 'c'), cost: fc.integer({ min: 1, max: 3 }) }),
      fc.record({ kind: fc.constant('adjust' as const), delta: fc.integer({ min: -8, max: 8 }) }),
      fc.record({ kind: fc.constant('release' as const) }),
      fc.record({ kind: fc.constant('peek' as const) }),
      fc.record({ kind: fc.constant('step' as const), ms: fc.oneof(fc.integer({ min: 0, max: 90_000 }), fc.integer({ min: 0, max: 20 })) }),
    );
    const rate = fc.record({
      limit: fc.integer({ min: 1, max: 12 }),
      window: fc.integer({ min: 1000, max: 60_000 }),
      algorithm: fc.constantFrom(...ALGORITHMS),
    });
    const slots = fc.option(fc.record({ concurrent: fc.integer({ min: 1, max: 3 }), lease: fc.integer({ min: 1000, max: 30_000 }) }), {
      nil: undefined,
    });
    await fc.assert(
      fc.asyncProperty(rate, slots, fc.array(op, { maxLength: 30 }), async (policy, concurrent, ops) => {
        const d = differential({ client, policy: concurrent ? [policy, concurrent] : [policy] });
        // Refused before any store is asked, by both alike: a cost above the capacity (core.redis.test.ts
        // covers it), an id on a limiter with a concurrent policy.
        await d.run(ops, { refusals: ['ERR_SLUICE_COST', 'ERR_SLUICE_OPTION'] });
        await d.close();
      }),
      {
        numRuns: 120,
        // An id's record lapsing exactly one window later (a test clock's TTL with slack in Redis), which this
        // property catches.
        examples: [
          [
            { limit: 1, window: 1000, algorithm: 'token-bucket' },
            undefined,
            [
              { kind: 'consume', id: 'a', cost: 1 },
              { kind: 'step', ms: 1000 },
              { kind: 'consume', id: 'a', cost: 1 },
            ],
          ],
        ],
      },
    );
  });

  it('refunds under concurrency: 40 workers, each retrying until admitted and refunding when done, never more than the limit at once', async () => {
    const limiter = createLimiter({
      policy: { limit: 20, window: '1h' },
      store: redisStore({ client }),
      prefix: uniquePrefix(),
      timeout: 5000,
    });
    let inFlight = 0;
    let most = 0;
    let admitted = 0;
    const giveUp = Date.now() + 20_000;
    await Promise.all(
      Array.from({ length: 40 }, async () => {
        while (Date.now() < giveUp) {
          const d = await limiter.consume('k');
          if (!d.allowed) {
            await sleep(1);
            continue;
          }
          admitted++;
          most = Math.max(most, ++inFlight);
          await sleep(2);
          inFlight--;
          await limiter.adjust('k', -1);
          return;
        }
      }),
    );
    expect(most).toBeLessThanOrEqual(20);
    // Only refunds let the second 20 in: the limit is 20 an hour.
    expect(admitted).toBe(40);
    expect((await limiter.peek('k')).remaining).toBe(20);
  });

  it('one id from two clients at once charges once', async () => {
    const prefix = uniquePrefix();
    const other = new Redis(server.url);
    await new Promise((r) => other.once('ready', r));
    try {
      const policy: PolicyInput[] = ['10/1h', { limit: 100, window: '1d', algorithm: 'sliding-log' }];
      const a = createLimiter({ policy, store: redisStore({ client }), prefix, timeout: 5000 });
      const b = createLimiter({ policy, store: redisStore({ client: other }), prefix, timeout: 5000 });
      const decisions = await Promise.all(
        Array.from({ length: 100 }, (_, i) => (i % 2 ? a : b).consume('user:1', { id: 'job-42', cost: 3 })),
      );
      expect(decisions.every((d) => d.allowed)).toBe(true);
      expect((await a.peek('user:1')).policies.map((p) => p.remaining)).toEqual([7, 97]);
      const records = await client.keys(`${prefix}:*:id:*`);
      expect(records).toHaveLength(1);
      // It expires with the longest window (a day), on the server.
      const ttl = await client.pttl(records[0] as string);
      expect(ttl).toBeGreaterThan(86_400_000 - 60_000);
      expect(ttl).toBeLessThanOrEqual(86_400_000);
    } finally {
      other.disconnect();
    }
  });

  it('an id replay is allowed even when the deny cache holds a denial for the key', async () => {
    const limiter = createLimiter({ policy: '2/1h', store: redisStore({ client }), prefix: uniquePrefix(), timeout: 5000 });
    expect((await limiter.consume('k', { id: 'first' })).allowed).toBe(true);
    await limiter.consume('k');
    expect((await limiter.consume('k')).source).toBe('store');
    expect((await limiter.consume('k')).source).toBe('deny-cache');
    expect(await limiter.consume('k', { id: 'first' })).toMatchObject({ allowed: true, source: 'store' });
    expect((await limiter.consume('k', { id: 'second' })).allowed).toBe(false);
  });

  it('1,000 concurrent consumes at { concurrent: 25 } take exactly 25 slots; releases give them back, once each', async () => {
    const limiter = createLimiter({
      policy: ['1000/1h', { concurrent: 25 }],
      store: redisStore({ client }),
      prefix: uniquePrefix(),
      timeout: 5000,
    });
    const first = await Promise.all(Array.from({ length: 1000 }, () => limiter.consume('hot')));
    const holding = first.filter((d) => d.allowed);
    expect(holding).toHaveLength(25);
    expect(first.filter((d) => d.release !== undefined)).toHaveLength(25);
    // A denial by the slots took nothing from the rate policy.
    expect((await limiter.peek('hot')).policies[0]!.remaining).toBe(975);
    await Promise.all(holding.slice(0, 10).flatMap((d) => [d.release!(), d.release!()]));
    const again = await Promise.all(Array.from({ length: 50 }, () => limiter.consume('hot')));
    expect(again.filter((d) => d.allowed)).toHaveLength(10);
  });

  it('a killed process holding slots: they come back when their lease ends', async () => {
    const prefix = uniquePrefix();
    // Long enough that a busy machine still peeks before it ends; the wait for the end has no upper bound but the test's.
    const lease = 6000;
    const child: ChildProcess = fork(
      join(__dirname, 'consumers', 'slots-child.cjs'),
      [String(server.port), prefix, '5', String(lease), '8'],
      {
        timeout: 30_000,
      },
    );
    try {
      const { held } = await new Promise<{ held: number }>((resolve, reject) => {
        child.once('message', (m) => resolve(m as { held: number }));
        child.once('error', reject);
      });
      expect(held).toBe(5);
      child.kill('SIGKILL');
      const limiter = createLimiter({ policy: { concurrent: 5, lease }, store: redisStore({ client }), prefix, timeout: 5000 });
      const free = () => limiter.peek('jobs').then((d) => d.remaining);
      expect(await free()).toBeLessThan(5);
      await until(free, 5, { withinMs: 40_000 });
      expect((await limiter.consume('jobs')).allowed).toBe(true);
    } finally {
      child.kill('SIGKILL');
    }
  }, 60_000);

  it("while the store is down, failMode 'closed' counts slots in the local fallback; release gives them back there", async () => {
    const dead = new Redis({ port: await freePort(), lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0 });
    const limiter = createLimiter({
      policy: { concurrent: 2 },
      store: redisStore({ client: dead }),
      breaker: false,
      prefix: uniquePrefix(),
    });
    const [a, b, c] = await Promise.all([limiter.consume('k'), limiter.consume('k'), limiter.consume('k')]);
    expect([a, b, c].map((d) => [d.allowed, d.source])).toEqual([
      [true, 'fallback'],
      [true, 'fallback'],
      [false, 'fallback'],
    ]);
    await a!.release!();
    expect((await limiter.consume('k')).allowed).toBe(true);
    // failMode 'open' holds nothing to give back.
    const open = createLimiter({
      policy: { concurrent: 1 },
      store: redisStore({ client: dead }),
      failMode: 'open',
      prefix: uniquePrefix(),
    });
    const d = await open.consume('k');
    expect([d.allowed, d.source, d.release]).toEqual([true, 'fail-open', undefined]);
    dead.disconnect();
  });
});

describe('adjust, ids and slots on a Redis Cluster', () => {
  let cluster: RedisCluster;
  let client: Cluster;
  beforeAll(async () => {
    cluster = await startCluster();
    client = new Cluster(cluster.startupNodes());
    await new Promise((r) => client.once('ready', r)); // the store refuses calls made before the first connect
  }, 60_000);
  afterAll(async () => {
    client?.disconnect();
    await cluster?.stop();
  });

  it('keys over many slots: ids, adjusts and slots stay in each key’s slot (no CROSSSLOT) and count alike', async () => {
    const prefix = uniquePrefix();
    const rate = createLimiter({ policy: ['5/1h', '50/1d'], store: redisStore({ client }), prefix, timeout: 5000 });
    const slots = createLimiter({
      policy: ['100/1h', { concurrent: 2 }],
      store: redisStore({ client }),
      prefix: `${prefix}s`,
      timeout: 5000,
    });
    const keys = Array.from({ length: 40 }, (_, i) => `user:${i}`);
    const charged = await Promise.all(keys.flatMap((k) => [rate.consume(k, { id: 'r1' }), rate.consume(k, { id: 'r1' })]));
    expect(charged.every((d) => d.allowed && d.source === 'store')).toBe(true);
    const refunded = await Promise.all(keys.map((k) => rate.adjust(k, -1)));
    expect(refunded.every((d) => d.source === 'store' && d.remaining === 5)).toBe(true);
    const owed = await Promise.all(keys.map((k) => rate.adjust(k, 7)));
    expect(owed.every((d) => !d.allowed && d.source === 'store')).toBe(true);
    const taken = await Promise.all(keys.flatMap((k) => [slots.consume(k), slots.consume(k), slots.consume(k)]));
    expect(taken.filter((d) => d.allowed)).toHaveLength(80);
    expect(taken.every((d) => d.source === 'store')).toBe(true);
    await Promise.all(taken.map((d) => d.release?.()));
    const after = await Promise.all(keys.map((k) => slots.peek(k)));
    expect(after.every((d) => d.policies[1]!.remaining === 2)).toBe(true);
  });
});
