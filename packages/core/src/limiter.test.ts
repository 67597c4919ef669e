import { performance } from 'node:perf_hooks';
import { createLimiter, type LimiterEvent } from './limiter.js';
import { memoryStore } from './memory-store.js';
import type { Store, StoreReply } from './store.js';

describe('createLimiter options', () => {
  const bad: Array<[unknown, RegExp]> = [
    [{ policy: { limit: -1, window: '1m' } }, /policy\.limit must be a positive integer, got -1/],
    [{ policy: { limit: 1, window: 0 } }, /policy\.window/],
    [{ policy: { limit: 1, window: -5 } }, /policy\.window/],
    [{ policy: { limit: 1, window: 'xyz' } }, /policy\.window/],
    [{ policy: { limit: 1, window: '1m', algorithm: 'nope' } }, /policy\.algorithm/],
    [{ policy: { limit: 1, window: '1m', burst: 0.5 } }, /policy\.burst/],
    [{ policy: '1/1m', prefix: 'a{b' }, /prefix/],
    [{ policy: '1/1m', prefix: '' }, /prefix/],
    [{ policy: '1/1m', shards: 0 }, /shards/],
    [{ policy: '1/1m', timeout: 0 }, /timeout/],
    [{ policy: '1/1m', timeout: -1 }, /timeout/],
    [{ policy: '1/1m', bogus: 1 }, /bogus/],
  ];
  test.each(bad)('%j throws', (options, message) => {
    expect(() => createLimiter(options as never)).toThrow(message);
  });
});

describe('consume / peek / reset (memory)', () => {
  test.each([0, -1, Number.NaN, Number.POSITIVE_INFINITY, '2'])('cost %p rejects naming cost', async (cost) => {
    const l = createLimiter({ policy: '3/1m' });
    await expect(l.consume('k', { cost: cost as number })).rejects.toThrow(/cost/);
  });

  test('multi-policy denial charges none; peek does not charge; reset restores', async () => {
    const l = createLimiter({ policy: ['3/1m', '10/1h'] });
    for (let i = 0; i < 3; i++) expect((await l.consume('k')).allowed).toBe(true);
    const before = await l.peek('k');
    const denied = await l.consume('k');
    expect(denied.allowed).toBe(false);
    expect(denied.policies[1]!.remaining).toBe(7);
    const after = await l.peek('k');
    expect(after.policies[1]!.remaining).toBe(before.policies[1]!.remaining);
    await l.reset('k');
    expect((await l.consume('k')).allowed).toBe(true);
  });

  test('memoryStore maxKeys bound', async () => {
    const store = memoryStore({ maxKeys: 100 });
    const l = createLimiter({ policy: '5/1m', store });
    for (let i = 0; i < 10_000; i++) await l.consume(`k${i}`);
    expect(store.size).toBeLessThanOrEqual(100);
  });

  test('memoryStore drops expired keys as it takes new ones, long before it needs the room', async () => {
    let now = 1_000_000;
    const store = memoryStore({ maxKeys: 100_000, clock: () => now });
    const l = createLimiter({ policy: '5/1s', store });
    // Keys taken now and then, as a fallback takes them in outages: each burst's keys expire before the next.
    for (let burst = 0; burst < 10; burst++) {
      for (let i = 0; i < 500; i++) await l.consume(`b${burst}-${i}`);
      now += 60_000;
    }
    // Without the sweep all 5,000 stay; with it, at most the last burst and what the sweep has yet to reach of the one before.
    expect(store.size).toBeLessThanOrEqual(1_000);
    // Live keys are kept: the last burst is still counted.
    now -= 60_000;
    expect((await l.peek('b9-0')).remaining).toBe(4);
  });

  test('memoryStore evicts the least recently used first', async () => {
    const store = memoryStore({ maxKeys: 4 });
    const l = createLimiter({ policy: '1/1m', store });
    await l.consume('a');
    await l.consume('b');
    await l.consume('a'); // used again: kept
    await l.consume('c');
    await l.consume('d');
    expect(store.size).toBeLessThanOrEqual(4);
    expect((await l.peek('a')).remaining).toBe(0);
    expect((await l.peek('b')).remaining).toBe(1);
  });
});

describe('circuit breaker', () => {
  // A store that never answers: a Store, not a Redis mock.
  const hung = (): Store => ({ local: false, decide: () => new Promise(() => {}), reset: async () => {}, close: async () => {} });

  test('regression: a limiter stacked on the same store does not wait out its own timeouts once the store is known down', async () => {
    const store = hung();
    const events: string[] = [];
    const app = createLimiter({ policy: '10/1m', store, timeout: 20, breaker: { failures: 2, cooldown: 10_000 }, failMode: 'open' });
    const route = createLimiter({
      policy: '3/1m',
      store,
      timeout: 20,
      breaker: { failures: 2, cooldown: 10_000 },
      onEvent: (e) => events.push(e.type),
    });
    await app.consume('a');
    await app.consume('a');
    const t = performance.now();
    const d = await route.consume('a');
    expect(performance.now() - t).toBeLessThan(15);
    expect(d.source).toBe('fallback');
    expect(events).toEqual(['breaker-open', 'fallback']);
    await Promise.all([app.close(), route.close()]);
  });

  test("breaker-close says how long the breaker was open, on the limiter's clock", async () => {
    let now = 1_000;
    let up = false;
    const store: Store = {
      local: false,
      decide: async (request) => {
        if (!up) throw new Error('down');
        return { allowed: true, states: request.policies.map(() => ({ remaining: 9, resetMs: 0, retryAfterMs: 0 })) };
      },
      reset: async () => {},
      close: async () => {},
    };
    const events: { type: string; latencyMs?: number }[] = [];
    const limiter = createLimiter({
      policy: '10/1m',
      store,
      clock: () => now,
      breaker: { failures: 2, cooldown: 5_000 },
      failMode: 'open',
      onEvent: (e) => events.push({ type: e.type, latencyMs: e.latencyMs }),
    });
    await limiter.consume('a');
    await limiter.consume('a');
    expect(events.filter((e) => e.type === 'breaker-open')).toHaveLength(1);
    now += 6_000; // past the cooldown: the next call is the probe
    up = true;
    expect((await limiter.consume('a')).source).toBe('store');
    expect(events.filter((e) => e.type === 'breaker-close')).toEqual([{ type: 'breaker-close', latencyMs: 6_000 }]);
    await limiter.close();
  });
});

