// Plans on real Redis and real HTTP servers: per-request policies (plans) in the three adapters on the
// memory store and on Redis, and calendar quotas decided by the script on the server's clock.
import { createLimiter, memoryStore, redisStore } from '@sluice/core';
import fc from 'fast-check';
import type Redis from 'ioredis';
import { DECIDE_SCRIPT } from '../packages/core/src/lua.generated';
import { parsePolicy } from '../packages/core/src/policy/policy';
import { encodeBatch } from '../packages/core/src/store/protocol';
import { differential } from './support/differential';
import { type Harness, harnesses, parseRateLimit, parseRateLimitPolicy, type Running } from './support/http';
import { type RedisServer, uniquePrefix } from './support/redis';
import { startRedisWithClient, stopRedisWithClient } from './support/redis-client';

let server: RedisServer;
let client: Redis;
beforeAll(async () => {
  ({ server, client } = await startRedisWithClient());
});
afterAll(() => stopRedisWithClient({ server, client }));

const serverMs = async () => {
  const [s, us] = await client.time();
  return Number(s) * 1000 + Number(us) / 1000;
};
/** The next midnight after `t` in `timeZone`, found by the same Intl the app uses, a minute at a time then a ms. */
function nextMidnight(t: number, timeZone: string): number {
  const f = new Intl.DateTimeFormat('en-US', { timeZone, year: 'numeric', month: 'numeric', day: 'numeric' });
  const day = f.format(t);
  let x = t;
  while (f.format(x) === day) x += 60_000;
  while (f.format(x - 1) !== day) x -= 1;
  return x;
}

