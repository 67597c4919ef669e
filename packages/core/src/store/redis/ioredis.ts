// The store's view of an ioredis 5/6 or iovalkey client (clients.ts tells the clients apart).

import { downBecause, type Emitter, follow } from './connection.js';
import type { AnyFn, Loose, ScriptClient } from './script-client.js';

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

/** ioredis statuses of a connection being made: 'wait' (lazyConnect, not asked yet), then the others in turn. */
const CONNECTING = new Set(['wait', 'connecting', 'connect', 'reconnecting']);

/** Wraps an ioredis or iovalkey `Redis` or `Cluster`. */
export function ioredis(client: IoredisClient, isOwnCall: (first: unknown) => boolean): ScriptClient {
  const cluster = client.isCluster === true;
  // The Buffer variants (every ioredis and iovalkey has them, untyped): the script answers integers only,
  // numbers either way, and the plain variants copy each reply array to convert its strings, on every
  // decision.
  const buffered = client as unknown as { evalshaBuffer?: AnyFn; evalBuffer?: AnyFn };
  const evalsha = buffered.evalshaBuffer ?? (client.evalsha as unknown as AnyFn);
  const evalScript = buffered.evalBuffer ?? (client.eval as unknown as AnyFn);
  const del = client.del as unknown as AnyFn;
  const onClose = cluster ? undefined : pruneOnClose(client, isOwnCall);
  const connection = follow(client as unknown as Emitter, 'close', client.status === 'ready', onClose);
  let detached = false;
  return {
    cluster,
    down() {
      const { status } = client;
      if (status === 'ready') return undefined;
      // lazyConnect: the first command would connect; the store's calls wait for it instead.
      if (status === 'wait') client.connect().catch(() => {});
      return downBecause(`Redis connection is ${status}`, connection);
    },
    connecting: () => !connection.failing && CONNECTING.has(client.status),
    whenSettled: (settled) => void connection.waiters.push(settled),
    // ioredis flattens one level of arrays: the keys and the arguments go as they are, uncopied.
    evalsha: (sha, keys, args) => evalsha.call(client, sha, keys.length, keys, args),
    eval: (script, keys, args) => evalScript.call(client, script, keys.length, keys, args),
    del: (keys) => del.call(client, keys),
    async masters() {
      const nodes = cluster ? (client as unknown as { nodes(role: string): unknown[] }).nodes('master') : [client];
      return nodes.map((node) => (command) => ((node as Loose).call as AnyFn).call(node, ...command));
    },
    detach() {
      if (detached) return;
      detached = true;
      connection.stop();
    },
  };
}

/** What a standalone client runs on 'close': takes the store's calls out of the queues ioredis would replay. */
function pruneOnClose(client: IoredisClient, isOwnCall: (first: unknown) => boolean): () => void {
  // A connection that closes while ready keeps its unanswered commands and sends them again on the next
  // connection (autoResendUnfulfilledCommands); and a command written after the socket ended but before
  // ioredis saw it close went to the offline queue. Both run after the fail mode has answered their
  // callers. Both queues are as they will be replayed when 'close' is emitted (next tick; the replay waits
  // for 'ready'): take the store's calls out of them then, and let them fail. (A Cluster's own retry of
  // such a call is refused by the script's guard: lua/decide.lua.)
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
  return () => {
    const internals = client as unknown as { prevCommandQueue?: CommandQueue | null; offlineQueue?: CommandQueue };
    prune(internals.prevCommandQueue, 'was in flight');
    prune(internals.offlineQueue, 'was written as it closed');
  };
}

/** The part of ioredis' (and iovalkey's) internal command queue that onClose reads. */
interface CommandQueue {
  length: number;
  peekAt(i: number): { command: { args?: unknown[]; reject(error: Error): void } } | undefined;
  remove(i: number, n: number): void;
}
