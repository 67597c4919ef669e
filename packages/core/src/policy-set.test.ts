// Per-call policies (plans) through every stage of the limiter, on the memory store and on stores that
// are not in this process (a memory store seen as remote, one that fails): the deny cache, shards, the
// prefilter, the fallback and shadow mode. Redis itself: test/plans.redis.test.ts.
import { createLimiter } from './limiter.js';
import type { PolicyInput } from './policy/policy.js';
import type { Store, StoreRequest } from './store/contract.js';
import { memoryStore } from './store/memory-store.js';

/** A memory store the limiter treats as remote (deny cache, fail mode in front), recording its requests. */
function remote(clock: () => number): Store & { requests: StoreRequest[] } {
  const inner = memoryStore({ clock });
  const requests: StoreRequest[] = [];
  return {
    local: false,
    requests,
    decide: (request) => {
      requests.push(request);
      return inner.decide(request);
    },
    reset: (keys) => inner.reset(keys),
    close: () => inner.close(),
  };
}

const failing: Store = {
  local: false,
  decide: () => Promise.reject(new Error('store down')),
  reset: async () => {},
  close: async () => {},
};

describe('consume(key, { policy })', () => {
  const now = 1_700_000_000_000;
  const clock = () => now;

  it("decides by the call's policies; the limiter's own count apart", async () => {
    const l = createLimiter({ policy: '5/1m', store: memoryStore({ clock }) });
    const free = await l.consume('u', { policy: '2/1m' });
    expect(free).toMatchObject({ allowed: true, limit: 2, remaining: 1, policy: '2-per-60s' });
    expect((await l.consume('u', { policy: '2/1m' })).allowed).toBe(true);
    expect((await l.consume('u', { policy: '2/1m' })).allowed).toBe(false);
    expect(await l.consume('u')).toMatchObject({ allowed: true, limit: 5, remaining: 4 });
  });

  it('several policies per call are one atomic decision: a denial by either charges neither', async () => {
    const l = createLimiter({ store: memoryStore({ clock }) });
    const plan: PolicyInput[] = ['10/s', '2/day'];
    expect((await l.consume('u', { policy: plan })).allowed).toBe(true);
    expect((await l.consume('u', { policy: plan })).allowed).toBe(true);
    const denied = await l.consume('u', { policy: plan });
    expect(denied).toMatchObject({ allowed: false, policy: '2-per-day' });
    expect(denied.policies[0]).toMatchObject({ name: '10-per-1s', remaining: 8 });
  });

  it('a plan object built per request is parsed once and counts with equal plans (contents, not identity)', async () => {
    const l = createLimiter({ store: memoryStore({ clock }) });
    for (let i = 0; i < 3; i++) expect((await l.consume('u', { policy: { limit: 3, window: '1m' } })).allowed).toBe(true);
    expect((await l.consume('u', { policy: { limit: 3, window: '1m' } })).allowed).toBe(false);
    // The same numbers under another name share the counters (a policy's id is its numbers).
    expect((await l.consume('u', { policy: { limit: 3, window: 60_000, name: 'other' } })).allowed).toBe(false);
  });

  it('a plan object changed in place is read afresh; an object with a getter (not plain) is parsed each time', async () => {
    const l = createLimiter({ store: memoryStore({ clock }) });
    const plan: { limit: number; window: string } = { limit: 1, window: '1h' };
    expect((await l.consume('u', { policy: plan as PolicyInput })).limit).toBe(1);
    plan.limit = 5;
    expect((await l.consume('u', { policy: plan as PolicyInput })).limit).toBe(5);
    class Plan {
      constructor(private readonly n: number) {}
      get limit() {
        return this.n;
      }
      get window() {
        return '1h';
      }
    }
    expect((await l.consume('v', { policy: new Plan(2) as never })).limit).toBe(2);
    expect((await l.consume('v', { policy: new Plan(3) as never })).limit).toBe(3);
  });

  it('a plan object in use while the cache lets its set go is parsed again: a reset reaches its denials', async () => {
    const l = createLimiter({ store: remote(clock) });
    const plan = (): PolicyInput => ({ limit: 1, window: '1h' });
    expect((await l.consume('u', { policy: plan() })).allowed).toBe(true);
    expect((await l.consume('u', { policy: plan() })).allowed).toBe(false); // held by the deny cache
    // 1,000 other plans (lists, which only the cache keeps) push the plan's set out of the cache.
    for (let i = 0; i < 1_000; i++) await l.consume(`other-${i}`, { policy: [{ limit: 2 + i, window: '1h' }] });
    await l.reset('u', { policy: plan() });
    expect((await l.consume('u', { policy: plan() })).allowed).toBe(true);
  });

  it("a rate plan's counters are its own: flipping plans returns to the old plan's counters, not a fresh bucket", async () => {
    const l = createLimiter({ store: memoryStore({ clock }) });
    for (let i = 0; i < 2; i++) await l.consume('u', { policy: '2/1h' });
    expect((await l.consume('u', { policy: '2/1h' })).allowed).toBe(false);
    expect(await l.consume('u', { policy: '10/1h' })).toMatchObject({ allowed: true, remaining: 9 });
    expect((await l.consume('u', { policy: '2/1h' })).allowed).toBe(false);
  });

  it.each<[unknown, RegExp]>([
    [100, /^policy must be a string like '100\/1m'/],
    ['ten per second', /^policy must be a string like/],
    [{ limit: 0, window: '1m' }, /^policy\.limit must be a positive integer, got 0/],
    [[], /^policy must be a policy or a non-empty array/],
    [['1/s', { limit: 1, window: 'hour' }], /^policy\[1\]\.window must be/],
    [{ limit: 1, window: 'day', timeZone: 'Nowhere/City' }, /^policy\.timeZone must be an IANA time zone/],
    [{ limit: 1, window: '1m', name: () => 'x' }, /^policy\.name must be printable ASCII/],
  ])('a bad policy %j rejects with ERR_SLUICE_OPTION naming it', async (policy, message) => {
    const l = createLimiter({ policy: '1/s' });
    const error = await l.consume('k', { policy: policy as never }).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'SluiceError', code: 'ERR_SLUICE_OPTION' });
    expect((error as Error).message).toMatch(message);
    // Refused each time, not only when first seen.
    await expect(l.consume('k', { policy: policy as never })).rejects.toThrow(message);
  });

  it('a limiter without a policy needs one on every call', async () => {
    const l = createLimiter({});
    await expect(l.consume('k')).rejects.toMatchObject({
      code: 'ERR_SLUICE_OPTION',
      message: expect.stringMatching(/^policy must be given to this call/),
    });
    expect((await l.consume('k', { policy: '1/s' })).allowed).toBe(true);
  });

  it('a call policy that the shards cannot split is refused naming policy', async () => {
    const l = createLimiter({ policy: '100/1m', shards: 4, store: memoryStore({ clock }) });
    await expect(l.consume('k', { policy: '3/1m' })).rejects.toThrow(/^policy must be limits of at least 4/);
    // Shards split a call's plan too: 8 over 4 shards admits 8, never more.
    const results = await Promise.all(Array.from({ length: 20 }, () => l.consume('hot', { policy: '8/1h' })));
    expect(results.filter((d) => d.allowed).length).toBeLessThanOrEqual(8);
    expect(results.filter((d) => d.allowed).length).toBeGreaterThanOrEqual(4);
    expect(results.every((d) => d.limit === 8)).toBe(true);
  });

  it("the deny cache answers a plan only from that plan's denial", async () => {
    const store = remote(clock);
    const l = createLimiter({ store, clock: () => now });
    await l.consume('u', { policy: '1/1h' });
    expect((await l.consume('u', { policy: '1/1h' })).source).toBe('store');
    expect(await l.consume('u', { policy: '1/1h' })).toMatchObject({ allowed: false, source: 'deny-cache' });
    // Another plan on the same key goes to the store, which allows it.
    const calls = store.requests.length;
    expect(await l.consume('u', { policy: '5/1h' })).toMatchObject({ allowed: true, source: 'store', limit: 5 });
    expect(store.requests.length).toBe(calls + 1);
    // A set that shares the denied policy is still asked of the store, not answered from another set's denial.
    expect(await l.consume('u', { policy: ['1/1h', '9/1d'] })).toMatchObject({ allowed: false, source: 'store' });
  });

  it("the deny cache: an upgraded quota (the same counter, a higher limit) is the store's to decide", async () => {
    const l = createLimiter({ store: remote(clock), clock: () => now });
    await l.consume('u', { policy: '1/day' });
    expect((await l.consume('u', { policy: '1/day' })).source).toBe('store');
    expect((await l.consume('u', { policy: '1/day' })).source).toBe('deny-cache');
    expect(await l.consume('u', { policy: '3/day' })).toMatchObject({ allowed: true, source: 'store', remaining: 1 });
    // The same numbers under another name: its own name in the decision, so not the cached one.
    expect(await l.consume('u', { policy: { limit: 1, window: 'day', name: 'free' } })).toMatchObject({ source: 'store', policy: 'free' });
  });

  it('the deny cache holds a quota denial for a second at most, not until the period ends', async () => {
    let t = 0;
    const wall = Date.parse('2024-05-01T01:00:00Z');
    const l = createLimiter({ store: remote(() => wall), clock: () => t, policy: '1/day' });
    await l.consume('u');
    const denied = await l.consume('u');
    expect(denied).toMatchObject({ allowed: false, source: 'store', retryAfterMs: 23 * 3_600_000 });
    t = 999;
    expect(await l.consume('u')).toMatchObject({ source: 'deny-cache', retryAfterMs: 23 * 3_600_000 - 999 });
    t = 1000;
    expect((await l.consume('u')).source).toBe('store');
  });

  it("the deny cache: a reset under one plan also drops another plan's denials of the counters they share", async () => {
    const l = createLimiter({ store: remote(clock), clock: () => now });
    await l.consume('u', { policy: ['1/day', '5/1h'] });
    await l.consume('u', { policy: ['1/day', '5/1h'] });
    expect((await l.consume('u', { policy: ['1/day', '5/1h'] })).source).toBe('deny-cache');
    await l.reset('u', { policy: '1/day' });
    expect(await l.consume('u', { policy: ['1/day', '5/1h'] })).toMatchObject({ allowed: true, source: 'store' });
  });

  it("failMode closed: the fallback is the call's policies by default, the limiter's fallback when given", async () => {
    const plans = createLimiter({ store: failing, clock });
    expect(await plans.consume('u', { policy: '2/1h' })).toMatchObject({ allowed: true, source: 'fallback', limit: 2 });
    expect((await plans.consume('u', { policy: '2/1h' })).allowed).toBe(true);
    expect(await plans.consume('u', { policy: '2/1h' })).toMatchObject({ allowed: false, source: 'fallback' });
    expect(await plans.consume('u', { policy: '3/1h' })).toMatchObject({ allowed: true, source: 'fallback', limit: 3 });

    const fixed = createLimiter({ store: failing, clock, fallback: '1/1h' });
    expect(await fixed.consume('u', { policy: '100/1h' })).toMatchObject({ allowed: true, source: 'fallback', limit: 1 });
    expect((await fixed.consume('u', { policy: '200/1h' })).allowed).toBe(false);

    const open = createLimiter({ store: failing, clock, failMode: 'open' });
    expect(await open.consume('u', { policy: ['7/1h', '1000/day'] })).toMatchObject({ source: 'fail-open', limit: 7 });
  });

  it('the prefilter stays the limiter’s and sheds in front of any plan; shadow mode covers plans', async () => {
    const l = createLimiter({ store: remote(clock), clock, prefilter: '2/1h' });
    expect((await l.consume('u', { policy: '100/1h' })).source).toBe('store');
    expect((await l.consume('u', { policy: '50/1h' })).source).toBe('store');
    expect(await l.consume('u', { policy: '100/1h' })).toMatchObject({ allowed: false, source: 'prefilter' });

    const shadow = createLimiter({ store: memoryStore({ clock }), shadow: true });
    await shadow.consume('u', { policy: '1/1h' });
    expect(await shadow.consume('u', { policy: '1/1h' })).toMatchObject({ allowed: true, shadowed: true, limit: 1 });
  });

  it("peek and reset take the call's policy; reset without one forgets every plan seen", async () => {
    const l = createLimiter({ policy: '1/1h', store: memoryStore({ clock }) });
    await l.consume('u', { policy: '2/1h' });
    await l.consume('u', { policy: '1/day' });
    await l.consume('u');
    expect((await l.peek('u', { policy: '2/1h' })).remaining).toBe(1);
    await l.reset('u', { policy: '2/1h' });
    expect((await l.peek('u', { policy: '2/1h' })).remaining).toBe(2);
    expect((await l.peek('u', { policy: '1/day' })).remaining).toBe(0);
    await l.reset('u');
    expect((await l.peek('u', { policy: '1/day' })).remaining).toBe(1);
    expect((await l.peek('u')).remaining).toBe(1);
  });
});