describe('calendar quotas in Lua', () => {
  // Instants around which periods change: DST in New York and Berlin, February 29, a Tokyo month end, a week.
  const ANCHORS: Array<[string, string]> = [
    ['America/New_York', '2024-03-10T05:00:00Z'],
    ['America/New_York', '2024-11-04T05:00:00Z'],
    ['Europe/Berlin', '2024-03-30T23:00:00Z'],
    ['Europe/Berlin', '2024-10-27T23:00:00Z'],
    ['UTC', '2024-03-01T00:00:00Z'],
    ['UTC', '2024-02-29T00:00:00Z'],
    ['Asia/Tokyo', '2024-01-31T15:00:00Z'],
    ['Asia/Tokyo', '2024-01-07T15:00:00Z'],
  ];

  it('the script and the memory store decide the same across period boundaries (property)', async () => {
    const policy = fc.record({
      limit: fc.integer({ min: 1, max: 6 }),
      window: fc.constantFrom('day' as const, 'week' as const, 'month' as const),
    });
    const op = fc.oneof(
      fc.record({ kind: fc.constant('consume' as const), cost: fc.oneof(fc.integer({ min: 1, max: 3 }), fc.constant(0.5)) }),
      fc.record({ kind: fc.constant('peek' as const) }),
      fc.record({
        kind: fc.constant('step' as const),
        ms: fc.oneof(
          fc.integer({ min: 0, max: 3 * 3_600_000 }),
          fc.integer({ min: 0, max: 20 }),
          fc.integer({ min: 0, max: 9 * 86_400_000 }),
        ),
      }),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...ANCHORS),
        // Often right at the boundary, where an off-by-one in picking the period would show.
        fc.oneof(fc.integer({ min: -7_200_000, max: 7_200_000 }), fc.integer({ min: -3, max: 3 })),
        policy,
        fc.boolean(),
        fc.array(op, { maxLength: 25 }),
        async ([timeZone, anchor], offset, quota, withRate, ops) => {
          const d = differential({
            client,
            policy: [{ ...quota, timeZone }, ...(withRate ? ['3/1h' as const] : [])],
            start: Date.parse(anchor) + offset,
          });
          // A cost above the quota is refused before any store is asked, by both alike.
          await d.run(ops, { refusals: ['ERR_SLUICE_COST'] });
          await d.close();
        },
      ),
      { numRuns: 120 },
    );
  });

  it("the server's clock picks the period: an app clock 12 hours ahead sends its candidates, the server counts in its own day", async () => {
    const key = `${uniquePrefix('skew')}:{k}:q`;
    const timeZone = 'Asia/Tokyo';
    const before = await serverMs();
    // One consume of a calendar quota (limit 2), encoded as the store does on an app clock 12 hours ahead:
    // the spec carries that clock's candidate period starts; the script runs on the server's clock.
    const policy = parsePolicy({ limit: 2, window: 'day', timeZone });
    const { keys, args } = encodeBatch([{ keys: [key], policies: [policy], cost: 1, peek: false }], {
      guard: `${key}:guard`,
      call: 1,
      wall: before + 12 * 3_600_000,
    });
    const run = () => client.eval(DECIDE_SCRIPT, keys.length, ...keys, ...args) as Promise<number[]>;
    const [remaining, resetMs = Number.NaN, retry] = await run();
    const after = await serverMs();
    expect([remaining, retry]).toEqual([1, 0]);
    // A Tokyo midnight between the two readings leaves nothing to compare against: rare, and not a failure.
    if (nextMidnight(before, timeZone) <= after) return;
    // The time to the server's next Tokyo midnight, not the app's.
    expect(resetMs).toBeLessThanOrEqual(Math.ceil(nextMidnight(before, timeZone) - before));
    expect(resetMs).toBeGreaterThanOrEqual(Math.floor(nextMidnight(after, timeZone) - after) - 1);
    // The key expires at that midnight too (within the calls' time).
    const pttl = await client.pttl(key);
    expect(Math.abs(pttl - resetMs)).toBeLessThan(1000);
  });

  it('each quota key expires at its period end on the server clock, and the period end is resetMs', async () => {
    const prefix = uniquePrefix();
    const limiter = createLimiter({
      policy: ['5/day', '50/week', { limit: 500, window: 'month', timeZone: 'America/New_York' }],
      store: redisStore({ client }),
      prefix,
      timeout: 5000,
    });
    const before = await serverMs();
    const d = await limiter.consume('k');
    const keys = await client.keys(`${prefix}:*`);
    expect(keys).toHaveLength(3);
    for (const [i, p] of d.policies.entries()) {
      const key = keys.find((k) => k.endsWith(['caday@UTC', 'caweek@UTC', 'camonth@America/New_York'][i]!)) as string;
      const pttl = await client.pttl(key);
      expect(Math.abs(pttl - p.resetMs)).toBeLessThan(2000);
      expect(p.resetMs).toBeLessThanOrEqual(p.windowMs);
    }
    // Unless a UTC midnight fell between the reading and the call.
    if (Math.floor(before / 86_400_000) === Math.floor((await serverMs()) / 86_400_000)) {
      expect(d.policies[0]!.resetMs).toBeLessThanOrEqual(Math.ceil(86_400_000 - (before % 86_400_000)));
    }
    expect(d.policies[0]!.windowMs).toBe(86_400_000);
    expect(d.policies[1]!.windowMs).toBe(7 * 86_400_000);
  });
});

describe('a first-hit fixed window across plans', () => {
  it('counts one window per key whatever the limit, each call held to its own limit (Redis and memory alike)', async () => {
    const d = differential({ client });
    const under = (limit: number) => ({ policy: { limit, window: '1m', algorithm: 'fixed-window', start: 'first-hit' } as const });
    const seen = async (limit: number) => {
      const r = await d.consume('k', under(limit));
      return [r.allowed, r.remaining, r.resetMs];
    };
    expect(await seen(1)).toEqual([true, 0, 60_000]);
    d.step(10_000);
    // The window the first hit opened goes on, under each call's limit.
    expect(await seen(3)).toEqual([true, 1, 50_000]);
    expect(await seen(3)).toEqual([true, 0, 50_000]);
    expect(await seen(3)).toEqual([false, 0, 50_000]);
    expect(await seen(1)).toEqual([false, 0, 50_000]);
    expect(await seen(5)).toEqual([true, 1, 50_000]);
    d.step(50_000);
    // The first hit after the window ends opens the next.
    expect(await seen(1)).toEqual([true, 0, 60_000]);
    await d.close();
  });
});

