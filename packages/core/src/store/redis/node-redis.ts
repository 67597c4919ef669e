// The store's view of a node-redis 4/5 client (clients.ts tells the clients apart).

import { clearInterval, setInterval } from '../../timers.js';
import { downBecause, type Emitter, follow } from './connection.js';
import type { AnyFn, Loose, ScriptClient } from './script-client.js';

/** A node-redis 4 or 5 client: `createClient()` or `createCluster()` of the `redis` package. */
export interface NodeRedisClient {
  /** True once `connect()` was called, until the client is closed. */
  readonly isOpen: boolean;
  /** True while a connection is up (a standalone client; a Cluster has it per node). */
  readonly isReady?: boolean;
  evalSha(sha: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  /** `(args)` on a client, `(firstKey, isReadonly, args)` on a Cluster. */
  sendCommand(...args: never[]): Promise<unknown>;
  on(event: 'ready' | 'reconnecting' | 'end', listener: () => void): unknown;
  removeListener(event: 'ready' | 'reconnecting' | 'end', listener: () => void): unknown;
}

interface NodeRedisSlots {
  slots?: Array<{ master?: { client?: { isReady?: unknown } } } | undefined>;
  /** The masters found so far: none until connect() has found the Cluster's slots. */
  masters?: unknown[];
  /** node-redis 5: the slot map, which can be asked to rediscover the topology. */
  _slots?: { rediscover?: (startWith: unknown) => Promise<unknown> };
}

/** Least ms between two rediscoveries the store asks of a node-redis Cluster. */
const REDISCOVER_MS = 250;

/** Wraps a node-redis `createClient()` or `createCluster()`. */
export function nodeRedis(client: NodeRedisClient): ScriptClient {
  // A standalone client has isReady; a Cluster (createCluster) has it on each node's client.
  const cluster = typeof (client as unknown as Loose).isReady !== 'boolean';
  const slots = client as unknown as NodeRedisSlots;
  const sendCommand = client.sendCommand as unknown as AnyFn;
  const send = (keys: readonly string[], command: string[]) =>
    cluster ? sendCommand.call(client, keys[0], false, command) : sendCommand.call(client, command);
  let rediscoveredAt = Number.NEGATIVE_INFINITY;
  const discovering = () => client.isOpen && Array.isArray(slots.masters) && slots.masters.length === 0;
  // A standalone client's connection is followed (a Cluster's is per node: a call to a node that is down fails).
  const connection = cluster ? undefined : follow(client as unknown as Emitter, 'reconnecting', client.isReady === true);
  let detached = false;
  // A node-redis Cluster learns a new topology only from a MOVED or ASK reply, which a dead master never
  // sends: after a fail-over it would go on queueing that slot's calls for the dead node. node-redis 5
  // can be asked to rediscover; node-redis 4 cannot, and finds the promoted replica once the dead node
  // is back (as a replica, answering MOVED).
  const rediscover = (node: unknown) => {
    const now = Date.now();
    if (now - rediscoveredAt < REDISCOVER_MS || typeof slots._slots?.rediscover !== 'function') return;
    rediscoveredAt = now;
    slots._slots.rediscover(node).catch(() => {});
  };
  return {
    cluster,
    down(slot) {
      // node-redis queues a command sent while the socket is down (or before connect() finished) and
      // writes it once its reconnect strategy gets through: refuse it here instead.
      if (!client.isOpen) return 'the node-redis client is not open (call client.connect())';
      if (!cluster) return client.isReady === true ? undefined : downBecause('the node-redis client is reconnecting', connection);
      if (slot === undefined) return undefined;
      if (discovering()) return 'the node-redis Cluster is still finding its nodes (connect() has not resolved)';
      const node = slots.slots?.[slot]?.master?.client;
      if (node === undefined || node.isReady !== false) return undefined;
      rediscover(node);
      return `the node-redis connection to slot ${slot}'s master is down`;
    },
    // connect() called (isOpen) and not ready yet: the first connect or a reconnect, unless an attempt failed.
    // A Cluster: connect() called and its nodes not found yet.
    connecting: () => (connection === undefined ? discovering() : !connection.failing && client.isOpen && client.isReady !== true),
    whenSettled(settled) {
      if (connection !== undefined) connection.waiters.push(settled);
      else whenDiscovered(discovering, settled);
    },
    // Raw commands: a Cluster's sendCommand routes by the first key it is given (a call's keys share one
    // slot, one hash tag) and follows MOVED and ASK. node-redis 4's evalSha on a Cluster does not route
    // by key (it reads the key from the wrong argument) and ends in MOVED after its redirections.
    evalsha: (sha, keys, args) => send(keys, ['EVALSHA', sha, String(keys.length), ...keys, ...args]),
    eval: (script, keys, args) => send(keys, ['EVAL', script, String(keys.length), ...keys, ...args]),
    del: (keys) => send(keys, ['DEL', ...keys]),
    async masters() {
      if (!cluster) return [(command) => sendCommand.call(client, command)];
      // createCluster's masters, each with a client of its own (nodeClient: node-redis 4 and 5).
      const c = client as unknown as { masters: unknown[]; nodeClient(node: unknown): unknown };
      const nodes = await Promise.all(c.masters.map((node) => c.nodeClient(node) as Promise<Loose>));
      return nodes.map((node) => (command) => (node.sendCommand as AnyFn).call(node, command));
    },
    detach() {
      if (detached) return;
      detached = true;
      connection?.stop();
    },
  };
}

/** A Cluster tells no event when it has found its nodes: look every 10 ms. */
function whenDiscovered(discovering: () => boolean, settled: () => void): void {
  const look = setInterval(() => {
    if (discovering()) return;
    clearInterval(look);
    settled();
  }, 10);
  look.unref?.();
}
