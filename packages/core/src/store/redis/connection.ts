// A client's connection as the stores on it follow it, from the client's events.

export type Emitter = { on(event: string, listener: () => void): unknown; removeListener(event: string, listener: () => void): unknown };

/** A client's connection as the stores on it follow it: one per client, however many stores share it. */
export interface Connection {
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
export function follow(client: Emitter, lost: string, ready: boolean, onLost?: () => void): Connection {
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
