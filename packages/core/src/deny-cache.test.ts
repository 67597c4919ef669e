import type { Decision } from './decision.js';
import { DenyCache, MAX_HOLD_MS } from './deny-cache.js';
import { rateLimitHeaders } from './headers.js';

const denial: Decision = {
  allowed: false,
  limit: 3,
  remaining: 0,
  resetMs: 60_000,
  retryAfterMs: 20_000,
  policy: '3-per-60s',
  policies: [
    { name: '3-per-60s', limit: 3, windowMs: 60_000, remaining: 0, resetMs: 60_000, retryAfterMs: 20_000 },
    { name: '100-per-3600s', limit: 100, windowMs: 3_600_000, remaining: 97, resetMs: 108_000, retryAfterMs: 0 },
  ],
  source: 'store',
};

describe('DenyCache', () => {
  it('a cached 429 keeps RateLimit t equal to Retry-After as time passes', () => {
    const cache = new DenyCache(10);
    cache.set('k', 1, denial, 1000, 20_000);
    const later = cache.get('k', 1, 1000 + 500) as Decision;
    expect(later.source).toBe('deny-cache');
    expect(later.retryAfterMs).toBe(19_500);
    expect(later.policies.map((p) => p.retryAfterMs)).toEqual([19_500, 0]);
    expect(later.policies.map((p) => p.resetMs)).toEqual([59_500, 107_500]);
    const headers = rateLimitHeaders(later);
    expect(headers['Retry-After']).toBe('20');
    expect(headers.RateLimit).toBe('"3-per-60s";r=0;t=20, "100-per-3600s";r=97;t=108');
  });

  it('answers only a cost at least the denied one, only until the retry-after runs out, and stays bounded', () => {
    const cache = new DenyCache(2);
    cache.set('k', 2, denial, 0, 999.001);
    expect(cache.get('k', 1, 10)).toBeUndefined();
    expect(cache.get('k', 2, 10)).toBeDefined();
    expect(cache.get('k', 2, 999 - 0.0001)).toBeDefined();
    expect(cache.get('k', 2, 999)).toBeUndefined();
    cache.set('a', 1, denial, 0, 20_000);
    cache.set('b', 1, denial, 0, 20_000);
    cache.set('c', 1, denial, 0, 20_000);
    expect(cache.get('a', 1, 1)).toBeUndefined();
    expect(cache.get('c', 1, 1)).toBeDefined();
  });

  it("holds a denial for the store's retry to the µs less 1 µs, not the Decision's whole ms less 1 ms", () => {
    const cache = new DenyCache(10);
    // A token bucket of 1000/1s: the next token in 0.7 ms, which the Decision shows as 1 ms.
    const short = { ...denial, retryAfterMs: 1, policies: [{ ...denial.policies[0]!, retryAfterMs: 1 }] };
    cache.set('k', 1, short, 5000, 0.7);
    expect(cache.get('k', 1, 5000.5)?.retryAfterMs).toBe(1);
    expect(cache.get('k', 1, 5000.6989)).toBeDefined();
    expect(cache.get('k', 1, 5000.699)).toBeUndefined();
    // 1 µs could be all rounding: nothing to hold, and it replaces an older entry.
    cache.set('k', 1, short, 6000, 5);
    cache.set('k', 1, short, 6000, 0.001);
    expect(cache.get('k', 1, 6000)).toBeUndefined();
  });

  it('a reset is a reset everywhere: a denial is held at most MAX_HOLD_MS (1 s), however long the store denies', () => {
    const cache = new DenyCache(10);
    cache.set('k', 1, denial, 0, 20_000);
    expect(cache.get('k', 1, MAX_HOLD_MS - 0.001)?.retryAfterMs).toBe(19_001);
    expect(cache.get('k', 1, MAX_HOLD_MS)).toBeUndefined();
  });
});
