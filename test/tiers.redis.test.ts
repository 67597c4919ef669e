import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { createLimiter, type Decision, type LimiterEvent, redisStore } from '@sluice/core';
import fc from 'fast-check';
import Redis, { Cluster } from 'ioredis';
import { scriptCalls, startCluster, startRedis } from './support/redis';

const unique = () => `t${Math.random().toString(36).slice(2, 10)}`;

describe('deny cache, prefilter and shadow on standalone Redis', () => {
  let server: Awaited<ReturnType<typeof startRedis>>;
  let client: Redis;
  beforeAll(async () => {
    server = await startRedis();
    client = new Redis(server.url);
  });
  afterAll(async () => {
    client.disconnect();
    await server.stop();
  });

  it('the deny cache never denies what the store alone would allow (property)', async () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('consume' as const), cost: fc.integer({ min: 1, max: 4 }) }),
      fc.record({ kind: fc.constant('reset' as const) }),
      fc.record({ kind: fc.constant('step' as const), ms: fc.integer({ min: 0, max: 3000 }) }),
    );
    const algorithm = fc.constantFrom('token-bucket', 'fixed-window', 'sliding-window', 'sliding-log');
    await fc.assert(
      fc.asyncProperty(algorithm, fc.integer({ min: 1, max: 8 }), fc.array(op, { maxLength: 40 }), async (alg, limit, ops) => {
        let now = 1_000_000;
        const clock = () => now;
        const policy = [
          { limit, window: 2000, algorithm: alg },
          { limit: limit * 3, window: 10_000, algorithm: alg },
        ];
        const store = redisStore({ client, clock });
        const cached = createLimiter({ policy, store, clock, prefix: unique() });
        const plain = createLimiter({ policy, store, clock, prefix: unique(), denyCache: false });
        for (const o of ops) {
          if (o.kind === 'step') now += o.ms;
          else if (o.kind === 'reset') await Promise.all([cached.reset('k'), plain.reset('k')]);
          else {
            const [a, b] = await Promise.all([cached.consume('k', { cost: o.cost }), plain.consume('k', { cost: o.cost })]);
            if (a.source === 'deny-cache') expect(b.allowed).toBe(false);
            expect(a.allowed).toBe(b.allowed);
          }
        }
      }),
      { numRuns: 60 },
    );
  });

  it.each([
    ['with the deny cache', true, 0.1],
    ['without it', false, 1],
  ])('a flood at 10x the limit, %s: script calls per request', async (_name, denyCache, most) => {
    const limiter = createLimiter({ policy: '100/1h', store: redisStore({ client }), denyCache, prefix: unique() });
    await client.config('RESETSTAT');
    // 100 admitted, then 1,000 more: the flood runs at 10x the limit.
    let denied = 0;
    for (let i = 0; i < 1100; i++) if (!(await limiter.consume('hot')).allowed) denied++;
    expect(denied).toBe(1000);
    const perRequest = (await scriptCalls(client)) / 1100;
    expect(perRequest).toBeLessThanOrEqual(most);
    if (!denyCache) expect(perRequest).toBeGreaterThan(0.99);
  });

  it('the prefilter sheds a flood before it reaches Redis', async () => {
    const limiter = createLimiter({ policy: '1000/1h', prefilter: '10/1h', store: redisStore({ client }), prefix: unique() });
    await client.config('RESETSTAT');
    const decisions: Decision[] = [];
    for (let i = 0; i < 200; i++) decisions.push(await limiter.consume('flood'));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(10);
    expect(decisions.filter((d) => d.source === 'prefilter')).toHaveLength(190);
    expect(await scriptCalls(client)).toBe(10);
  });

  it('shadow mode never denies and reports each request a real limit would have denied', async () => {
    const events: LimiterEvent[] = [];
    const limiter = createLimiter({
      policy: '5/1h',
      shadow: true,
      store: redisStore({ client }),
      prefix: unique(),
      onEvent: (e) => events.push(e),
    });
    const decisions = await Promise.all(Array.from({ length: 20 }, () => limiter.consume('k')));
    expect(decisions.every((d) => d.allowed)).toBe(true);
    expect(decisions.filter((d) => d.shadowed)).toHaveLength(15);
    expect(events.filter((e) => e.type === 'shadow-denied')).toHaveLength(15);
  });
});

describe('shards on a Redis Cluster', () => {
  let cluster: Awaited<ReturnType<typeof startCluster>>;
  beforeAll(async () => {
    cluster = await startCluster();
  }, 60_000);
  afterAll(() => cluster.stop());

  it('spreads one hot key over every master, and 4 processes at 1000/1h admit between 970 and 1000', async () => {
    const prefix = unique();
    const masters = await Promise.all(
      (await cluster.masters()).map(async (port: number) => {
        const c = new Redis({ port });
        await c.config('RESETSTAT');
        return c;
      }),
    );
    const run = () =>
      new Promise<number>((resolve, reject) =>
        execFile(
          process.execPath,
          [join(__dirname, 'consumers', 'shard-child.cjs'), JSON.stringify(cluster.startupNodes()), prefix],
          { timeout: 30_000 },
          (error, out) => (error ? reject(error) : resolve(Number(out.trim()))),
        ),
      );
    const admitted = (await Promise.all([run(), run(), run(), run()])).reduce((a, b) => a + b, 0);
    expect(admitted).toBeGreaterThanOrEqual(970);
    expect(admitted).toBeLessThanOrEqual(1000);
    const perMaster = await Promise.all(masters.map(scriptCalls));
    for (const calls of perMaster) expect(calls).toBeGreaterThan(0);
    for (const c of masters) c.disconnect();
  });

  it('a two-policy sharded limiter keeps each shard in one slot', async () => {
    const client = new Cluster(cluster.startupNodes());
    try {
      const limiter = createLimiter({
        policy: ['100/1m', '1000/1h'],
        shards: 4,
        store: redisStore({ client }),
        prefix: unique(),
        timeout: 2000,
      });
      const decisions: Decision[] = await Promise.all(Array.from({ length: 150 }, () => limiter.consume('tenant')));
      expect(decisions.every((d) => d.source === 'store' || d.source === 'deny-cache')).toBe(true);
      expect(decisions.filter((d) => d.allowed).length).toBeLessThanOrEqual(100);
      expect(decisions.filter((d) => d.allowed).length).toBeGreaterThanOrEqual(90);
      await limiter.reset('tenant');
      expect((await limiter.consume('tenant')).allowed).toBe(true);
    } finally {
      client.disconnect();
    }
  });
});
