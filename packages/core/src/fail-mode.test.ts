import { rateLimitHeaders } from './headers.js';
import { createLimiter, type LimiterEvent } from './limiter.js';
import type { Store } from './store/contract.js';

/** A store out of this process that fails while `state.up` is false: a Store, not a Redis mock. */
function flaky(state: { up: boolean }): Store {
  return {
    local: false,
    decide: async (request) => {
      if (!state.up) throw new Error('down');
      return { allowed: true, states: request.policies.map(() => ({ remaining: 4, resetMs: 0, retryAfterMs: 0 })) };
    },
    reset: async () => {},
    close: async () => {},
  };
}

describe('fallback: false', () => {
  test("refuses every request while the store cannot answer (source 'fail-closed'), until the breaker's next probe", async () => {
    let now = 1_000;
    const state = { up: false };
    const events: LimiterEvent['type'][] = [];
    const limiter = createLimiter({
      policy: '5/15m',
      store: flaky(state),
      clock: () => now,
      failMode: 'closed',
      fallback: false,
      breaker: { failures: 2, cooldown: 5_000 },
      onEvent: (e) => events.push(e.type),
    });
    const refused = { allowed: false, source: 'fail-closed', remaining: 0, limit: 5, policy: '5-per-900s' };
    // The breaker still closed: come back in one cooldown.
    expect(await limiter.consume('alice')).toMatchObject({ ...refused, retryAfterMs: 5_000 });
    // The second failure opens it: until its probe, every key is refused, one never seen before too.
    expect(await limiter.consume('alice')).toMatchObject({ ...refused, retryAfterMs: 5_000 });
    now += 2_000;
    expect(await limiter.consume('bob')).toMatchObject({ ...refused, retryAfterMs: 3_000 });
    expect(await limiter.peek('carol')).toMatchObject({ ...refused, retryAfterMs: 3_000 });
    expect(events).toEqual([
      'store-error',
      'fail-closed',
      'denied',
      'breaker-open',
      'store-error',
      'fail-closed',
      'denied',
      'fail-closed',
      'denied',
      'fail-closed',
    ]);
    now += 3_000;
    state.up = true;
    expect(await limiter.consume('bob')).toMatchObject({ allowed: true, source: 'store' });
    await limiter.close();
  });

  test('refuses for a second when no breaker says when the store is asked again', async () => {
    const limiter = createLimiter({ policy: '5/15m', store: flaky({ up: false }), fallback: false, breaker: false });
    const d = await limiter.consume('alice');
    expect(d).toMatchObject({ allowed: false, source: 'fail-closed', retryAfterMs: 1_000 });
    // Nothing was counted: the headers carry the policy and Retry-After, no remaining.
    expect(rateLimitHeaders(d)).toEqual({ 'Retry-After': '1', 'RateLimit-Policy': '"5-per-900s";q=5;w=900' });
    await expect(limiter.wait('alice', { maxWait: 100 })).rejects.toMatchObject({ code: 'ERR_SLUICE_WAIT', retryAfterMs: 1_000 });
    await limiter.close();
  });

  test('in shadow mode, a refusal is reported and let through', async () => {
    const limiter = createLimiter({ policy: '5/15m', store: flaky({ up: false }), fallback: false, breaker: false, shadow: true });
    expect(await limiter.consume('alice')).toMatchObject({ allowed: true, source: 'fail-closed', shadowed: true });
    await limiter.close();
  });

  test.each([null, 0, true])('fallback %p is refused, naming false as the way to refuse while the store is down', (fallback) => {
    expect(() => createLimiter({ policy: '5/15m', fallback: fallback as never })).toThrow(
      expect.objectContaining({
        code: 'ERR_SLUICE_OPTION',
        message: expect.stringContaining('or false (refuse every request while the store cannot answer)'),
      }),
    );
  });

  test("is refused with failMode 'open', which never refuses", () => {
    expect(() => createLimiter({ policy: '5/15m', failMode: 'open', fallback: false })).toThrow(
      /fallback must be a policy or absent with failMode 'open'/,
    );
  });
});
