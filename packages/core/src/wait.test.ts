import { isDelay } from './adapter/delay.js';
import { createLimiter } from './limiter.js';
import { rateLimitedFetch } from './rate-limited-fetch.js';
import { createShedder } from './shed/shedder.js';
import type { Store } from './store/contract.js';
import { memoryStore } from './store/memory-store.js';
import { throttle } from './throttle.js';

describe('limiter.wait on the memory store', () => {
  test('10 waits on a 5/s bucket (burst 5): 5 at once, then one per 200 ms, in the order called', async () => {
    const limiter = createLimiter({ policy: { limit: 5, window: '1s' }, store: memoryStore() });
    const start = performance.now();
    const order: number[] = [];
    const times: number[] = [];
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        limiter.wait('k').then((d) => {
          order.push(i);
          times.push(performance.now() - start);
          expect(d.allowed).toBe(true);
          expect(d.waitedMs).toBeGreaterThanOrEqual(0);
        }),
      ),
    );
    expect(order).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // The 10th's turn is 1 s after the first five; a busy machine is late, never early.
    expect(times[9]).toBeGreaterThanOrEqual(990);
    expect(times[9]).toBeLessThan(3000);
    await limiter.close();
  });

  test('a turn past maxWait rejects at once with ERR_SLUICE_WAIT and charges nothing', async () => {
    // A still clock: the peeks before and after see the same instant.
    const limiter = createLimiter({ policy: { limit: 2, window: '10s' }, store: memoryStore({ clock: () => 1_700_000_000_000 }) });
    await limiter.consume('k', { cost: 2 });
    const before = await limiter.peek('k');
    const t = performance.now();
    await expect(limiter.wait('k', { maxWait: '2s' })).rejects.toMatchObject({ code: 'ERR_SLUICE_WAIT', retryAfterMs: 5000 });
    // At once: not after waiting maxWait out.
    expect(performance.now() - t).toBeLessThan(1500);
    expect(await limiter.peek('k')).toEqual(before);
    await limiter.close();
  });

  test('an abort before its turn gives the place back and rejects with the reason', async () => {
    const limiter = createLimiter({ policy: { limit: 1, window: '1s' }, store: memoryStore() });
    await limiter.consume('k');
    const controller = new AbortController();
    const waiting = limiter.wait('k', { signal: controller.signal });
    const reason = new Error('gone');
    setTimeout(() => controller.abort(reason), 50);
    await expect(waiting).rejects.toBe(reason);
    // The place is free again: the next wait's turn is the aborted one's (about 1 s), not a second later.
    const next = await limiter.wait('k', { maxWait: 1000 });
    expect(next.allowed).toBe(true);
    await limiter.close();
  });

  test('a fixed window asks again at its retry time', async () => {
    // Its window opens at the first hit: one aligned to the clock could end between the consume and the wait
    // (then the wait passes at once, having waited 0 ms).
    const limiter = createLimiter({
      policy: { limit: 1, window: '300ms', algorithm: 'fixed-window', start: 'first-hit' },
      store: memoryStore(),
    });
    await limiter.consume('k');
    const d = await limiter.wait('k', { maxWait: '2s' });
    expect(d.allowed).toBe(true);
    expect(d.waitedMs).toBeGreaterThan(0);
    await expect(limiter.wait('k', { maxWait: 10 })).rejects.toMatchObject({ code: 'ERR_SLUICE_WAIT' });
    await limiter.close();
  });

  test('a concurrent policy asks again when a slot is released in this process', async () => {
    const limiter = createLimiter({ policy: { concurrent: 1, lease: '1m' }, store: memoryStore() });
    const held = await limiter.consume('k');
    const t = performance.now();
    setTimeout(() => void held.release?.(), 100);
    const d = await limiter.wait('k', { maxWait: '5s' });
    expect(d.allowed).toBe(true);
    // Woken by the release, not by the once-a-second ask.
    expect(performance.now() - t).toBeLessThan(900);
    await d.release?.();
    await limiter.close();
  });

  test.each([
    ['a reservation (token bucket)', { limit: 2, window: '10s' }],
    ['an ask at the retry time (fixed window)', { limit: 2, window: '10s', algorithm: 'fixed-window', start: 'first-hit' }],
  ] as const)(
    'maxWait 0 passes now when the cost can, else rejects at once with ERR_SLUICE_WAIT, charging nothing: %s',
    async (_, policy) => {
      const limiter = createLimiter({ policy, store: memoryStore({ clock: () => 1_700_000_000_000 }) });
      expect(await limiter.wait('k', { maxWait: 0 })).toMatchObject({ allowed: true, remaining: 1, waitedMs: expect.any(Number) });
      expect(await limiter.wait('k', { maxWait: '0s' })).toMatchObject({ allowed: true, remaining: 0 });
      const before = await limiter.peek('k');
      const t = performance.now();
      await expect(limiter.wait('k', { maxWait: 0 })).rejects.toMatchObject({ code: 'ERR_SLUICE_WAIT', retryAfterMs: expect.any(Number) });
      expect(performance.now() - t).toBeLessThan(1000);
      expect(await limiter.peek('k')).toEqual(before);
      await limiter.close();
    },
  );

  test('bad options throw ERR_SLUICE_OPTION naming them', async () => {
    const limiter = createLimiter({ policy: '1/s', store: memoryStore() });
    await expect(limiter.wait('k', { maxWait: -1 })).rejects.toMatchObject({
      code: 'ERR_SLUICE_OPTION',
      message: expect.stringContaining('maxWait'),
    });
    await expect(limiter.wait('k', { signal: {} as AbortSignal })).rejects.toMatchObject({ code: 'ERR_SLUICE_OPTION' });
    await limiter.close();
  });
});

