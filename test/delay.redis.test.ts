// The adapters' `delay` on both stores, through a real Express server: a request refused because its
// turn is past maxWait is told when its own turn comes, after the requests already held. On Redis the
// refused request's first answer is the deny cache's, held from a denial made before those places were
// taken: its Retry-After must come from the store's refusal of its wait, which counts them.
import { createLimiter, memoryStore, redisStore, type Store } from '@sluice/core';
import type Redis from 'ioredis';
import { harnesses, type Running } from './support/http';
import { type RedisServer, uniquePrefix } from './support/redis';
import { startRedisWithClient, stopRedisWithClient } from './support/redis-client';
import { until } from './support/until';

let server: RedisServer;
let client: Redis;
beforeAll(async () => {
  ({ server, client } = await startRedisWithClient());
});
afterAll(() => stopRedisWithClient({ server, client }));

const express = harnesses.find((h) => h.name === 'express') as (typeof harnesses)[number];

describe.each([
  ['the memory store', (): Store => memoryStore()],
  ['the Redis store', (): Store => redisStore({ client })],
])('delay on %s', (_name, makeStore) => {
  let running: Running | undefined;
  afterEach(() => running?.close());

  it('a request refused by delay behind held requests is told when its own turn comes, after theirs', async () => {
    // One every 4 s, held up to 6 s: the first passes, the second is held until its turn (4 s on), and the
    // third's turn comes 4 s after the second's, past maxWait: 429.
    const limiter = createLimiter({ policy: { limit: 1, window: '4s' }, store: makeStore(), prefix: uniquePrefix(), timeout: 2000 });
    running = await express.start({
      app: { limiter, key: () => 'client', scope: 's', delay: { maxWait: '6s' } },
      routes: [{ method: 'GET', path: '/r' }],
    });
    const get = (signal?: AbortSignal) => fetch(`${running?.url}/r`, { signal });
    expect((await get()).status).toBe(200);
    const leaving = new AbortController();
    let heldDone = false;
    const held = get(leaving.signal)
      .catch((e: unknown) => e)
      .finally(() => {
        heldDone = true;
      });
    // Held: its place is taken, and the next cost's retry counts it (more than one window away).
    await until(
      () => limiter.peek('client', { scope: 's' }),
      (d) => d.retryAfterMs > 4000,
      { what: 'the held request counted' },
    );
    const refused = await get();
    expect(heldDone).toBe(false);
    expect(refused.status).toBe(429);
    // Its turn is a window after the held one's, which has not come: more than 4 s away.
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(5);
    expect(refused.headers.get('ratelimit')).toContain(`t=${retryAfter}`);
    // The held client leaves: its place given back, the test need not wait for it.
    leaving.abort();
    await held;
    await limiter.close();
  });
});
