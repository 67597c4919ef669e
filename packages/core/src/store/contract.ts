import type { Policy } from '../policy/policy.js';
import type { LeaseStore } from './leases.js';

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

/**
 * A store's answer that it did not decide one request, and charged nothing: Redis out of memory refuses
 * the write an admission needs. `decideWith`'s `done` gets it as the error, and the fail mode answers
 * that request. The store did answer: the breaker counts it as up.
 */
export class StoreRefusal extends Error {
  override name = 'StoreRefusal';
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
  /**
   * Optional: where the rules operators change at run time live (createRules). A store without it
   * takes no rules. The decision path never calls it: each process holds a copy of the rules.
   */
  readonly rules?: RuleStore;
  /**
   * Optional: a limit across regions (createLimiter's `regions`): a region's leased tokens, or the home's
   * global buckets (store/leases.ts). A store without it can be neither a region's store nor the home.
   */
  readonly leases?: LeaseStore;
  /** Deletes the counters under `keys`. */
  reset(keys: readonly string[]): Promise<void>;
  /**
   * Optional: the clock the store decides on when it was given one (a test's: `testClock()`), epoch ms. A
   * limiter on the store keeps time on it in its own tiers too (deny cache, breaker, prefilter, fallback).
   * Absent: the store's own time (Redis' TIME, Date.now in memory), and the limiter's performance.now.
   */
  readonly clock?: () => number;
  /**
   * Optional: deletes every key of a prefix, counters, ids, rules and bans, and nothing of another prefix:
   * what `resetAll` (`@sluice/core/testing`) asks of a store, between tests.
   */
  resetPrefix?(prefix: string): Promise<void>;
  /** Releases what the store holds. It never closes a client it was given. */
  close(): Promise<void>;
}

/** What changed in a prefix's rules since a version a copy holds (RuleStore.changes). */
export interface RuleChanges {
  /** The version of the rules: a copy that takes these entries in is at this one. Bumped by every write. */
  version: number;
  /** The store's clock when read (epoch ms): every expiresAt is on it. */
  now: number;
  /** true: `entries` are every rule in force, and the copy starts afresh; false: the rules changed since. */
  full: boolean;
  /** [identity, value] of each rule (rules/rules.ts writes and reads both); value null: removed or lapsed. */
  entries: [string, string | null][];
}

/**
 * The rules part of a store (rules/rules.ts). Each call is one atomic step on the store; `prefix` names the
 * rule set (keys.ts rulesKeys). Times are the store's clock (Redis' TIME; Date.now in memory).
 */
export interface RuleStore {
  /**
   * The rules changed after version `since` (-1: every rule): the one small call a process makes every
   * `refresh`, with no entries when nothing changed. Costs the changes, not the rules held, unless the
   * store's log of changes no longer reaches back to `since` (then every rule, `full`). `markMs` > 0: the
   * caller is a limiter's copy, and `seen` answers true for that long.
   */
  changes(prefix: string, since: number, markMs: number): Promise<RuleChanges>;
  /**
   * Writes (value) or deletes (null) the rule `id`, bumping the version; a rule with `ttlMs` > 0
   * expires then, reckoned on the store's clock. Resolves whether a rule in force was there before,
   * the expiry it got (0 for none) and the version it made. Costs the same however many rules are held.
   */
  write(prefix: string, id: string, value: string | null, ttlMs: number): Promise<{ existed: boolean; expiresAt: number; version: number }>;
  /** Whether a limiter's copy of the prefix's rules marked it lately (`changes` with `markMs`). */
  seen(prefix: string): Promise<boolean>;
  /** Adds `n` denials to `key`'s count, a window of `withinMs` from its first; resolves the count after it. */
  countDenials(key: string, n: number, withinMs: number): Promise<number>;
}
