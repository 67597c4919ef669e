// Every Redis client redisStore() takes, made the same way for the contract suites: each library's
// defaults (offline queue, retries, reconnects), with only a short reconnect delay so that tests stay
// quick, and an error listener so that a dropped connection is not an unhandled 'error' event.
import type { RedisStoreOptions } from '@sluice/core';
import Redis, { Cluster } from 'ioredis';
import Redis6, { Cluster as Cluster6 } from 'ioredis6';
import Valkey, { Cluster as ValkeyCluster } from 'iovalkey';
import { createClient, createCluster } from 'redis';
import { createClient as createClient4, createCluster as createCluster4 } from 'redis4';
import { until } from './until';

type RedisClient = RedisStoreOptions['client'];

/** A client under test and the ways a test waits for it and ends it. */
export interface TestClient {
  client: RedisClient;
  /** Resolves once the client can send (its first connection, or a reconnection, is up). */
  ready(withinMs?: number): Promise<unknown>;
  close(): Promise<void>;
}

export interface ClientKind {
  name: string;
  /** Standalone on `port`. `connect: false` makes the client without waiting for it to connect. */
  standalone(port: number, options?: { wait?: boolean }): Promise<TestClient>;
  /** `wait: false` makes the client without waiting for it to connect. */
  cluster(nodes: Array<{ host: string; port: number }>, options?: { wait?: boolean }): Promise<TestClient>;
  /** A client that follows Sentinel to the master `name`; undefined where the library has none in this suite. */
  sentinel?(sentinels: Array<{ host: string; port: number }>, name: string): Promise<TestClient>;
  /**
   * False where the Cluster client finds a promoted replica only once the dead master is back (as a
   * replica, answering MOVED): node-redis 4, which cannot be asked to rediscover.
   */
  findsPromotedReplica: boolean;
}

const RETRY_MS = 50;

type IoredisCtor = typeof Redis | typeof Redis6 | typeof Valkey;
type IoredisClusterCtor = typeof Cluster | typeof Cluster6 | typeof ValkeyCluster;

function ioredisKind(name: string, RedisCtor: IoredisCtor, ClusterCtor: IoredisClusterCtor): ClientKind {
  const wrap = async (client: Redis | Cluster, wait = true): Promise<TestClient> => {
    client.on('error', () => {});
    const t: TestClient = {
      client: client as unknown as RedisClient,
      ready: (withinMs = 10_000) => until(() => client.status === 'ready', true, { withinMs, what: `${name} ready` }),
      async close() {
        client.disconnect();
      },
    };
    if (wait) await t.ready();
    return t;
  };
  return {
    name,
    findsPromotedReplica: true,
    standalone: (port, options) =>
      wrap(new (RedisCtor as typeof Redis)({ host: '127.0.0.1', port, retryStrategy: () => RETRY_MS }), options?.wait ?? true),
    cluster: (nodes, options) =>
      wrap(new (ClusterCtor as typeof Cluster)(nodes, { clusterRetryStrategy: () => RETRY_MS }), options?.wait ?? true),
    sentinel: (sentinels, masterName) =>
      wrap(
        new (RedisCtor as typeof Redis)({
          sentinels,
          name: masterName,
          retryStrategy: () => RETRY_MS,
          sentinelRetryStrategy: () => RETRY_MS,
        }),
      ),
  };
}

type NodeRedis = ReturnType<typeof createClient> | ReturnType<typeof createClient4>;
type NodeRedisCluster = ReturnType<typeof createCluster> | ReturnType<typeof createCluster4>;

function nodeRedisKind(
  name: string,
  make: typeof createClient | typeof createClient4,
  makeCluster: typeof createCluster | typeof createCluster4,
  findsPromotedReplica: boolean,
): ClientKind {
  return {
    name,
    findsPromotedReplica,
    async standalone(port, options) {
      const client = (make as typeof createClient)({ socket: { host: '127.0.0.1', port, reconnectStrategy: () => RETRY_MS } }) as NodeRedis;
      client.on('error', () => {});
      // connect() goes on retrying until a server answers; the test decides whether to wait for it.
      const connected = client.connect().catch(() => {});
      const t: TestClient = {
        client: client as unknown as RedisClient,
        ready: (withinMs = 10_000) => until(() => client.isReady, true, { withinMs, what: `${name} ready` }),
        async close() {
          if (client.isOpen) await (client as ReturnType<typeof createClient>).disconnect().catch(() => {});
        },
      };
      if (options?.wait ?? true) {
        await connected;
        await t.ready();
      }
      return t;
    },
    async cluster(nodes, options) {
      const cluster = (makeCluster as typeof createCluster)({
        rootNodes: nodes.map((n) => ({ socket: { host: n.host, port: n.port } })),
        defaults: { socket: { reconnectStrategy: () => RETRY_MS } },
      }) as NodeRedisCluster;
      cluster.on('error', () => {});
      const connected = cluster.connect().catch(() => {});
      // connect() resolves once the slots are known; each master's own connection comes up after.
      const masters = () => (cluster as unknown as { masters: Array<{ client?: { isReady?: boolean } }> }).masters;
      const t: TestClient = {
        client: cluster as unknown as RedisClient,
        ready: (withinMs = 10_000) =>
          until(() => cluster.isOpen && masters().every((m) => m.client?.isReady === true), true, {
            withinMs,
            what: `${name} cluster ready`,
          }),
        async close() {
          await (cluster as ReturnType<typeof createCluster>).disconnect().catch(() => {});
        },
      };
      if (options?.wait ?? true) {
        await connected;
        await t.ready();
      }
      return t;
    },
  };
}

/** Every client, in the order the suites run them. */
export const CLIENT_KINDS: ClientKind[] = [
  ioredisKind('ioredis 5', Redis, Cluster),
  ioredisKind('ioredis 6', Redis6, Cluster6),
  ioredisKind('iovalkey', Valkey, ValkeyCluster),
  nodeRedisKind('node-redis 4', createClient4, createCluster4, false),
  nodeRedisKind('node-redis 5', createClient, createCluster, true),
];
