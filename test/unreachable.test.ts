// A Redis the app cannot reach: the store's errors say why (the client's own connection error), and the
// store leaves the app's handling of the client's errors as it was.
import { createLimiter, type LimiterEvent, redisStore } from '@sluice/core';
import Redis from 'ioredis';
import Redis6 from 'ioredis6';
import Valkey from 'iovalkey';
import { createClient } from 'redis';
import { createClient as createClient4 } from 'redis4';
import { sleep } from './support/redis';

/** A .invalid host never resolves (RFC 6761): every attempt to connect fails with ENOTFOUND. */
const URL = 'redis://no-such-host.invalid:6379';

interface Unreachable {
  client: Parameters<typeof redisStore>[0]['client'];
  errorListeners(): number;
  close(): Promise<void>;
}

const ioredisLike = (Ctor: typeof Redis | typeof Redis6 | typeof Valkey) => (): Unreachable => {
  const client = new (Ctor as typeof Redis)(URL, { retryStrategy: () => 50 });
  return {
    client,
    errorListeners: () => client.listenerCount('error'),
    close: async () => client.disconnect(),
  };
};

const nodeRedisLike = (create: typeof createClient | typeof createClient4) => (): Unreachable => {
  const client = (create as typeof createClient)({ url: URL, socket: { reconnectStrategy: 50 } });
  // node-redis throws an 'error' with no listener: the app always has one.
  client.on('error', () => {});
  client.connect().catch(() => {});
  return {
    client: client as unknown as Unreachable['client'],
    errorListeners: () => client.listenerCount('error') - 1,
    close: async () => {
      if (client.isOpen) await client.disconnect();
    },
  };
};

const CLIENTS: Array<[string, () => Unreachable]> = [
  ['ioredis 5', ioredisLike(Redis)],
  ['ioredis 6', ioredisLike(Redis6)],
  ['iovalkey', ioredisLike(Valkey)],
  ['node-redis 5', nodeRedisLike(createClient)],
  ['node-redis 4', nodeRedisLike(createClient4)],
];

describe.each(CLIENTS)('%s, on a host that does not resolve', (_name, make) => {
  it("the store-error event names the client's connection error (ENOTFOUND), not only that it reconnects", async () => {
    const { client, close } = make();
    (client as unknown as Redis).on('error', () => {}); // the app's listener, as the README shows
    const errors: string[] = [];
    const limiter = createLimiter({
      policy: '1/s',
      store: redisStore({ client }),
      breaker: false,
      onEvent: (event: LimiterEvent) => {
        if (event.type === 'store-error') errors.push((event.error as Error).message);
      },
    });
    try {
      const end = Date.now() + 10_000;
      while (!errors.some((m) => m.includes('ENOTFOUND')) && Date.now() < end) {
        await limiter.consume('k');
        await sleep(50);
      }
      expect(errors.find((m) => m.includes('ENOTFOUND')) ?? errors).toMatch(/getaddrinfo ENOTFOUND no-such-host\.invalid/);
    } finally {
      await limiter.close();
      await close();
    }
  }, 20_000);

  it("the store adds no 'error' listener: the app's handling of the client's errors stays its own", async () => {
    const { client, errorListeners, close } = make();
    const limiter = createLimiter({ policy: '1/s', store: redisStore({ client }) });
    try {
      await limiter.consume('k');
      expect(errorListeners()).toBe(0);
    } finally {
      await limiter.close();
      await close();
    }
  });
});
