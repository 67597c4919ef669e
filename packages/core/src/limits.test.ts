// adjust, idempotent ids and concurrent policies on the memory store: semantics and refused combinations.
// (test/limits.redis.test.ts holds the Lua to the same on random sequences.)

import { rateLimitHeaders } from './headers.js';
import { createLimiter } from './limiter.js';
import type { Store } from './store/contract.js';
import { memoryStore } from './store/memory-store.js';

describe('refused combinations name the option', () => {
  const bad: Array<[unknown, RegExp]> = [
    [{ policy: { concurrent: 0 } }, /policy\.concurrent must be a positive integer/],
    [{ policy: { concurrent: 2, lease: 0 } }, /policy\.lease/],
    [{ policy: { concurrent: 2, limit: 5 } }, /policy\.limit must be absent/],
    [
      { policy: { limit: 5, window: '1m', algorithm: 'concurrent' } },
      /policy\.algorithm must be one of .*token-bucket, got "concurrent" \(for requests in flight: \{ concurrent: N \}\)/,
    ],
    [{ policy: ['10/1m', { concurrent: 2 }], shards: 2 }, /shards must be 1 with a concurrent policy/],
    [{ policy: ['10/1m', { concurrent: 2 }], prefilter: '5/1s' }, /prefilter must be absent with a concurrent policy/],
    [{ policy: '10/1m', prefilter: { concurrent: 2 } }, /prefilter must be a rate policy/],
  ];
  test.each(bad)('%j throws', (options, message) => {
    expect(() => createLimiter(options as never)).toThrow(message);
  });

  test('id: a non-empty string, and not with a concurrent policy', async () => {
    await expect(createLimiter({ policy: '3/1m' }).consume('k', { id: '' })).rejects.toThrow(/id must be a non-empty string/);
    await expect(createLimiter({ policy: '3/1m' }).consume('k', { id: 5 as never })).rejects.toThrow(/got 5/);
    const slots = createLimiter({ policy: ['3/1m', { concurrent: 1 }] });
    await expect(slots.consume('k', { id: 'job-1' })).rejects.toThrow(/id must be absent on a limiter with a concurrent policy/);
  });

  test('adjust: a finite delta, whole with sliding-log, shards 1, a rate policy', async () => {
    await expect(createLimiter({ policy: '3/1m' }).adjust('k', Number.NaN)).rejects.toThrow(/delta must be a finite number/);
    const log = createLimiter({ policy: { limit: 3, window: '1m', algorithm: 'sliding-log' } });
    await expect(log.adjust('k', -0.5)).rejects.toThrow(/delta must be a whole number with a 'sliding-log' policy/);
    await expect(createLimiter({ policy: '4/1m', shards: 2 }).adjust('k', -1)).rejects.toThrow(/shards must be 1 for limiter.adjust/);
    await expect(createLimiter({ policy: { concurrent: 2 } }).adjust('k', -1)).rejects.toThrow(/at least one rate policy/);
  });
});

describe('adjust (memory)', () => {
  test.each(['token-bucket', 'fixed-window', 'sliding-window', 'sliding-log'] as const)(
    '%s: a refund never passes full; a charge past the limit is a debt later requests wait out',
    async (algorithm) => {
      let now = 1_000_000;
      const l = createLimiter({ policy: { limit: 10, window: '1m', algorithm }, store: memoryStore({ clock: () => now }) });
      for (let i = 0; i < 4; i++) await l.consume('k');
      expect((await l.adjust('k', -3)).remaining).toBe(9);
      expect((await l.adjust('k', -50)).remaining).toBe(10);
      const owed = await l.adjust('k', 25);
      expect(owed.allowed).toBe(false);
      expect(owed.remaining).toBe(0);
      expect(owed.retryAfterMs).toBeGreaterThan(0);
      const denied = await l.consume('k');
      expect(denied.allowed).toBe(false);
      now += 60_000 * 3;
      expect((await l.consume('k')).allowed).toBe(true);
    },
  );

  test('adjust with policy: only that policy moves; the others are left alone', async () => {
    const l = createLimiter({ policy: ['10/1m', '100/1h'] });
    await l.consume('k', { cost: 5 });
    const d = await l.adjust('k', -5, { policy: '100/1h' });
    expect(d.policies.map((p) => [p.name, p.remaining])).toEqual([['100-per-3600s', 100]]);
    expect((await l.peek('k')).policies.map((p) => p.remaining)).toEqual([5, 100]);
  });

  test('a refund clears a cached denial: the next consume passes', async () => {
    const store = memoryStore();
    // A store that is not local, so the deny cache is in front of it.
    const remote = { ...store, local: false };
    const l = createLimiter({ policy: '2/1h', store: remote });
    await l.consume('k');
    await l.consume('k');
    expect((await l.consume('k')).source).toBe('store');
    expect((await l.consume('k')).source).toBe('deny-cache');
    await l.adjust('k', -1);
    const after = await l.consume('k');
    expect(after).toMatchObject({ allowed: true, source: 'store' });
  });
});

