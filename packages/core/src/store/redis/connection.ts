// A client's connection as the stores on it follow it, from the client's events.
import { errorMonitor } from 'node:events';
import { fakeTick } from '../../timers.js';

type Listener = (error?: unknown) => void;
export type Emitter = {
  on(event: string | symbol, listener: Listener): unknown;
  removeListener(event: string | symbol, listener: Listener): unknown;
};

/** A client's connection as the stores on it follow it: one per client, however many stores share it. */
export interface Connection {
  /** An attempt to connect failed since the connection was last up: the store is down, not connecting. */
  failing: boolean;
  /** What runs once the connection is up or an attempt to make it fails. */
  waiters: Array<() => void>;
  stores: number;
  /** The client's last error since the connection was last up: why it is down (ENOTFOUND, ECONNREFUSED, WRONGPASS). */
  lastError: Error | undefined;
  stop(): void;
}

/** Why a call cannot go: `status`, and the client's last error when it told one. */
export function downBecause(status: string, connection: Connection | undefined): string {
  const cause = connection?.lastError?.message;
  return `${cause ? `${status}: ${cause.split('\n')[0]}` : status}${fakeTick()}`;
}

const connections = new WeakMap<object, Connection>();

/**
 * Follows `client`'s connection. `lost` is the event of a connection that went down and of an attempt that
 * failed (ioredis 'close', node-redis 'reconnecting'): after 'ready' it is a reconnect, before it a failure.
 */
export function follow(client: Emitter, lost: string, ready: boolean, onLost?: () => void): Connection {
  // A client-shaped object with no events is not followed: a call never waits for it.
  if (typeof client.on !== 'function') return { failing: true, waiters: [], stores: 1, lastError: undefined, stop() {} };
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
    c.lastError = undefined;
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
  // errorMonitor sees each 'error' the client emits and is not a listener of its own: an app's handling of
  // the client's errors (or its lack: node-redis throws, ioredis logs and emits nothing) stays as it was.
  // Duck-typed: an error made in another realm (a test runner's) is not an instanceof this one's Error.
  const onError: Listener = (error) => {
    if (typeof (error as Error | undefined)?.message === 'string') c.lastError = error as Error;
  };
  const c: Connection = {
    failing: false,
    waiters: [],
    stores: 1,
    lastError: undefined,
    stop() {
      if (--c.stores > 0) return;
      client.removeListener('ready', onReady);
      client.removeListener(lost, onLostConnection);
      client.removeListener('end', onEnd);
      client.removeListener(errorMonitor, onError);
      connections.delete(client);
    },
  };
  client.on('ready', onReady);
  client.on(lost, onLostConnection);
  client.on('end', onEnd);
  client.on(errorMonitor, onError);
  connections.set(client, c);
  return c;
}
