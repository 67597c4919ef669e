// What the Redis store sees of a client, whichever it is: clients.ts wraps each client it takes into one
// (ioredis.ts, node-redis.ts).

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
  /** A way to send a raw command to each master (one on a standalone server): SCAN reads one node's keys. */
  masters(): Promise<Array<(command: string[]) => Promise<unknown>>>;
  /** Stops listening to the client. */
  detach(): void;
}

/** A client's members as the wrappers read them, untyped. */
export type Loose = Record<string, unknown>;
export type AnyFn = (...args: unknown[]) => Promise<unknown>;
