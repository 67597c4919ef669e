// Strict TypeScript of redisStore next to the consumer's own ioredis (5 or 6), standalone and Cluster.
import { createLimiter, redisStore } from '@sluice/core';
import { Cluster, Redis } from 'ioredis';

export const standalone = createLimiter({ policy: '10/s', store: redisStore({ client: new Redis({ lazyConnect: true }) }) });
export const cluster = createLimiter({
  policy: '10/s',
  store: redisStore({ client: new Cluster([{ host: '127.0.0.1', port: 7000 }], { lazyConnect: true }) }),
});
