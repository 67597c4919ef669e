// Numbers at their edges. A policy's limit, burst, window and lease, a call's cost and
// delta are bounded at construction (packages/core/src/policy/bounds.ts says why) to what both stores compute
// exactly and the RateLimit fields carry (RFC 9651 integers: at most 15 digits). At each bound the memory
// store and the Lua decide alike and exactly; just past it, construction throws ERR_SLUICE_OPTION naming it.
import { createLimiter, type Decision, type Limiter, memoryStore, type PolicyInput, rateLimitHeaders, redisStore } from '@sluice/core';
import { rateLimit } from '@sluice/express';
import type Redis from 'ioredis';
import { differential } from './support/differential';
import { parseSfList } from './support/http';
import { type startRedis, uniquePrefix } from './support/redis';
import { startRedisWithClient, stopRedisWithClient } from './support/redis-client';

const DAY = 86_400_000;
const LIMIT_MAX = 1e12;
const WINDOW_MAX = 10_000 * DAY; // 864000000000 ms
/** A fixed instant, a whole ms, some way into a 10000-day window. */
const NOW = 1_750_000_000_123;

/** Throws a SluiceError with `code` whose message matches `message`. */
function throwsWith(f: () => unknown, code: string, message: RegExp): void {
  let caught: unknown;
  try {
    f();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(Error);
  expect((caught as { code?: string }).code).toBe(code);
  expect((caught as Error).message).toMatch(message);
}

/** Every number a decision holds is finite, non-negative and whole (retry in whole ms), and its headers parse. */
function expectSane(d: Decision): void {
  const numbers = [d.retryAfterMs, ...[d, ...d.policies].flatMap((p) => [p.limit, p.remaining, p.resetMs])];
  expect(numbers.filter((n) => !Number.isSafeInteger(n) || n < 0)).toEqual([]);
  expectHeaders(d);
}

/** The decision's headers parse: RateLimit fields are integers of at most 15 digits, Retry-After too. */
function expectHeaders(d: Decision): void {
  const h = rateLimitHeaders(d, { headers: 'both' });
  // The strict parser takes integers of at most 15 digits and throws on anything else.
  const fields = [...parseSfList(h['RateLimit-Policy'] as string), ...parseSfList(h.RateLimit as string)];
  for (const { params } of fields) {
    for (const v of Object.values(params)) expect(Number.isSafeInteger(v) && (v as number) >= 0 && String(v).length <= 15).toBe(true);
  }
  expect(fields.map((f) => Object.keys(f.params).join())).toEqual([
    ...d.policies.map((p) => (p.concurrent ? 'q' : 'q,w')),
    ...d.policies.map(() => 'r,t'),
  ]);
  if (!d.allowed) expect(h['Retry-After']).toMatch(/^[1-9]\d{0,14}$/);
  for (const v of Object.values(h)) expect(v).not.toMatch(/NaN|Infinity|e\+|=-|^-/);
}

interface Case {
  name: string;
  policy: PolicyInput;
  /** The most one request may cost. */
  capacity: number;
  /** A concurrent policy: a request takes a slot, given back by release(). */
  slots?: boolean;
  /** resetMs after the first unit, and the denial's retryAfterMs once full (undefined: only checked sane and alike). */
  resetMs?: number;
  retryAfterMs?: number;
}

const fixedEnd = (Math.floor(NOW / WINDOW_MAX) + 1) * WINDOW_MAX - NOW;
/** The cases at the bounds: each limit, window, lease and token-bucket product at its most. */
const AT_BOUNDS: Case[] = [
  {
    name: 'fixed-window: limit 1e12, window 10000 days',
    policy: { limit: LIMIT_MAX, window: WINDOW_MAX, algorithm: 'fixed-window' },
    capacity: LIMIT_MAX,
    resetMs: fixedEnd,
    retryAfterMs: fixedEnd,
  },
  {
    name: "sliding-window: limit 1e12, window '10000d'",
    policy: { limit: LIMIT_MAX, window: '10000d', algorithm: 'sliding-window' },
    capacity: LIMIT_MAX,
    resetMs: fixedEnd + WINDOW_MAX,
  },
  {
    name: 'sliding-log: limit 10000, window 10000 days',
    policy: { limit: 10_000, window: WINDOW_MAX, algorithm: 'sliding-log' },
    capacity: 10_000,
    resetMs: WINDOW_MAX,
    retryAfterMs: WINDOW_MAX,
  },
  {
    name: "calendar: '1000000000000/month'",
    policy: '1000000000000/month',
    capacity: LIMIT_MAX,
  },
  {
    name: 'token-bucket: limit and burst 1e12 over 9 ms (burst × window = 9e12)',
    policy: { limit: LIMIT_MAX, window: 9 },
    capacity: LIMIT_MAX,
    resetMs: 1, // a unit refills in 9e-12 ms: up to whole ms
    retryAfterMs: 1,
  },
  {
    name: "token-bucket: '104166/1d' (burst × window = 8.99994e12)",
    policy: '104166/1d',
    capacity: 104_166,
    resetMs: Math.ceil(DAY / 104_166), // a unit refills in 829.4 ms
    retryAfterMs: Math.ceil(DAY / 104_166),
  },
  {
    name: 'token-bucket: limit 1 over 10000 days',
    policy: { limit: 1, window: WINDOW_MAX },
    capacity: 1,
    resetMs: WINDOW_MAX,
    retryAfterMs: WINDOW_MAX,
  },
  {
    name: 'token-bucket: burst 10, limit 1 over 1000 days (refill from empty = 10000 days)',
    policy: { limit: 1, burst: 10, window: WINDOW_MAX / 10 },
    capacity: 10,
    resetMs: WINDOW_MAX / 10,
    retryAfterMs: WINDOW_MAX / 10,
  },
  {
    name: 'concurrent: 1e12 slots, lease 10000 days',
    policy: { concurrent: LIMIT_MAX, lease: WINDOW_MAX },
    capacity: LIMIT_MAX,
    slots: true,
  },
];

/** One scenario at a bound: a unit, the rest of the capacity, a denial; every decision checked. */
async function atBound(l: Pick<Limiter, 'consume' | 'peek'>, c: Case): Promise<Decision[]> {
  const seen: Decision[] = [];
  const first = await l.consume('k');
  seen.push(first);
  expect(first.allowed).toBe(true);
  expect(first.remaining).toBe(c.capacity - 1);
  if (c.resetMs !== undefined) expect(first.resetMs).toBe(c.resetMs);
  if (c.slots) {
    await first.release?.();
    seen.push(await l.peek('k'));
    expect(seen[1]!.remaining).toBe(LIMIT_MAX);
  } else {
    if (c.capacity > 1) {
      const rest = await l.consume('k', { cost: c.capacity - 1 });
      seen.push(rest);
      expect(rest.allowed).toBe(true);
      expect(rest.remaining).toBe(0);
    }
    const denied = await l.consume('k');
    seen.push(denied);
    expect(denied.allowed).toBe(false);
    expect(denied.remaining).toBe(0);
    if (c.retryAfterMs !== undefined) expect(denied.retryAfterMs).toBe(c.retryAfterMs);
    expect(denied.retryAfterMs).toBeGreaterThan(0);
    // A fractional cost at the bound (a sliding log counts whole units): still decided, still sane.
    if (!JSON.stringify(c.policy).includes('sliding-log')) seen.push(await l.consume('k', { cost: 0.5 }));
  }
  for (const d of seen) expectSane(d);
  return seen;
}

/**
 * A token bucket at its product bound, with odd numbers (no factor of 2 to hide a rounding), against the
 * same bucket counted exactly in BigInt: tokens × window in µs, refilled by `limit` per µs. `l` reads the
 * clock that `setClock` sets. Returns the decisions' remaining and the exact ones.
 */
async function exactTokenBucket(
  l: Pick<Limiter, 'consume'>,
  setClock: (ms: number) => void,
  limit: number,
  windowMs: number,
): Promise<[number[], number[]]> {
  let us = 0;
  setClock(NOW);
  const L = BigInt(limit);
  const w = BigInt(windowMs * 1000);
  const full = L * w;
  let debt = 0n;
  let at = 0;
  let seed = 7;
  const random = (n: number) => {
    seed = (seed * 48_271) % 2_147_483_647;
    return seed % n;
  };
  const got: number[] = [];
  const want: number[] = [];
  for (let i = 0; i < 60; i++) {
    us += random(4);
    setClock(NOW + us / 1000);
    debt -= BigInt(us - at) * L;
    if (debt < 0n) debt = 0n;
    at = us;
    const cost = i % 7 === 0 ? 1 + random(limit) : 1 + random(5);
    const d = await l.consume('k', { cost });
    const ok = full - debt >= BigInt(cost) * w;
    if (ok) debt += BigInt(cost) * w;
    expect(d.allowed).toBe(ok);
    got.push(d.remaining);
    want.push(Number((full - debt) / w));
  }
  return [got, want];
}

describe('numbers at their edges', () => {
  describe('construction refuses what is past a bound, naming it', () => {
    const O = 'ERR_SLUICE_OPTION';
    const past: Array<[string, () => unknown, RegExp]> = [
      // The reported cases.
      [
        'limit 1e15 (16 digits in q and r)',
        () => createLimiter({ policy: '1000000000000000/1s' }),
        /^policy\.limit must be at most 1000000000000 \(1e\+12\), got 1000000000000000$/,
      ],
      [
        'limit 1e15, an object',
        () => createLimiter({ policy: { limit: 1e15, window: '1s', algorithm: 'fixed-window' } }),
        /policy\.limit must be at most 1000000000000/,
      ],
      [
        'window 1e308',
        () => createLimiter({ policy: { limit: 10, window: 1e308 } }),
        /^policy\.window must be at most 10000 days \(864000000000 ms\), got 1e\+308$/,
      ],
      [
        "window '99999999d'",
        () => createLimiter({ policy: '5/99999999d' }),
        /^policy\.window must be at most 10000 days \(864000000000 ms\), got "99999999d"$/,
      ],
      // Just past each bound.
      [
        'limit 1e12 + 1',
        () => createLimiter({ policy: { limit: LIMIT_MAX + 1, window: '1s', algorithm: 'sliding-window' } }),
        /policy\.limit must be at most 1000000000000/,
      ],
      [
        'limit Infinity',
        () => createLimiter({ policy: { limit: Number.POSITIVE_INFINITY, window: '1s' } }),
        /policy\.limit must be at most 1000000000000/,
      ],
      [
        'burst 1e12 + 1',
        () => createLimiter({ policy: { limit: 1, window: 1, burst: LIMIT_MAX + 1 } }),
        /policy\.burst must be at most 1000000000000/,
      ],
      [
        'concurrent 1e12 + 1',
        () => createLimiter({ policy: { concurrent: LIMIT_MAX + 1 } }),
        /policy\.concurrent must be at most 1000000000000/,
      ],
      [
        'window 10000 days + 1 ms',
        () => createLimiter({ policy: { limit: 1, window: WINDOW_MAX + 1, algorithm: 'fixed-window' } }),
        /policy\.window must be at most 10000 days \(864000000000 ms\)/,
      ],
      [
        "window '10001d'",
        () => createLimiter({ policy: { limit: 1, window: '10001d', algorithm: 'sliding-log' } }),
        /policy\.window must be at most 10000 days/,
      ],
      [
        'window under 1 ms',
        () => createLimiter({ policy: { limit: 1, window: 0.999, algorithm: 'fixed-window' } }),
        /policy\.window must be at least 1 ms, got 0\.999/,
      ],
      ["window '0.5ms'", () => createLimiter({ policy: '5/0.5ms' }), /policy\.window must be at least 1 ms/],
      [
        'lease 10000 days + 1 ms',
        () => createLimiter({ policy: { concurrent: 2, lease: WINDOW_MAX + 1 } }),
        /policy\.lease must be at most 10000 days \(864000000000 ms\)/,
      ],
      ['lease under 1 ms', () => createLimiter({ policy: { concurrent: 2, lease: 0.5 } }), /policy\.lease must be at least 1 ms/],
      [
        'token-bucket refill from empty past 10000 days',
        () => createLimiter({ policy: { limit: 1, burst: 10.5, window: WINDOW_MAX / 10 } }),
        /policy\.burst must be at most 10 with limit 1 over 86400000s, got 10\.5 \(an empty bucket refills in burst \/ limit × window, at most 10000 days/,
      ],
      // Token buckets above 9e12 units × ms ('1000000/1d') are taken: their count rounds by < 1e-9 of a token.
      // Policies elsewhere are policies too.
      [
        'prefilter',
        () => createLimiter({ policy: '10/1s', prefilter: { limit: 1, window: 1e308 } }),
        /prefilter\.window must be at most 10000 days/,
      ],
      [
        'fallback',
        () => createLimiter({ policy: '10/1s', fallback: ['5/1s', '1000000000000000/1s'] }),
        /fallback\[1\]\.limit must be at most 1000000000000/,
      ],
      ["an adapter's windowMs", () => rateLimit({ windowMs: 1e308, limit: 5 }), /window must be at most 10000 days/],
    ];
    test.each(past)('%s', (_, f, message) => throwsWith(f, O, message));

    test('a call: its policy, its cost (with only concurrent policies, no capacity bounds it) and its delta', async () => {
      const l = createLimiter({ policy: '10/1s' });
      await expect(l.consume('k', { policy: '5/99999999d' })).rejects.toMatchObject({
        code: O,
        message: expect.stringMatching(/policy\.window must be at most 10000 days/),
      });
      await expect(l.consume('k', { policy: { concurrent: 2, lease: '10001d' } })).rejects.toMatchObject({ code: O });
      const slots = createLimiter({ policy: { concurrent: 2 } });
      await expect(slots.consume('k', { cost: LIMIT_MAX + 1 })).rejects.toMatchObject({
        code: 'ERR_SLUICE_COST',
        message: 'cost must be at most 1000000000000 (1e+12), got 1000000000001',
      });
      expect((await slots.consume('k', { cost: LIMIT_MAX })).allowed).toBe(true);
      await expect(l.adjust('k', LIMIT_MAX + 1)).rejects.toMatchObject({
        code: O,
        message: expect.stringMatching(/^delta must be at most 1000000000000 \(1e\+12\) either way/),
      });
      await expect(l.adjust('k', -1e308)).rejects.toMatchObject({ code: O });
      // A token bucket's debt is a wait: at most 10000 days of it per call.
      await expect(l.adjust('k', 8_640_000_001)).rejects.toMatchObject({
        code: O,
        message: expect.stringMatching(
          /^delta must be at most 8640000000 with policy "10-per-1s" \(delta \/ limit × window, the wait it adds, at most 10000 days\)/,
        ),
      });
      // 8640000000 - 10 units of debt past the 10 the bucket holds, and 1 more, at 10 per s: exact to the ms.
      expect((await l.adjust('k', 8_640_000_000)).retryAfterMs).toBe(863_999_999_100);
      await expect(createLimiter({ policy: { limit: 1, window: WINDOW_MAX } }).adjust('k', 2)).rejects.toMatchObject({ code: O });
      const log = createLimiter({ policy: { limit: 5, window: '1s', algorithm: 'sliding-log' } });
      await expect(log.adjust('k', 10_001)).rejects.toMatchObject({
        code: O,
        message: expect.stringMatching(/delta must be at most 10000 with a 'sliding-log' policy/),
      });
      expect((await log.adjust('k', 10_000)).allowed).toBe(false);
    });

    test('at each bound, construction passes', () => {
      for (const c of AT_BOUNDS) expect(() => createLimiter({ policy: c.policy })).not.toThrow();
      expect(() => createLimiter({ policy: { limit: 1, window: 1, algorithm: 'fixed-window' } })).not.toThrow();
      expect(() => createLimiter({ policy: { concurrent: 1, lease: 1 } })).not.toThrow();
      expect(() => createLimiter({ policy: '100000/1d' })).not.toThrow();
    });
  });

  describe('memory store: decisions at the bounds are exact and sane', () => {
    test.each(AT_BOUNDS.map((c) => [c.name, c] as const))('%s', async (_, c) => {
      const l = createLimiter({ policy: c.policy, store: memoryStore({ clock: () => NOW }) });
      await atBound(l, c);
    });

    test.each([
      [999_999_999_989, 9],
      [104_161, 86_400_001],
    ])('token-bucket %d per %d ms (burst × window just under 9e12): exact against BigInt', async (limit, windowMs) => {
      let now = NOW;
      const l = createLimiter({ policy: { limit, window: windowMs }, store: memoryStore({ clock: () => now }) });
      const [got, want] = await exactTokenBucket(l, (ms) => (now = ms), limit, windowMs);
      expect(got).toEqual(want);
    });

    test('a wait past what a header field carries (a debt of many adjusts) is written as 15 nines', () => {
      const d = { ...(undefined as unknown as Decision) };
      const wait = 8.64e23;
      const policy = { name: '1-per-864000000s', limit: 1, windowMs: WINDOW_MAX, remaining: 0, resetMs: wait, retryAfterMs: wait };
      Object.assign(d, {
        allowed: false,
        limit: 1,
        remaining: 0,
        resetMs: wait,
        retryAfterMs: wait,
        policy: policy.name,
        policies: [policy],
        source: 'store',
      });
      const h = rateLimitHeaders(d);
      expect(h.RateLimit).toBe('"1-per-864000000s";r=0;t=999999999999999');
      expect(h['Retry-After']).toBe('999999999999999');
      expectHeaders(d);
    });

    test('fractional costs, tiny and not, at the bounds: nothing NaN, no negative retry', async () => {
      const l = createLimiter({
        policy: [
          { limit: LIMIT_MAX, window: 9 },
          { limit: LIMIT_MAX, window: WINDOW_MAX, algorithm: 'fixed-window' },
        ],
        store: memoryStore({ clock: () => NOW }),
      });
      for (const cost of [1e-9, 0.001, 0.5, 2.25, LIMIT_MAX - 0.5]) expectSane(await l.consume('k', { cost }));
      expectSane(await l.consume('k', { cost: 1 }));
    });
  });

  // Each call on Redis and on the memory store alike (test/support/differential.ts), and checked as above.
  describe('real Redis: the Lua decides the same, exactly, at the bounds', () => {
    let server: Awaited<ReturnType<typeof startRedis>>;
    let client: Redis;
    beforeAll(async () => {
      ({ server, client } = await startRedisWithClient());
    });
    afterAll(() => stopRedisWithClient({ server, client }));

    test.each(AT_BOUNDS.map((c) => [c.name, c] as const))('%s', async (_, c) => {
      const both = differential({ client, policy: c.policy, start: NOW });
      for (const d of await atBound(both, c)) expect(d.source).toBe('store');
      await both.close();
    });

    test.each([
      [999_999_999_989, 9],
      [104_161, 86_400_001],
    ])('token-bucket %d per %d ms (burst × window just under 9e12): exact against BigInt', async (limit, windowMs) => {
      const both = differential({ client, policy: { limit, window: windowMs } });
      const [got, want] = await exactTokenBucket(both, (ms) => (both.now = ms), limit, windowMs);
      expect(got).toEqual(want);
      await both.close();
    });

    test('debts charged by adjust on a token bucket of 10000 days: waited out alike, capped, never wrapped into a full bucket', async () => {
      const l = differential({ client, policy: { limit: 1, window: WINDOW_MAX }, start: NOW });
      // Unbounded, adjust(+10000) would be taken, and on Redis a second one would wrap the bucket's instant past
      // 2^63 µs: full again.
      await expect(l.adjust('k', 10_000)).rejects.toMatchObject({ code: 'ERR_SLUICE_OPTION' });
      // A debt stops at 10000 days past a full refill (here 2 × 10000 days to a token), however many adjust.
      for (let k = 1; k <= 30; k++) {
        const d = await l.adjust('k', 1);
        expect([d.source, d.allowed, d.remaining, d.retryAfterMs]).toEqual(['store', false, 0, Math.min(k, 2) * WINDOW_MAX]);
        expectSane(d);
      }
      const denied = await l.consume('k');
      expect([denied.allowed, denied.retryAfterMs]).toEqual([false, 2 * WINDOW_MAX]);
      await l.close();
    });

    test('an id recorded for the longest window (10000 days) is replayed, and the key lives that long', async () => {
      const prefix = uniquePrefix();
      const l = createLimiter({
        policy: { limit: 2, window: WINDOW_MAX, algorithm: 'fixed-window' },
        store: redisStore({ client, clock: () => NOW }),
        prefix,
        denyCache: false,
        timeout: 5000,
      });
      const first = await l.consume('k', { id: 'job' });
      const again = await l.consume('k', { id: 'job' });
      expect([first.source, again.source]).toEqual(['store', 'store']);
      expect([first.remaining, again.remaining]).toEqual([1, 1]);
      const keys = await client.keys(`${prefix}*`);
      expect(keys.length).toBe(2);
      for (const key of keys) {
        const ttl = await client.pttl(key);
        expect(ttl).toBeGreaterThan(fixedEnd - 10_000);
        expect(ttl).toBeLessThanOrEqual(WINDOW_MAX + 3_600_000);
      }
      await l.close();
    });

    test('fractional costs at the bounds decide as on the memory store', async () => {
      const policy: PolicyInput[] = [
        { limit: LIMIT_MAX, window: 9 },
        { limit: LIMIT_MAX, window: WINDOW_MAX, algorithm: 'fixed-window' },
      ];
      const both = differential({ client, policy, start: NOW });
      for (const cost of [1e-9, 0.001, 0.5, 2.25, LIMIT_MAX - 0.5, 1]) {
        const d = await both.consume('k', { cost });
        expect(d.source).toBe('store');
        expectSane(d);
      }
      await both.close();
    });
  });
});
