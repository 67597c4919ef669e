// The Redis clients redisStore() takes, told apart by shape. Nothing here imports a client, at run
// time or in the emitted types: an app with no client installed type-checks, and one with any of them
// passes its own instance.
import { describe, SluiceError } from './errors.js';

/**
 * An ioredis 5 or 6, or iovalkey, client: `Redis` (also one that follows Sentinel) or `Cluster`.
 * Only the members the store uses, so that each library's own class is assignable to it.
 */
export interface IoredisClient {
  /** 'wait' (lazyConnect), 'connecting', 'connect', 'ready', 'reconnecting', 'close', 'end'. */
  readonly status: string;
  /** True on a Cluster. */
  readonly isCluster?: boolean;
  evalsha(sha: string, numKeys: number, ...args: never[]): Promise<unknown>;
  eval(script: string, numKeys: number, ...args: never[]): Promise<unknown>;
  del(...keys: never[]): Promise<unknown>;
  connect(): Promise<unknown>;
  on(event: 'close' | 'ready' | 'end', listener: () => void): unknown;
  removeListener(event: 'close' | 'ready' | 'end', listener: () => void): unknown;
}

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

/** Every client redisStore() takes. */
export type RedisClient = IoredisClient | NodeRedisClient;

export const CLIENTS_TAKEN = 'an ioredis 5/6 or iovalkey Redis or Cluster, or a node-redis 4/5 createClient() or createCluster()';

/** The store's view of a client: one way to run a script and to say whether a call can go now. */
export interface ScriptClient {
  readonly cluster: boolean;
  /**
   * Undefined when a call can be written to a connection that is up now; else why not. A call that
   * cannot go now is refused, never queued: a client's offline queue would run it after its caller
   * had its answer from the fail mode, charging it twice. `slot` names the slot on a Cluster.
   */
  down(slot?: number): string | undefined;
  /**
   * True while the connection is being made (a first connect, or a reconnect after it was up) and no
   * attempt at it has failed: a call that cannot go now may wait for it. Connecting is not failing.
   */
  connecting(): boolean;
  /** Runs `settled` once, when the connection is up or an attempt to make it fails. */
  whenSettled(settled: () => void): void;
  evalsha(sha: string, keys: string[], args: string[]): Promise<unknown>;
  eval(script: string, keys: string[], args: string[]): Promise<unknown>;
  del(keys: readonly string[]): Promise<unknown>;
  /** Stops listening to the client. */
  detach(): void;
}

type Loose = Record<string, unknown>;
type AnyFn = (...args: unknown[]) => Promise<unknown>;

const isIoredis = (c: Loose) => typeof c.evalsha === 'function' && typeof c.status === 'string';
const isNodeRedis = (c: Loose) => typeof c.evalSha === 'function' && typeof c.sendCommand === 'function' && typeof c.isOpen === 'boolean';

/** True when `value` has the shape of a client redisStore() takes. */
export function looksLikeClient(value: unknown): boolean {
  return value !== null && typeof value === 'object' && (isIoredis(value as Loose) || isNodeRedis(value as Loose));
}

/**
 * Wraps `client` for the store; refuses one it cannot use. `isOwnCall(first)` says whether a command
 * whose first argument is `first` is one of the store's script calls.
 */
export function scriptClient(client: unknown, isOwnCall: (first: unknown) => boolean): ScriptClient {
  if (client !== null && typeof client === 'object') {
    const c = client as Loose;
    if (isIoredis(c)) return ioredis(c as unknown as IoredisClient, isOwnCall);
    if (isNodeRedis(c)) return nodeRedis(c as unknown as NodeRedisClient);
  }
  throw new SluiceError('ERR_SLUICE_OPTION', `client must be ${CLIENTS_TAKEN}, got ${describe(client)}`);
}

type Emitter = { on(event: string, listener: () => void): unknown; removeListener(event: string, listener: () => void): unknown };

/** A client's connection as the stores on it follow it: one per client, however many stores share it. */
interface Connection {
  /** An attempt to connect failed since the connection was last up: the store is down, not connecting. */
  failing: boolean;
  /** What runs once the connection is up or an attempt to make it fails. */
  waiters: Array<() => void>;
  stores: number;
  stop(): void;
}

const connections = new WeakMap<object, Connection>();

/**
 * Follows `client`'s connection. `lost` is the event of a connection that went down and of an attempt that
 * failed (ioredis 'close', node-redis 'reconnecting'): after 'ready' it is a reconnect, before it a failure.
 */