describe('a store that misbehaves', () => {
  test('issue 24: a malformed reply is a store error: the fail mode answers, nothing is left pending', async () => {
    const replies: unknown[] = [{ allowed: true, states: [] }, null, 'garbage', undefined];
    for (const reply of replies) {
      const events: LimiterEvent[] = [];
      const store: Store = { local: false, decide: async () => reply as StoreReply, reset: async () => {}, close: async () => {} };
      const limiter = createLimiter({ policy: '10/1m', store, onEvent: (e) => events.push(e) });
      expect(await limiter.consume('a')).toMatchObject({ source: 'fallback', remaining: 9 });
      expect(events.map((e) => e.type)).toContain('store-error');
      await limiter.close();
    }
  });

  test('issue 24: a store that throws, or answers no promise, is a store error too', async () => {
    const decides = [
      () => {
        throw new Error('sync');
      },
      () => undefined,
    ];
    for (const decide of decides) {
      const store = { local: false, decide, reset: async () => {}, close: async () => {} } as unknown as Store;
      const limiter = createLimiter({ policy: '10/1m', store, failMode: 'open' });
      expect((await limiter.consume('a')).source).toBe('fail-open');
      await limiter.close();
    }
  });
});

describe('clear refusals (issue 12)', () => {
  test.each([
    [
      { limit: 10, window: 1000, algorthm: 'fixed-window' },
      /policy\.algorthm must be absent: not a policy field \(did you mean algorithm\?\)/,
    ],
    [{ limit: 10, window: 1000, algorithm: 'token_bucket' }, /did you mean token-bucket\?/],
    ['-5/1m', /policy\.limit must be a positive integer, got -5 \(a limit counts units per window: it cannot be negative\)/],
    ['1.5/1m', /policy\.limit must be a positive integer, got 1\.5 \(a limit counts whole units/],
    [{ limit: 10_001, window: '1m', algorithm: 'sliding-log' }, /at most 10000 with 'sliding-log'/],
  ])('policy %j is refused with a specific message', (policy, message) => {
    expect(() => createLimiter({ policy: policy as never })).toThrow(message);
  });

  test('a misspelt limiter option suggests the right one', () => {
    expect(() => createLimiter({ policy: '1/1m', failmode: 'open' } as never)).toThrow(
      /failmode must be absent: not a limiter option \(did you mean failMode\?\)/,
    );
  });

  test.each([
    ['10/1min', /policy\.window must be .*, got "1min" \(did you mean '1m'\?\)/],
    ['5/15mins', /did you mean '15m'\?/],
    ['1/hour', /did you mean 'h'\?/],
    [{ limit: 5, window: '2 secs' }, /policy\.window must be .*\(did you mean '2s'\?\)/],
  ])('a window whose unit is a word, %j, suggests the unit sluice spells', (policy, message) => {
    expect(() => createLimiter({ policy: policy as never })).toThrow(message);
  });

  test('a ban missing a field names the field', () => {
    expect(() => createLimiter({ policy: '1/s', ban: { after: 3 } as never })).toThrow(
      /ban must be an object with .*\(within and for missing\)/,
    );
  });

  test('a Redis client given as the store says to wrap it in redisStore({ client })', () => {
    // The shape redisStore() takes from ioredis: a client, not a Store.
    const client = { status: 'ready', evalsha: async () => [], eval: async () => [], on() {} };
    expect(() => createLimiter({ policy: '1/s', store: client as never })).toThrow(
      'store must be a Store, got a Redis client: wrap it, redisStore({ client })',
    );
  });

  test('an empty key is refused: it would count every such caller in one bucket', async () => {
    const l = createLimiter({ policy: '3/1m' });
    await expect(l.consume('')).rejects.toMatchObject({ code: 'ERR_SLUICE_KEY' });
  });

  test('a cost above a capacity is refused naming both, not denied with a Retry-After', async () => {
    const l = createLimiter({ policy: '10/1m' });
    await expect(l.consume('k', { cost: 11 })).rejects.toMatchObject({
      code: 'ERR_SLUICE_COST',
      message: expect.stringMatching(/cost 11 .*capacity 10 of policy "10-per-60s"/),
    });
    expect((await l.consume('k', { cost: 10 })).allowed).toBe(true);
  });

  test('a message never serializes a value: a store holding a password is described by its constructor', () => {
    class Redis {
      options = { password: 'hunter2-secret' };
    }
    const attempt = () => createLimiter({ policy: '1/m', store: new Redis() as never });
    expect(attempt).toThrow(/store must be a Store, such as memoryStore\(\) or redisStore\(\{ client \}\), got an instance of Redis$/);
    const url = 'redis://user:hunter2-secret@host:6379';
    expect(() => createLimiter({ policy: '1/m', timeout: url as never })).toThrow(
      /timeout must be a positive number of ms, got a string of 37 characters$/,
    );
  });
});
