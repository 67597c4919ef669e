// @sluice/core/testing on a real Redis: one testClock decides the memory store's and the scripts' answers
// alike through hours and days without a wait, resetAll deletes a prefix's keys and nothing else whatever
// the client, and a limiter answers under Jest's fake timers.
import {
  createLimiter,
  createRules,
  type Decision,
  type Limiter,
  memoryStore,
  type PolicyInput,
  redisStore,
  type Store,
} from '@sluice/core';
import { resetAll, testClock } from '@sluice/core/testing';
import fc from 'fast-check';
import Redis from 'ioredis';
import { CLIENT_KINDS, type TestClient } from './support/clients';
import { differential } from './support/differential';
import { type RedisServer, startRedis, uniquePrefix } from './support/redis';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** What a test of an app's limits reads of a decision: the same on both stores under one clock. */
const seen = (d: Decision) => ({ allowed: d.allowed, remaining: d.remaining, retryAfterMs: d.retryAfterMs, resetMs: d.resetMs });

describe('one testClock on the memory store and on Redis', () => {
  let server: RedisServer;
  let client: TestClient;
  beforeAll(async () => {
    server = await startRedis();
    client = await (CLIENT_KINDS[0] as (typeof CLIENT_KINDS)[number]).standalone(server.port);
  });
  afterAll(async () => {
    await client.close();
    await server.stop();
  });

  const POLICIES: Array<[string, PolicyInput]> = [
    ['token-bucket', { limit: 3, window: '1h', algorithm: 'token-bucket' }],
    ['fixed-window', { limit: 3, window: '1h', algorithm: 'fixed-window' }],
    ['fixed-window from the first hit', { limit: 3, window: '1d', algorithm: 'fixed-window', start: 'first-hit' }],
    ['sliding-window', { limit: 3, window: '1h', algorithm: 'sliding-window' }],
    ['sliding-log', { limit: 3, window: '1d', algorithm: 'sliding-log' }],
    ['a calendar day in Berlin', { limit: 3, window: 'day', timeZone: 'Europe/Berlin' }],
    ['a calendar month', { limit: 3, window: 'month', timeZone: 'UTC' }],
  ];

  it.each(POLICIES)('%s: the same decisions through hours and days, limiters given only the store', async (_, policy) => {
    const clock = testClock();
    clock.set(Date.UTC(2026, 0, 30, 22, 30)); // a day and a month end on the way
    const prefix = uniquePrefix();
    const limiters: Limiter[] = [
      createLimiter({ policy, store: memoryStore({ clock }), prefix }),
      createLimiter({ policy, store: redisStore({ client: client.client, clock }), prefix, timeout: 5000 }),
    ];
    const both = async () => {
      const [m, r] = await Promise.all(limiters.map((l) => l.consume('k')));
      expect(seen(r as Decision)).toEqual(seen(m as Decision));
      return r as Decision;
    };
    const steps = ['0ms', '1m', '0ms', '0ms', '20m', '1h', '0ms', '0ms', '2h', '1d', '0ms', '6h', '1d', '0ms', '0ms', '0ms'] as const;
    const decisions: Decision[] = [];
    for (const step of steps) {
      clock.advance(step);
      decisions.push(await both());
    }
    // Denials were made and later lifted by the clock alone (the deny cache of the Redis limiter too).
    expect(decisions.some((d) => !d.allowed)).toBe(true);
    expect(decisions.findIndex((d, i) => i > 0 && d.allowed && !(decisions[i - 1] as Decision).allowed)).toBeGreaterThan(0);
    await Promise.all(limiters.map((l) => l.close()));
  });

  it('the Lua scripts and the memory store decide the same through hour- and day-long windows (property)', async () => {
    const algorithm = fc.constantFrom('token-bucket', 'fixed-window', 'sliding-window', 'sliding-log');
    const policy = fc.oneof(
      fc.record({ limit: fc.integer({ min: 1, max: 20 }), window: fc.constantFrom('1h', '6h', '1d', '7d'), algorithm }),
      fc.record({
        limit: fc.integer({ min: 1, max: 20 }),
        window: fc.constantFrom('day' as const, 'week' as const, 'month' as const),
        timeZone: fc.constantFrom('UTC', 'America/New_York', 'Asia/Tokyo'),
      }),
    );
    const op = fc.oneof(
      { weight: 3, arbitrary: fc.record({ kind: fc.constant('consume' as const), cost: fc.integer({ min: 1, max: 4 }) }) },
      fc.record({ kind: fc.constant('peek' as const) }),
      fc.record({
        kind: fc.constant('step' as const),
        ms: fc.oneof(fc.integer({ min: 0, max: 2 * HOUR }), fc.integer({ min: 0, max: 3 * DAY })),
      }),
    );
    await fc.assert(
      fc.asyncProperty(policy, fc.array(op, { maxLength: 30 }), async (p, ops) => {
        const d = differential({ client: client.client, policy: p });
        await d.run(ops, { refusals: ['ERR_SLUICE_COST'] });
        await d.close();
      }),
      { numRuns: 60 },
    );
  });
});