describe('limiter.wait when the store cannot answer', () => {
  // A store out of this process that always fails: the fail mode answers.
  const down = (): Store => ({
    local: false,
    decide: () => Promise.reject(new Error('down')),
    reset: async () => undefined,
    close: async () => undefined,
  });

  test("failMode 'open': the wait goes at once", async () => {
    const limiter = createLimiter({ policy: { limit: 1, window: '1s' }, store: down(), failMode: 'open', breaker: false });
    const d = await limiter.wait('k');
    expect(d).toMatchObject({ allowed: true, source: 'fail-open' });
    await limiter.close();
  });

  test("failMode 'closed': the local fallback's count, waited on like a fixed window's", async () => {
    const limiter = createLimiter({ policy: { limit: 1, window: '300ms' }, store: down(), failMode: 'closed', breaker: false });
    expect(await limiter.wait('k')).toMatchObject({ allowed: true, source: 'fallback' });
    const t = performance.now();
    expect(await limiter.wait('k', { maxWait: '2s' })).toMatchObject({ allowed: true, source: 'fallback' });
    expect(performance.now() - t).toBeGreaterThanOrEqual(250);
    await expect(limiter.wait('k', { maxWait: 10 })).rejects.toMatchObject({ code: 'ERR_SLUICE_WAIT' });
    await limiter.close();
  });
});

describe('maxWait is checked where it is given, by one check', () => {
  const limiter = createLimiter({ policy: '1/s', store: memoryStore() });
  afterAll(() => limiter.close());
  const bad = [-1, 'soon', Number.NaN, '5 minutes'];
  const refused = { code: 'ERR_SLUICE_OPTION', message: expect.stringContaining('maxWait must be 0 or a duration') };

  test.each(bad)('limiter.wait refuses maxWait %p', async (maxWait) => {
    await expect(limiter.wait('k', { maxWait: maxWait as number })).rejects.toMatchObject(refused);
  });

  test.each(bad)('throttle refuses maxWait %p at construction', (maxWait) => {
    expect(() => throttle(() => 1, { limiter, maxWait: maxWait as number })).toThrow(expect.objectContaining(refused));
  });

  test.each(bad)('rateLimitedFetch refuses maxWait %p at construction', (maxWait) => {
    expect(() => rateLimitedFetch({ limiter, maxWait: maxWait as number })).toThrow(expect.objectContaining(refused));
  });

  test.each(bad)("the adapters' delay refuses maxWait %p at construction", (maxWait) => {
    expect(() => isDelay({ maxWait }, 'delay')).toThrow(
      expect.objectContaining({ message: expect.stringContaining('delay.maxWait must be 0 or a duration') }),
    );
  });

  test.each(bad)('createShedder refuses maxWait %p', (maxWait) => {
    expect(() => createShedder({ maxWait: maxWait as number })).toThrow(expect.objectContaining(refused));
  });

  test('each takes 0 and a duration', async () => {
    for (const maxWait of [0, '0ms', 250, '2s'] as const) {
      expect(throttle(() => 1, { limiter, maxWait })).toBeInstanceOf(Function);
      expect(rateLimitedFetch({ limiter, maxWait })).toBeInstanceOf(Function);
      expect(isDelay({ maxWait }, 'delay')).toMatchObject({ maxQueued: 1000 });
      createShedder({ maxWait, eventLoopDelay: () => 0 }).close();
    }
    expect(await throttle((x: number) => x * 2, { limiter, key: 't', maxWait: 0 })(21)).toBe(42);
    await expect(throttle(() => 1, { limiter, key: 't', maxWait: 0 })()).rejects.toMatchObject({ code: 'ERR_SLUICE_WAIT' });
  });
});
