// The Redis clients redisStore() takes, told apart by shape. Nothing here imports a client, at run
// time or in the emitted types: an app with no client installed type-checks, and one with any of them
// passes its own instance.
import { describe, SluiceError } from '../../errors.js';
import { ioredis } from './ioredis.js';
import { nodeRedis } from './node-redis.js';

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

export type Loose = Record<string, unknown>;
export type AnyFn = (...args: unknown[]) => Promise<unknown>;

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
