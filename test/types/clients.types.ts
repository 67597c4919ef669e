// Type test for redisStore's client: never run, only type-checked by `pnpm typecheck`. Every client the
// store takes must be assignable to `client` as its own library types it, under strict, with the store's
// types importing none of them. Each `@ts-expect-error` marks a value that must NOT type-check.
import { redisStore } from '@sluice/core';
import Redis, { Cluster } from 'ioredis';
import Redis6, { Cluster as Cluster6 } from 'ioredis6';
import Valkey, { Cluster as ValkeyCluster } from 'iovalkey';
import { createClient, createCluster } from 'redis';
import { createClient as createClient4, createCluster as createCluster4 } from 'redis4';

redisStore({ client: new Redis() });
redisStore({ client: new Redis({ sentinels: [{ host: '127.0.0.1', port: 26379 }], name: 'mymaster' }) });
redisStore({ client: new Cluster([{ host: '127.0.0.1', port: 7000 }]) });
redisStore({ client: new Redis6() });
redisStore({ client: new Cluster6([{ host: '127.0.0.1', port: 7000 }]) });
redisStore({ client: new Valkey() });
redisStore({ client: new ValkeyCluster([{ host: '127.0.0.1', port: 7000 }]) });
redisStore({ client: createClient() });
redisStore({ client: createCluster({ rootNodes: [{ url: 'redis://127.0.0.1:7000' }] }) });
redisStore({ client: createClient4() });
redisStore({ client: createCluster4({ rootNodes: [{ url: 'redis://127.0.0.1:7000' }] }) });

// @ts-expect-error the braces forgotten: options, not a client
redisStore(new Redis());
// @ts-expect-error not a client
redisStore({ client: { get: async () => null } });