describe('resetAll on a standalone Redis', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(() => server.stop());

  describe.each(CLIENT_KINDS.map((kind) => [kind.name, kind] as const))('%s', (_, kind) => {
    let client: TestClient;
    let raw: Redis;
    beforeAll(async () => {
      client = await kind.standalone(server.port);
      raw = (await (CLIENT_KINDS[0] as (typeof CLIENT_KINDS)[number]).standalone(server.port)).client as unknown as Redis;
    });
    afterAll(async () => {
      await client.close();
      raw.disconnect();
    });

    it("deletes a prefix's counters, ids, bans and rules, and what its limiters hold, and nothing of another prefix", async () => {
      const clock = testClock();
      const store = redisStore({ client: client.client, clock });
      const base = uniquePrefix();
      // A prefix that starts another's, and one with glob characters, are kept apart.
      const [mine, longer, glob] = [base, `${base}-2`, `${base}*?[x]`];
      const made = [mine, longer, glob].map((prefix) => ({
        prefix,
        limiter: createLimiter({ policy: '2/1h', store, prefix, ban: { after: 1, within: '1h', for: '1h' }, timeout: 5000 }),
        rules: createRules({ store, prefix }),
      }));
      for (const { limiter, rules } of made) {
        await rules.deny('203.0.113.9', { reason: 'a test' });
        for (const key of ['a', '#{odd key}', 'ü'.repeat(200)]) await limiter.consume(key, { id: 'once' });
        await limiter.consume('a');
        expect(await limiter.consume('a')).toMatchObject({ allowed: false });
      }
      const keysOf = async (prefix: string) => (await raw.keys('*')).filter((k) => k.startsWith(`${prefix}:{`));
      const guards = (await raw.keys('sluice:call:*')).length;
      const before = await Promise.all([mine, longer, glob].map(keysOf));
      expect(before.every((keys) => keys.length >= 8)).toBe(true); // counters, ids, a ban count, rules

      await resetAll({ store, prefix: mine });

      expect(await keysOf(mine)).toEqual([]);
      // Every key of the other prefixes is still there (their rules' copies may have marked one more since).
      for (const [i, prefix] of [longer, glob].entries())
        expect(await keysOf(prefix)).toEqual(expect.arrayContaining(before[i + 1] as string[]));
      expect((await raw.keys('sluice:call:*')).length).toBe(guards);
      const [fresh, other] = made as [(typeof made)[0], (typeof made)[0]];
      // Neither the store nor the limiter's deny cache remembers the denial; the id charges again.
      expect(await fresh.limiter.consume('a', { id: 'once' })).toMatchObject({ allowed: true, remaining: 1 });
      expect(await other.limiter.consume('a')).toMatchObject({ allowed: false });
      for (const { limiter, rules } of made) {
        await limiter.close();
        await rules.close();
      }
    });
  });
});

describe('a limiter under Jest fake timers', () => {
  let server: RedisServer;
  let client: TestClient;
  beforeAll(async () => {
    server = await startRedis();
    client = await (CLIENT_KINDS[0] as (typeof CLIENT_KINDS)[number]).standalone(server.port);
  });
  afterAll(async () => {
    await client.close();
    await server.stop();
  });
  afterEach(() => jest.useRealTimers());

  const stores: Array<[string, (clock: () => number) => Store]> = [
    ['memory', (clock) => memoryStore({ clock })],
    ['Redis', (clock) => redisStore({ client: client.client, clock })],
  ];
  it.each(stores)('keeps answering on the %s store: its batches and deadlines run on real timers', async (_, make) => {
    jest.useFakeTimers();
    const clock = testClock();
    const limiter = createLimiter({ policy: '2/1m', store: make(clock), prefix: uniquePrefix(), timeout: 5000 });
    expect(await limiter.consume('k')).toMatchObject({ allowed: true, remaining: 1 });
    await limiter.consume('k');
    expect(await limiter.consume('k')).toMatchObject({ allowed: false, retryAfterMs: 30_000 });
    jest.advanceTimersByTime(120_000); // the fake timers move no store's clock
    expect(await limiter.consume('k')).toMatchObject({ allowed: false });
    clock.advance('30s');
    expect(await limiter.consume('k')).toMatchObject({ allowed: true });
    await limiter.close();
  });

  it('a client that cannot connect while process.nextTick is faked: the store error says what to do', async () => {
    jest.useFakeTimers();
    const late = new Redis(server.url, { lazyConnect: true });
    late.on('error', () => {});
    const errors: string[] = [];
    const limiter = createLimiter({
      policy: '2/1m',
      store: redisStore({ client: late, clock: testClock() }),
      prefix: uniquePrefix(),
      timeout: 50,
      onEvent: (event) => {
        if (event.type === 'store-error') errors.push(String((event.error as Error).message));
      },
    });
    expect(await limiter.consume('k')).toMatchObject({ allowed: true, source: 'fallback' });
    expect(errors.join('\n')).toMatch(
      /process\.nextTick is faked, and the client connects on it: give Jest's fake timers doNotFake: \['nextTick'\]/,
    );
    await limiter.close();
    jest.useRealTimers();
    late.disconnect();
  });

  // It pauses the server: not one of REDIS_URL's.
  const ownServer = process.env.REDIS_URL ? it.skip : it;
  ownServer('a Redis that does not answer is cut off at the deadline, and the fail mode answers', async () => {
    const clock = testClock();
    const limiter = createLimiter({
      policy: '2/1m',
      store: redisStore({ client: client.client, clock }),
      prefix: uniquePrefix(),
      timeout: 50,
    });
    expect(await limiter.consume('k')).toMatchObject({ source: 'store' });
    jest.useFakeTimers();
    server.pause();
    try {
      expect(await limiter.consume('k')).toMatchObject({ allowed: true, source: 'fallback' });
    } finally {
      server.resume();
    }
    await limiter.close();
  });
});
