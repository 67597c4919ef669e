import { createHash } from 'node:crypto';
import type { Decision } from './decision.js';
import { uncountedDecision } from './decision.js';
import { parseHeadersMode, partitionKey, rateLimitHeaders, retryAfterSeconds } from './headers.js';
import { parsePolicies } from './policy/policy.js';

const denied: Decision = {
  allowed: false,
  limit: 3,
  remaining: 0,
  resetMs: 59_001,
  retryAfterMs: 19_001,
  policy: '3-per-60s',
  policies: [
    { name: '3-per-60s', limit: 3, windowMs: 60_000, remaining: 0, resetMs: 59_001, retryAfterMs: 19_001 },
    { name: '100-per-3600s', limit: 100, windowMs: 3_600_000, remaining: 97, resetMs: 108_000, retryAfterMs: 0 },
  ],
  source: 'store',
};

describe('rateLimitHeaders', () => {
  it('draft: one list member per policy; t rounds up and equals Retry-After for the violated policy', () => {
    expect(rateLimitHeaders(denied)).toEqual({
      'Retry-After': '20',
      'RateLimit-Policy': '"3-per-60s";q=3;w=60, "100-per-3600s";q=100;w=3600',
      RateLimit: '"3-per-60s";r=0;t=20, "100-per-3600s";r=97;t=108',
    });
  });

  it('legacy: X-RateLimit-* with Reset in epoch seconds; false: only Retry-After on a denial', () => {
    const now = Math.ceil(Date.now() / 1000);
    const legacy = rateLimitHeaders(denied, { headers: 'legacy' });
    expect(Object.keys(legacy).sort()).toEqual(['Retry-After', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']);
    expect(Number(legacy['X-RateLimit-Reset']) - now).toBeGreaterThanOrEqual(19);
    expect(Number(legacy['X-RateLimit-Reset']) - now).toBeLessThanOrEqual(21);
    expect(rateLimitHeaders(denied, { headers: false })).toEqual({ 'Retry-After': '20' });
    expect(Object.keys(rateLimitHeaders(denied, { headers: 'both' }))).toHaveLength(6);
  });

  it('a fail-open decision knows no count: policy, but no RateLimit or remaining', () => {
    const open = uncountedDecision(parsePolicies('10/1m'), 'fail-open');
    expect(rateLimitHeaders(open, { headers: 'both' })).toEqual({
      'RateLimit-Policy': '"10-per-60s";q=10;w=60',
      'X-RateLimit-Limit': '10',
    });
  });

  it('Retry-After is at least 1, and sub-second windows show w=1', () => {
    expect(retryAfterSeconds({ ...denied, retryAfterMs: 1 })).toBe(1);
    const fast = uncountedDecision(parsePolicies('5/500ms'), 'fail-open');
    expect(rateLimitHeaders(fast)['RateLimit-Policy']).toBe('"5-per-500ms";q=5;w=1');
  });

  it('refuses an unknown headers mode naming the option', () => {
    expect(() => parseHeadersMode('draft-9')).toThrow(
      "headers must be 'draft', 'legacy', 'both', 'draft-6', 'draft-7', 'draft-8' or false, got \"draft-9\"",
    );
  });
});

describe('the earlier drafts, as express-rate-limit writes them (test/dropin.express.test.ts compares them with it)', () => {
  const allowed: Decision = { ...denied, allowed: true, remaining: 2, retryAfterMs: 0, resetMs: 42_300 };
  it("'draft-6': RateLimit-Policy, -Limit, -Remaining, -Reset", () => {
    expect(rateLimitHeaders(allowed, { headers: 'draft-6' })).toEqual({
      'RateLimit-Policy': '3;w=60',
      'RateLimit-Limit': '3',
      'RateLimit-Remaining': '2',
      'RateLimit-Reset': '43',
    });
  });
  it("'draft-7': RateLimit-Policy and RateLimit as limit, remaining, reset; a denial's Retry-After", () => {
    expect(rateLimitHeaders(denied, { headers: 'draft-7' })).toEqual({
      'Retry-After': '20',
      'RateLimit-Policy': '3;w=60',
      RateLimit: 'limit=3, remaining=0, reset=60',
    });
  });
  it("'draft-8': the named policy with its partition key", () => {
    expect(rateLimitHeaders(allowed, { headers: 'draft-8', key: '127.0.0.1' })).toEqual({
      'RateLimit-Policy': `"3-per-60s"; q=3; w=60; pk=:${partitionKey('127.0.0.1')}:`,
      RateLimit: '"3-per-60s"; r=2; t=43',
    });
  });
  it("pk is base64 of the first 12 hex digits of the key's SHA-256", () => {
    const hex = createHash('sha256').update('127.0.0.1').digest('hex').slice(0, 12);
    expect(partitionKey('127.0.0.1')).toBe(Buffer.from(hex).toString('base64'));
    expect(partitionKey('127.0.0.1')).toBe('MTJjYTE3YjQ5YWYy');
  });
});