describe('idempotent consume (memory)', () => {
  test('an id charges once; a denied id records nothing, so its retry is decided afresh', async () => {
    const l = createLimiter({ policy: '2/1h' });
    expect((await l.consume('k', { id: 'a' })).remaining).toBe(1);
    const again = await l.consume('k', { id: 'a' });
    expect(again).toMatchObject({ allowed: true, remaining: 1 });
    await l.consume('k');
    expect((await l.consume('k', { id: 'b' })).allowed).toBe(false);
    await l.adjust('k', -1);
    expect((await l.consume('k', { id: 'b' })).allowed).toBe(true);
    expect((await l.consume('k', { id: 'b' })).allowed).toBe(true);
    expect((await l.peek('k')).remaining).toBe(0);
  });

  test('ids count per key, and expire after the longest window', async () => {
    let now = 0;
    const hourly = { limit: 50, window: '1h', algorithm: 'fixed-window' } as const;
    const l = createLimiter({ policy: ['5/1s', hourly], store: memoryStore({ clock: () => now }) });
    await l.consume('k', { id: 'x' });
    await l.consume('j', { id: 'x' });
    expect((await l.peek('j')).policies[1]!.remaining).toBe(49);
    now += 3_599_000;
    await l.consume('k', { id: 'x' });
    expect((await l.peek('k')).policies[1]!.remaining).toBe(49);
    now += 2_000;
    // A new hour: the id's record is gone with the window it was charged in, so this one charges.
    await l.consume('k', { id: 'x' });
    expect((await l.peek('k')).policies[1]!.remaining).toBe(49);
  });

  test('with shards, an id always goes to one shard: its retries charge nothing', async () => {
    const inner = memoryStore();
    const seen: string[] = [];
    const remaining: number[] = [];
    const store: Store = {
      local: true,
      decide: async (request) => {
        const reply = await inner.decide(request);
        seen.push(request.keys.join(' '));
        remaining.push(reply.states[0]!.remaining);
        return reply;
      },
      reset: (keys) => inner.reset(keys),
      close: () => inner.close(),
    };
    const l = createLimiter({ policy: '100/1h', shards: 4, store });
    for (let i = 0; i < 20; i++) expect((await l.consume('k', { id: 'same' })).allowed).toBe(true);
    expect(new Set(seen).size).toBe(1);
    expect(new Set(remaining)).toEqual(new Set([24]));
  });
});

describe('concurrent policies (memory)', () => {
  test('slots: taken up to N, given back by release() (idempotent), with the rate policy charged alike', async () => {
    const l = createLimiter({ policy: ['10/1m', { concurrent: 2 }] });
    const a = await l.consume('k');
    const b = await l.consume('k');
    const c = await l.consume('k');
    expect([a.allowed, b.allowed, c.allowed]).toEqual([true, true, false]);
    expect(c.release).toBeUndefined();
    expect(c.policy).toBe('2-in-flight');
    // A denial by either takes nothing: the rate policy still has 8.
    expect((await l.peek('k')).policies[0]!.remaining).toBe(8);
    await a.release!();
    await a.release!();
    expect((await l.peek('k')).policies[1]!.remaining).toBe(1);
    expect((await l.consume('k')).allowed).toBe(true);
    expect((await l.consume('k')).allowed).toBe(false);
  });

  test('a slot not released frees itself when its lease ends', async () => {
    let now = 0;
    const l = createLimiter({ policy: { concurrent: 1, lease: '10s' }, store: memoryStore({ clock: () => now }) });
    expect((await l.consume('k')).allowed).toBe(true);
    now += 9_999;
    expect((await l.consume('k')).allowed).toBe(false);
    now += 2;
    expect((await l.consume('k')).allowed).toBe(true);
  });

  test('headers: q slots and no w; a concurrency 429 says Retry-After 1 and t=1; allowed, a rate policy binds', async () => {
    const l = createLimiter({ policy: ['10/1m', { concurrent: 1, name: 'one-at-a-time' }] });
    const held = await l.consume('k');
    expect(held.policy).toBe('10-per-60s');
    expect(rateLimitHeaders(held)['RateLimit-Policy']).toBe('"10-per-60s";q=10;w=60, "one-at-a-time";q=1');
    const denied = await l.consume('k');
    const headers = rateLimitHeaders(denied, { headers: 'both' });
    expect(headers['Retry-After']).toBe('1');
    expect(headers.RateLimit).toMatch(/"one-at-a-time";r=0;t=1$/);
    expect(headers['X-RateLimit-Limit']).toBe('1');
  });
});
