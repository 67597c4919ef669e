// The public shape of a limiter and of its calls' options (createLimiter is limiter.ts).
import type { Decision } from './decision.js';
import type { Duration } from './duration.js';
import type { PolicyInput } from './policy/policy.js';

/** A rate limiter. */
export interface Limiter {
  /**
   * Charges `cost` (default 1) to `key` if every policy allows it: the limiter's, or `policy`, this call's
   * own (a plan). Never rejects on a store failure. With `id`, idempotent: a consume whose id was already
   * charged for this key (within the longest window) is allowed again and charges nothing; a denied one
   * recorded nothing. With a concurrent policy, an allowed Decision holds a slot until its `release()`.
   */
  consume(key: string, options?: ConsumeOptions): Promise<Decision>;
  /**
   * Moves `key`'s charge by `delta` on every rate policy (the limiter's, or `policy`), atomically: delta > 0
   * charges without a check (a debt that later requests wait out), delta < 0 refunds, never past full.
   * Returns the Decision after it, as a peek would see it. A store failure goes to the fail mode.
   * @example await limiter.adjust(user, usedTokens - estimate)
   */
  adjust(key: string, delta: number, options?: CallOptions): Promise<Decision>;
  /** Reads `key` without charging: would a cost of 1 pass now? Under `policy` when given, else the limiter's. */
  peek(key: string, options?: CallOptions): Promise<Decision>;
  /**
   * Waits until `cost` may pass, then resolves with the allowed Decision (`waitedMs` set). One store call
   * reserves the request's place when it can pass within `maxWait` (default '30s'): first to reserve goes
   * first, across processes (token bucket and sliding window; other policies ask again at their retry
   * time). Rejects at once, charging nothing, with ERR_SLUICE_WAIT (and `retryAfterMs`) when it could not
   * pass within `maxWait`; an abort before its turn gives the reservation back and rejects with the
   * signal's reason. A store failure goes to the fail mode.
   * @example const d = await limiter.wait('api.example.com', { maxWait: '10s' }); await callTheApi();
   */
  wait(key: string, options?: WaitOptions): Promise<Decision>;
  /**
   * Forgets `key` everywhere this limiter counts it: under `policy` when given, else under the limiter's
   * policies and every call policy it has seen lately.
   */
  reset(key: string, options?: CallOptions): Promise<void>;
  /** Releases what the limiter holds. A store that was passed in stays open. */
  close(): Promise<void>;
}

/** Options of peek, adjust and reset: which counter. */
export interface CallOptions {
  /** This call's policies instead of the limiter's. */
  policy?: PolicyInput | PolicyInput[];
  /**
   * The counter's scope: a route ('POST /login') or a name that routes share. The same key under two
   * scopes is two counters. The adapters pass theirs; give the same to peek, adjust or reset an
   * adapter's counter from outside (the CLI's --scope). Default: none.
   */
  scope?: string;
  /** The client IP, matched against the rules' address and CIDR patterns (createRules); the adapters pass it. Default none. */
  ip?: string;
}

/** Options of one consume. */
export interface ConsumeOptions {
  /** The counter's scope (see CallOptions.scope). */
  scope?: string;
  /** The client IP, matched against the rules' address and CIDR patterns (see CallOptions.ip). */
  ip?: string;
  /** Units to charge, > 0. Default 1. */
  cost?: number;
  /**
   * This call's policies instead of the limiter's (plans, tiers), one or several: all must pass, atomically.
   * Parsed once per distinct input. Counters are per policy: see docs/plans.md on plan changes. Default: the limiter's.
   */
  policy?: PolicyInput | PolicyInput[];
  /** Idempotent: an id already charged for this key (within the longest window) is allowed and charges nothing. */
  id?: string;
}

/** Options of one wait: a consume's, and how long it may wait. */
export interface WaitOptions extends ConsumeOptions {
  /** The longest wait for a turn; a turn further off rejects at once with ERR_SLUICE_WAIT (0: pass now or be refused now). Default '30s'. */
  maxWait?: Duration;
  /** Aborts the wait: a reservation is given back, and the wait rejects with the signal's reason. */
  signal?: AbortSignal;
}
