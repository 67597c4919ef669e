// What a user meets from the first request on, on real Redis: a reset made by another process reaches
// this one's deny cache within a second; a call retried after NOSCRIPT is decided once; a node-redis
// client never asked to connect says so; a broken client never crashes the process.
import { createLimiter, type LimiterEvent, redisStore } from '@sluice/core';
import Redis from 'ioredis';
import { createClient } from 'redis';
import { type RedisServer, sleep, startServer, uniquePrefix } from './support/redis';

let server: RedisServer;
const clients: Redis[] = [];
const connect = async () => {
  const client = new Redis({ host: '127.0.0.1', port: server.port });
  clients.push(client);
  await new Promise((resolve) => client.once('ready', resolve));
  return client;
};
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  for (const c of clients) c.disconnect();
  await server?.stop();
});

describe('a reset is a reset everywhere', () => {
  it('after reset() resolves in another process, no process denies the key from its deny cache past 1 s', async () => {
    const prefix = uniquePrefix('reset');
    // Two processes: each its own client and limiter, the same counters.
    const app = createLimiter({ policy: '2/1h', store: redisStore({ client: await connect() }), prefix, timeout: 2000 });
    const admin = createLimiter({ policy: '2/1h', store: redisStore({ client: await connect() }), prefix, timeout: 2000 });
    for (let i = 0; i < 2; i++) expect((await app.consume('k')).allowed).toBe(true);
    expect(await app.consume('k')).toMatchObject({ allowed: false, source: 'store' });
    // The denial says an hour; the app's deny cache answers it now.
    expect(await app.consume('k')).toMatchObject({ allowed: false, source: 'deny-cache' });
    await admin.reset('k');
    expect((await admin.peek('k')).remaining).toBe(2);
    // Every cached denial was made before the reset, so each is gone 1 s after it (timers never fire early).
    await sleep(1000);
    expect(await app.consume('k')).toMatchObject({ allowed: true, source: 'store', remaining: 1 });
    await Promise.all([app.close(), admin.close()]);
  });
});

describe('exactly once, and nothing refused that ran once', () => {
  it('a call retried after NOSCRIPT, while a later call of the same store ran, is still decided on the store', async () => {
    const real = await connect();
    // The store's first script call answers NOSCRIPT only once its second has run (another process loaded
    // the script in between, say): the retry then comes after a later call, and must not be refused as old.
    let armed = false;
    let secondRan: () => void = () => {};
    const ran = new Promise<void>((resolve) => {
      secondRan = resolve;
    });
    const client = new Proxy(real, {
      get(target, prop) {
        if (prop === 'evalshaBuffer') {
          return async (...args: unknown[]) => {
            if (armed) {
              armed = false;
              await ran;
              throw new Error('NOSCRIPT No matching script. Please use EVAL.');
            }
            const reply = await (target as unknown as { evalshaBuffer(...a: unknown[]): Promise<unknown> }).evalshaBuffer(...args);
            secondRan();
            return reply;
          };
        }
        const value = Reflect.get(target, prop);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const limiter = createLimiter({ policy: '100/1h', store: redisStore({ client, maxBatch: 20 }), prefix: uniquePrefix(), timeout: 5000 });
    expect((await limiter.consume('warm')).source).toBe('store');
    armed = true;
    const decisions = await Promise.all(Array.from({ length: 40 }, () => limiter.consume('k')));
    expect(decisions.map((d) => d.source)).toEqual(Array(40).fill('store'));
    expect((await limiter.peek('k')).remaining).toBe(60);
    await limiter.close();
  });
});

describe('boot decides on the store', () => {
  it('a node-redis client whose connect() was never called goes to the fail mode, with an event that says to call connect()', async () => {
    const client = createClient({ socket: { host: '127.0.0.1', port: server.port } });
    const events: LimiterEvent[] = [];
    const limiter = createLimiter({
      policy: '5/1m',
      store: redisStore({ client }),
      prefix: uniquePrefix('nc'),
      onEvent: (e) => events.push(e),
    });
    expect((await limiter.consume('k')).source).toBe('fallback');
    const errors = events.filter((e) => e.type === 'store-error').map((e) => e.error?.message);
    expect(errors).toEqual([expect.stringContaining('call client.connect()')]);
    await limiter.close();
  });
});

describe('a broken client never crashes the process', () => {
  const crashes: unknown[] = [];
  const onCrash = (e: unknown) => crashes.push(e);
  beforeAll(() => {
    process.on('unhandledRejection', onCrash);
    process.on('uncaughtExceptionMonitor', onCrash);
  });
  afterAll(() => {
    process.off('unhandledRejection', onCrash);
    process.off('uncaughtExceptionMonitor', onCrash);
  });

  /** A client of ioredis' shape, connected, whose script calls answer as `evalsha` does. */
  const shaped = (evalsha: () => unknown) => ({
    status: 'ready',
    evalsha,
    eval: evalsha,
    del: async () => 0,
    connect: async () => {},
    on: () => {},
    removeListener: () => {},
  });

  it.each([
    ['returns undefined', () => undefined],
    [
      'throws synchronously',
      () => {
        throw new Error('boom');
      },
    ],
    ['resolves null', async () => null],
    ["resolves 'garbage'", async () => 'garbage'],
    ['resolves too few numbers', async () => [1, 2]],
    ['resolves strings where numbers go', async () => ['g', 'a', 'r']],
  ])('evalsha %s: a store error, the fail mode answers, nothing escapes', async (_what, evalsha) => {
    const events: LimiterEvent[] = [];
    const limiter = createLimiter({
      policy: '5/1m',
      store: redisStore({ client: shaped(evalsha) as never }),
      prefix: uniquePrefix('bc'),
      onEvent: (e) => events.push(e),
    });
    const decisions = await Promise.all(Array.from({ length: 3 }, () => limiter.consume('k')));
    for (const d of decisions) expect(d).toMatchObject({ source: 'fallback', allowed: true });
    expect(decisions.map((d) => d.remaining)).toEqual([4, 3, 2]);
    expect(events.filter((e) => e.type === 'store-error')).toHaveLength(3);
    await sleep(20);
    expect(crashes).toEqual([]);
    await limiter.close();
  });
});