// ------------------------------------------------------------------ adapters: plans per request
const plans: Record<string, unknown> = {
  free: '2/1m',
  pro: ['4/1m', '1000/day'],
};
const header = (r: unknown, name: string): string | undefined => {
  const v = (r as { headers: Record<string, string | string[] | undefined> }).headers[name];
  return Array.isArray(v) ? v[0] : v;
};
const planOf = (r: unknown) => plans[header(r, 'x-plan') ?? 'free'] ?? plans.free;
const keyOf = (r: unknown) => header(r, 'x-user') ?? 'anonymous';

describe.each(harnesses)('$name: policy chosen from the request', (h: Harness) => {
  const open: Running[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((r) => r.close()));
  });
  const start = async (...args: Parameters<Harness['start']>) => {
    const running = await h.start(...args);
    open.push(running);
    return running;
  };
  const get = (app: Running, path: string, headers: Record<string, string>) => fetch(app.url + path, { headers });

  it.each([
    ['memory', () => memoryStore()],
    ['Redis', () => redisStore({ client })],
  ])('on the %s store: each plan its own limits and headers; sync at app level, async on a route', async (_name, makeStore) => {
    const store = makeStore();
    const prefix = uniquePrefix();
    const app = await start({
      app: { store, prefix, timeout: 5000, key: keyOf, policy: planOf },
      routes: [
        { method: 'GET', path: '/a' },
        // The route's own plans, looked up asynchronously (a database, say): 1 for free, 3 for pro.
        {
          method: 'GET',
          path: '/b',
          options: {
            store,
            prefix,
            timeout: 5000,
            key: keyOf,
            policy: async (r: unknown) => (header(r, 'x-plan') === 'pro' ? '3/1m' : '1/1m'),
          },
        },
      ],
    });
    const free = { 'x-user': 'alice', 'x-plan': 'free' };
    const pro = { 'x-user': 'bob', 'x-plan': 'pro' };
    const first = await get(app, '/a', free);
    expect(first.status).toBe(200);
    expect(parseRateLimitPolicy(first.headers.get('ratelimit-policy'))).toEqual([{ name: '2-per-60s', q: 2, w: 60 }]);
    expect((await get(app, '/a', free)).status).toBe(200);
    expect((await get(app, '/a', free)).status).toBe(429);

    const proFirst = await get(app, '/a', pro);
    expect(parseRateLimitPolicy(proFirst.headers.get('ratelimit-policy'))).toEqual([
      { name: '4-per-60s', q: 4, w: 60 },
      { name: '1000-per-day', q: 1000, w: 86_400 },
    ]);
    expect(parseRateLimit(proFirst.headers.get('ratelimit')).map((m) => m.r)).toEqual([3, 999]);
    for (let i = 0; i < 3; i++) expect((await get(app, '/a', pro)).status).toBe(200);
    const proDenied = await get(app, '/a', pro);
    expect(proDenied.status).toBe(429);
    expect(parseRateLimit(proDenied.headers.get('ratelimit')).map((m) => m.r)).toEqual([0, 996]);

    // The route's async plan.
    if (h.name === 'fastify') {
      // Fastify: the route's config.rateLimit replaces the plugin's options.
      expect((await get(app, '/b', free)).status).toBe(200);
      expect((await get(app, '/b', free)).status).toBe(429);
    } else {
      // Express and Koa: the app-level middleware counts too; alice is already limited there.
      expect((await get(app, '/b', free)).status).toBe(429);
    }
    const carol = { 'x-user': 'carol', 'x-plan': 'pro' };
    const b = await get(app, '/b', carol);
    expect(b.status).toBe(200);
    expect(b.headers.get('ratelimit-policy')).toContain('"3-per-60s";q=3;w=60');
  });

  it('a policy function that returns no policy answers with an error naming policy, never a decision', async () => {
    const app = await start({
      app: { store: memoryStore(), key: keyOf, policy: () => 'lots' },
      routes: [{ method: 'GET', path: '/a' }],
    });
    const res = await get(app, '/a', { 'x-user': 'dave' });
    expect(res.status).toBe(500);
    expect(res.headers.get('ratelimit')).toBeNull();
  });
});