function follow(client: Emitter, lost: string, ready: boolean, onLost?: () => void): Connection {
  // A client-shaped object with no events is not followed: a call never waits for it.
  if (typeof client.on !== 'function') return { failing: true, waiters: [], stores: 1, stop() {} };
  const known = connections.get(client);
  if (known !== undefined) {
    known.stores++;
    return known;
  }
  let up = ready;
  const wake = () => {
    for (const waiter of c.waiters.splice(0)) waiter();
  };
  const onReady = () => {
    up = true;
    c.failing = false;
    wake();
  };
  const onLostConnection = () => {
    onLost?.();
    if (!up) {
      c.failing = true;
      wake();
    }
    up = false;
  };
  const onEnd = () => {
    c.failing = true;
    wake();
  };
  const c: Connection = {
    failing: false,
    waiters: [],
    stores: 1,
    stop() {
      if (--c.stores > 0) return;
      client.removeListener('ready', onReady);
      client.removeListener(lost, onLostConnection);
      client.removeListener('end', onEnd);
      connections.delete(client);
    },
  };
  client.on('ready', onReady);
  client.on(lost, onLostConnection);
  client.on('end', onEnd);
  connections.set(client, c);
  return c;
}

/** ioredis statuses of a connection being made: 'wait' (lazyConnect, not asked yet), then the others in turn. */
const CONNECTING = new Set(['wait', 'connecting', 'connect', 'reconnecting']);

function ioredis(client: IoredisClient, isOwnCall: (first: unknown) => boolean): ScriptClient {
  const cluster = client.isCluster === true;
  // The Buffer variants (every ioredis and iovalkey has them, untyped): the script answers integers only,
  // numbers either way, and the plain variants copy each reply array to convert its strings (5% of this
  // process' CPU per decision).
  const buffered = client as unknown as { evalshaBuffer?: AnyFn; evalBuffer?: AnyFn };
  const evalsha = buffered.evalshaBuffer ?? (client.evalsha as unknown as AnyFn);
  const evalScript = buffered.evalBuffer ?? (client.eval as unknown as AnyFn);
  const del = client.del as unknown as AnyFn;
  // A connection that closes while ready keeps its unanswered commands and sends them again on the next
  // connection (autoResendUnfulfilledCommands); and a command written after the socket ended but before
  // ioredis saw it close went to the offline queue. Both run after the fail mode has answered their
  // callers. Both queues are as they will be replayed when 'close' is emitted (next tick; the replay waits
  // for 'ready'): take the store's calls out of them then, and let them fail. (A Cluster's own retry of
  // such a call is refused by the script's guard: lua/decide.lua.)
  const onClose = () => {
    const internals = client as unknown as { prevCommandQueue?: CommandQueue | null; offlineQueue?: CommandQueue };
    prune(internals.prevCommandQueue, 'was in flight');
    prune(internals.offlineQueue, 'was written as it closed');
  };
  const prune = (queue: CommandQueue | null | undefined, why: string) => {
    if (queue == null || typeof queue.peekAt !== 'function') return;
    for (let i = 0; i < queue.length; ) {
      const command = queue.peekAt(i)?.command;
      if (command !== undefined && isOwnCall(command.args?.[0])) {
        queue.remove(i, 1);
        command.reject(new Error(`Redis connection closed while the call ${why}; it is not sent again`));
      } else i++;
    }
  };
  const connection = follow(client as unknown as Emitter, 'close', client.status === 'ready', cluster ? undefined : onClose);
  let detached = false;
  return {
    cluster,
    down() {
      const { status } = client;
      if (status === 'ready') return undefined;
      // lazyConnect: the first command would connect; the store's calls wait for it instead.
      if (status === 'wait') client.connect().catch(() => {});
      return `Redis connection is ${status}`;
    },
    connecting: () => !connection.failing && CONNECTING.has(client.status),
    whenSettled: (settled) => void connection.waiters.push(settled),
    // ioredis flattens one level of arrays: the keys and the arguments go as they are, uncopied.
    evalsha: (sha, keys, args) => evalsha.call(client, sha, keys.length, keys, args),
    eval: (script, keys, args) => evalScript.call(client, script, keys.length, keys, args),
    del: (keys) => del.call(client, keys),
    detach() {
      if (detached) return;
      detached = true;
      connection.stop();
    },
  };
}

/** The part of ioredis' (and iovalkey's) internal command queue that onClose reads. */
interface CommandQueue {
  length: number;
  peekAt(i: number): { command: { args?: unknown[]; reject(error: Error): void } } | undefined;
  remove(i: number, n: number): void;
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

function nodeRedis(client: NodeRedisClient): ScriptClient {
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
      if (!cluster) return client.isReady === true ? undefined : 'the node-redis client is reconnecting';
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
      else {
        // A Cluster tells no event when it has found its nodes: look every 10 ms.
        const look = setInterval(() => {
          if (discovering()) return;
          clearInterval(look);
          settled();
        }, 10);
        look.unref?.();
      }
    },
    // Raw commands: a Cluster's sendCommand routes by the first key it is given (a call's keys share one
    // slot, one hash tag) and follows MOVED and ASK. node-redis 4's evalSha on a Cluster does not route
    // by key (it reads the key from the wrong argument) and ends in MOVED after its redirections.
    evalsha: (sha, keys, args) => send(keys, ['EVALSHA', sha, String(keys.length), ...keys, ...args]),
    eval: (script, keys, args) => send(keys, ['EVAL', script, String(keys.length), ...keys, ...args]),
    del: (keys) => send(keys, ['DEL', ...keys]),
    detach() {
      if (detached) return;
      detached = true;
      connection?.stop();
    },
  };
}
