import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { createLimiter, redisStore } from '@sluice/core';
import fc from 'fast-check';
import type Redis from 'ioredis';
import { differential } from './support/differential';
import { type startRedis, uniquePrefix } from './support/redis';
import { startRedisWithClient, stopRedisWithClient } from './support/redis-client';

const ALGORITHMS = ['token-bucket', 'fixed-window', 'sliding-window', 'sliding-log'] as const;

describe('@sluice/core on a real Redis', () => {
  let server: Awaited<ReturnType<typeof startRedis>>;
  let client: Redis;
  beforeAll(async () => {
    ({ server, client } = await startRedisWithClient());
  });
  afterAll(() => stopRedisWithClient({ server, client }));

  it('the Lua scripts and the memory store decide the same on random sequences (property)', async () => {
    const op = fc.oneof(
      // Whole costs, and fractional ones (used as whole numbers when a sliding-log policy is in play).
      fc.record({ kind: fc.constant('consume' as const), cost: fc.oneof(fc.integer({ min: 1, max: 5 }), fc.constantFrom(0.5, 1.5, 2.25)) }),
      fc.record({ kind: fc.constant('peek' as const) }),
      // limiter.wait's reservation: a place in line, within maxWait or not at all.
      fc.record({
        kind: fc.constant('reserve' as const),
        cost: fc.oneof(fc.integer({ min: 1, max: 5 }), fc.constantFrom(0.5, 1.5)),
        maxWaitMs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 120_000 }), fc.constantFrom(0.001, 2.5)),
      }),
      fc.record({
        kind: fc.constant('step' as const),
        ms: fc.oneof(fc.integer({ min: 0, max: 120_000 }), fc.integer({ min: 0, max: 20 })),
      }),
    );
    const policy = fc.oneof(
      fc.record({
        limit: fc.integer({ min: 1, max: 20 }),
        window: fc.integer({ min: 1000, max: 60_000 }),
        algorithm: fc.constantFrom(...ALGORITHMS),
      }),
      // Dense: a token's refill is a fraction of a µs or of a ms, where rounding would show.
      fc.record({
        limit: fc.oneof(fc.integer({ min: 1, max: 5000 }), fc.integer({ min: 1000, max: 20_000 })),
        window: fc.oneof(fc.integer({ min: 1, max: 50 }), fc.constantFrom(1, 1.5, 2, 7.25, 333.333)),
        algorithm: fc.constantFrom(...ALGORITHMS),
      }),
      fc.record({
        limit: fc.integer({ min: 1, max: 20 }),
        window: fc.integer({ min: 1000, max: 60_000 }),
        algorithm: fc.constant('token-bucket' as const),
        burst: fc.oneof(fc.integer({ min: 1, max: 40 }), fc.constantFrom(1.5, 12.75)),
      }),
      // A fixed window that opens at the key's first hit (the peers' count).
      fc.record({
        limit: fc.integer({ min: 1, max: 20 }),
        window: fc.oneof(fc.integer({ min: 1000, max: 60_000 }), fc.constantFrom(1.5, 7.25, 333.333)),
        algorithm: fc.constant('fixed-window' as const),
        start: fc.constant('first-hit' as const),
      }),
      // Calendar quotas beside the others; test/plans.redis.test.ts holds them at period boundaries.
      fc.record({
        limit: fc.integer({ min: 1, max: 20 }),
        window: fc.constantFrom('day' as const, 'week' as const, 'month' as const),
        timeZone: fc.constantFrom('UTC', 'America/New_York', 'Europe/Berlin', 'Asia/Tokyo'),
      }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(policy, { minLength: 1, maxLength: 2 }), fc.array(op, { maxLength: 30 }), async (drawn, ops) => {
        // A sliding log counts at most SLIDING_LOG_MAX units.
        const policies = drawn.map((p) =>
          'algorithm' in p && p.algorithm === 'sliding-log' ? { ...p, limit: Math.min(p.limit, 10_000) } : p,
        );
        // Two policies of one limit and window are one policy twice; one quota per period and zone in a set.
        const zone = (p: (typeof policies)[number]) => ('timeZone' in p ? `${p.window} ${p.timeZone}` : undefined);
        if (policies.length === 2) {
          fc.pre(policies[0]!.limit !== policies[1]!.limit || policies[0]!.window !== policies[1]!.window);
          // Two first-hit windows of one window are one counter (whatever their limits): one of them in a set.
          const firstHit = (p: (typeof policies)[number]) => ('start' in p ? p.window : undefined);
          fc.pre(firstHit(policies[0]!) === undefined || firstHit(policies[0]!) !== firstHit(policies[1]!));
          fc.pre(zone(policies[0]!) === undefined || zone(policies[0]!) !== zone(policies[1]!));
        }
        // Costs are used as whole numbers when a sliding-log policy is in play.
        const whole = policies.some((p) => 'algorithm' in p && p.algorithm === 'sliding-log');
        const d = differential({ client, policy: policies });
        // A cost above a policy's capacity is refused before any store is asked, by both alike.
        await d.run(
          ops.map((o) => (o.kind === 'consume' && whole ? { ...o, cost: Math.ceil(o.cost) } : o)),
          { refusals: ['ERR_SLUICE_COST'] },
        );
        await d.close();
      }),
      { numRuns: 100 },
    );
  });

  it.each(ALGORITHMS)('%s: 1,000 concurrent consumes at one key with limit 500 admit exactly 500', async (algorithm) => {
    const prefix = uniquePrefix();
    const limiter = createLimiter({
      policy: { limit: 500, window: '1h', algorithm },
      store: redisStore({ client }),
      prefix,
      timeout: 5000,
    });
    const decisions = await Promise.all(Array.from({ length: 1000 }, () => limiter.consume('hot')));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(500);
    if (algorithm === 'sliding-log') {
      const [key] = await client.keys(`${prefix}:*`);
      expect(await client.zcard(key as string)).toBe(500);
    }
  });

  it('the server clock decides: a process two hours ahead gets no refill from its skew', async () => {
    const prefix = uniquePrefix();
    const limiter = createLimiter({ policy: '10/1h', store: redisStore({ client }), prefix });
    const mine = await Promise.all(Array.from({ length: 10 }, () => limiter.consume('shared')));
    expect(mine.every((d) => d.allowed)).toBe(true);
    const out = execFileSync(process.execPath, [join(__dirname, 'consumers', 'skewed-child.cjs'), String(server.port), prefix], {
      encoding: 'utf8',
    });
    expect(JSON.parse(out)).toEqual({ allowed: false, source: 'store' });
  });

  it('odd keys count apart, stay under the prefix and take bounded space', async () => {
    const prefix = uniquePrefix();
    const keys = ['plain', 'ünïcødé 🚦', 'x'.repeat(10_240), '{tag}', 'a}b', 'a:b', 'cr\rlf\n', '#abc', 'a~1', '\ud800', '\udfff'];
    const limiter = createLimiter({ policy: ['1/1h', '5/1d'], store: redisStore({ client }), prefix });
    const first = await Promise.all(keys.map((k) => limiter.consume(k)));
    expect(first.every((d) => d.allowed)).toBe(true);
    const second = await Promise.all(keys.map((k) => limiter.consume(k)));
    expect(second.every((d) => !d.allowed)).toBe(true);
    const stored = await client.keys(`${prefix}:*`);
    expect(stored).toHaveLength(keys.length * 2);
    for (const key of stored) {
      expect(key.startsWith(`${prefix}:{`)).toBe(true);
      expect(Buffer.byteLength(key)).toBeLessThan(200);
    }
  });

  it('each key expires when its state stops mattering, on the server clock', async () => {
    const prefix = uniquePrefix();
    const serverMs = async () => {
      const [s, us] = await client.time();
      return Number(s) * 1000 + Number(us) / 1000;
    };
    const window = 4000;
    const limiters = Object.fromEntries(
      ALGORITHMS.map((algorithm) => [
        algorithm,
        createLimiter({ policy: { limit: 10, window, algorithm }, store: redisStore({ client }), prefix, timeout: 5000 }),
      ]),
    );
    // Stay clear of a window's end, so that every write below falls in one window.
    const before = await serverMs();
    if (before % window > window - 1000) await new Promise((r) => setTimeout(r, window - (before % window) + 10));
    for (const algorithm of ALGORITHMS) {
      const limiter = limiters[algorithm]!;
      // Twice, so that the second write (same window) keeps or renews the TTL as it should.
      await limiter.consume(algorithm, { cost: 2 });
      await limiter.consume(algorithm, { cost: 1 });
    }
    const now = await serverMs();
    const start = Math.floor(now / window) * window;
    for (const algorithm of ALGORITHMS) {
      const [key] = await client.keys(`${prefix}:{${algorithm}}:*`);
      const pttl = await client.pttl(key as string);
      // token-bucket: full again after 3 tokens of 400 ms, rounded up to a 64th of a full refill (62.5 ms);
      // fixed: the window's end; sliding: the next window's end; sliding-log: one window after the newest
      // unit. A few ms of slack for the calls.
      const expected = {
        'token-bucket': 1200,
        'fixed-window': start + window - now,
        'sliding-window': start + 2 * window - now,
        'sliding-log': window,
      }[algorithm];
      expect(pttl).toBeGreaterThan(expected - 200);
      expect(pttl).toBeLessThanOrEqual(Math.ceil(expected) + (algorithm === 'token-bucket' ? 63 : 2));
    }
    // A token bucket's state is one number (TAT, whole µs), packed as a big-endian double: 8 bytes.
    const [tb] = await client.keys(`${prefix}:{token-bucket}:*`);
    const packed = (await client.getBuffer(tb as string)) as Buffer;
    expect(packed.length).toBe(8);
    expect(Number.isInteger(packed.readDoubleBE(0))).toBe(true);
    expect(packed.readDoubleBE(0) / 1000 - now).toBeGreaterThan(1000);
  });

  it.each([
    // Text states, as earlier versions wrote them (read so that counters live through an upgrade): 2 of 3
    // units used, so 1 remains (windows long enough that no unit comes back during the test, however slow
    // the machine).
    ['token-bucket', { limit: 3, window: 3_600_000 }, (us: number) => `${us + 2_400_000_000}`],
    ['token-bucket', { limit: 3, window: 1_000_000 }, (us: number) => `${us + 666_666_666} 2`],
    ['fixed-window', { limit: 3, window: 3_600_000, algorithm: 'fixed-window' }, (us: number) => `${Math.floor(us / 3.6e9)} 2`],
    ['sliding-window', { limit: 3, window: 3_600_000, algorithm: 'sliding-window' }, (us: number) => `${Math.floor(us / 3.6e9)} 2 0`],
  ] as const)('a %s counter an older version wrote as text is read on (upgrades keep counts)', async (_, policy, text) => {
    const prefix = uniquePrefix();
    const limiter = createLimiter({ policy, store: redisStore({ client }), prefix, denyCache: false });
    await limiter.consume('k');
    const [key] = await client.keys(`${prefix}:*`);
    const [s, us] = await client.time();
    await client.set(key as string, text(Number(s) * 1e6 + Number(us)), 'KEEPTTL');
    expect((await limiter.peek('k')).remaining).toBe(1);
    expect((await limiter.consume('k')).allowed).toBe(true);
    expect((await limiter.consume('k')).allowed).toBe(false);
    // Written again, packed.
    expect(((await client.getBuffer(key as string)) as Buffer)[0]).toBeGreaterThan(57);
    await limiter.close();
  });

  it('a token bucket key that keeps its TTL never expires before its bucket is full', async () => {
    // 20 ms a token, a TTL quantum of 15.6 ms: many writes keep the TTL, many move it.
    const prefix = uniquePrefix();
    const limiter = createLimiter({ policy: { limit: 50, window: 1000 }, store: redisStore({ client }), prefix });
    // Checks until 60 writes were looked at, however slow the machine: how many consumes find the key
    // (it is gone once the bucket is full again) depends on the time between them.
    let checked = 0;
    for (let i = 0; checked < 60 && i < 5000; i++) {
      const d = await limiter.consume('k', { cost: 1 + (i % 3) });
      await new Promise((r) => setTimeout(r, i % 7));
      if (!d.allowed) continue;
      const [key] = await client.keys(`${prefix}:*`);
      if (key === undefined) continue; // full again and gone
      const [raw, pttl, [s, us]] = await Promise.all([client.getBuffer(key as string), client.pttl(key as string), client.time()]);
      if (raw === null) continue;
      // TAT, µs: the state's first packed number.
      const tatMs = raw.readDoubleBE(0) / 1000;
      const nowMs = Number(s) * 1000 + Number(us) / 1000;
      expect(pttl).toBeGreaterThanOrEqual(Math.floor(tatMs - nowMs) - 1);
      checked++;
    }
    expect(checked).toBe(60);
  });

  it('after SCRIPT FLUSH the script is reloaded and no error surfaces', async () => {
    const limiter = createLimiter({ policy: '10/1m', store: redisStore({ client }), prefix: uniquePrefix() });
    expect((await limiter.consume('k')).source).toBe('store');
    await client.script('FLUSH');
    const d = await limiter.consume('k');
    expect(d.source).toBe('store');
    expect(d.remaining).toBe(8);
  });
});
