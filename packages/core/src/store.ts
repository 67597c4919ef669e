import type { Policy } from './policy.js';

export type { Policy };

/** What one policy says after a store decided a request. */
export interface PolicyState {
  /** Whole units left after this request, >= 0. */
  remaining: number;
  /** ms until the policy is fully replenished. */
  resetMs: number;
  /**
   * 0 when this policy passes; else ms until the cost could pass it, to the µs: the wait in whole µs,
   * rounded up (>= 1), / 1000. A Decision rounds it up to whole ms; the deny cache uses it as it is.
   */
  retryAfterMs: number;
  /** The window in force when the policy's varies (a calendar period's length); else absent. */
  windowMs?: number;
}

/** One decision for a store: `keys[i]` holds the counters of `policies[i]`. */
export interface StoreRequest {
  keys: readonly string[];
  policies: readonly Policy[];
  cost: number;
  /** Read without charging (the cost is then 1). */
  peek: boolean;
  /**
   * Adjust instead of consume: every policy moves by `delta` without a check (a refund never past full),
   * and the reply is a peek's after it. `cost` is then unused. With `slot`, a release: the concurrent
   * policies give the slot back, and the reply is zeros (protocol.ts's opOf is the one reading of this).
   */
  delta?: number;
  /** The concurrent slot this request takes (consume) or gives back (with `delta`: a release): a unique id. */
  slot?: string;
  /**
   * An idempotent consume: `keys` has one more entry after the policies', the id's record. An id
   * already recorded is allowed and charges nothing; an allowed consume records it for idTtlMs.
   */
  idTtlMs?: number;
  /**
   * A reservation (limiter.wait): when `cost` can pass every policy within maxWaitMs, each is charged its
   * place in line now and the reply's waitMs says when its turn is; else nothing is charged (a denial).
   * Only policies whose algorithm has a reserve (token bucket, sliding window) take one.
   */
  maxWaitMs?: number;
}

export interface StoreReply {
  /** True when every policy passed; then all were charged (unless peek), else none. */
  allowed: boolean;
  states: PolicyState[];
  /** A reservation's reply only: ms until its turn (0 when it may go now, and when denied). */
  waitMs?: number;
}

/**
 * Where counters live. `decide` must be atomic over all keys of one request.
 * A store may reject (a failure); the limiter turns that into a decision by its fail mode.
 */
export interface Store {
  /** True for an in-process store: no timeouts, breaker or deny cache are needed in front of it. */
  readonly local: boolean;
  decide(request: StoreRequest): Promise<StoreReply>;
  /**
   * Optional: `decide` with a callback instead of a promise, which the limiter calls when a store has
   * it (a promise less per decision on the hot path). Calls `done` exactly once: with the reply, or with
   * the error and no reply.
   */
  decideWith?(request: StoreRequest, done: (error: unknown, reply?: StoreReply) => void, deadline?: number): void;
  /**
   * Optional: true while the store waits for its connection to be made (a first connect or a reconnect,
   * no attempt failed yet). A call's deadline passing then is not a failure of the store: the breaker
   * does not count it. `decideWith`'s `deadline` (performance.now() ms) is when its caller stops waiting:
   * a call still waiting for the connection then is dropped, never sent.
   */
  connecting?(): boolean;
  /** Deletes the counters under `keys`. */
  reset(keys: readonly string[]): Promise<void>;
  /** Releases what the store holds. It never closes a client it was given. */
  close(): Promise<void>;
}
