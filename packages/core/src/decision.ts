import type { Policy } from './policy/policy.js';
import type { Rule } from './rules/match.js';
import type { StoreReply } from './store/contract.js';

/** Where a decision came from. */
export type DecisionSource = 'store' | 'deny-cache' | 'prefilter' | 'fallback' | 'fail-open' | 'fail-closed' | 'rule';

/** One policy's part in a decision. */
export interface PolicyDecision {
  name: string;
  limit: number;
  windowMs: number;
  /** Whole units left after this request, >= 0. */
  remaining: number;
  /** ms until the policy is fully replenished. */
  resetMs: number;
  /** 0 when this policy passed; else ms until the request's cost could pass it. */
  retryAfterMs: number;
  /** A concurrent policy: limit and remaining are slots, windowMs is the lease, resetMs is 0. */
  concurrent?: true;
}

/**
 * The answer to one consume or peek. Where it came from (`source`) says what its counts mean:
 * 'store', 'deny-cache', 'prefilter' and 'fallback' counted (the fallback in this process only);
 * 'fail-open' and 'fail-closed' counted nothing — the store could not be asked — so their `remaining` and
 * `resetMs` are 0, not a count, and the rate-limit headers carry the policy but no remaining or reset.
 */
export interface Decision {
  /** Whether the request may proceed. */
  allowed: boolean;
  /** The binding policy's limit. */
  limit: number;
  /** The binding policy's remaining units after this request, integer >= 0 (0 on 'fail-open' and 'fail-closed': unknown). */
  remaining: number;
  /** ms until the binding policy is fully replenished (0 on 'fail-open' and 'fail-closed': unknown). */
  resetMs: number;
  /** 0 when allowed; else ms until this cost could pass. */
  retryAfterMs: number;
  /** The binding policy's name: on a denial the one that frees last, else the one with least left. */
  policy: string;
  /** Each policy's part, in the order the policies were given. */
  policies: PolicyDecision[];
  /**
   * Which tier decided: the store, the deny cache, the prefilter, the local fallback, the fail mode 'open', a
   * refusal while the store cannot answer (`fallback: false`: 'fail-closed'), or a rule.
   */
  source: DecisionSource;
  /** A wait's decision only: ms it waited for its turn (limiter.wait). */
  waitedMs?: number;
  /**
   * source 'rule': the deny or allow rule that decided (createRules). A deny's retryAfterMs is the time until
   * the rule lapses (0 when it does not); neither counted anything, so limit, remaining and policies are empty.
   */
  rule?: Rule;
  /** A limiter with `regions` only: the region that decided (regions.region). */
  region?: string;
  /** Shadow mode only: true when a real limit would have denied this request (allowed is then true). */
  shadowed?: boolean;
  /**
   * Present when the decision holds concurrent slots: gives them back. Idempotent; never rejects (a
   * store failure is reported as a 'store-error' event, and the slot frees when its lease ends).
   */
  release?: () => Promise<void>;
  /**
   * Present on a consume's allowed decision that charged (the store's or the fallback's): moves its own
   * charge by `delta` (the same key, scope, shard and policies), > 0 charging more without a check, < 0
   * refunding, never past full; resolves with the decision after it, as a peek would see it.
   * @example const d = await limiter.consume(user, { cost: estimate }); ...; await d.adjust?.(used - estimate);
   */
  adjust?: (delta: number) => Promise<Decision>;
}

/**
 * Builds the Decision for a store's reply; `scale` turns a shard's counts into the whole key's. The
 * store's retries are ms to the µs; the Decision's are whole ms, rounded up.
 */
export function toDecision(policies: readonly Policy[], reply: StoreReply, source: DecisionSource, scale?: readonly number[]): Decision {
  const entries: PolicyDecision[] = new Array(policies.length);
  let binding = 0;
  for (let i = 0; i < policies.length; i++) {
    const p = policies[i] as Policy;
    const s = reply.states[i] as StoreReply['states'][number];
    const k = scale?.[i];
    const retryAfterMs = reply.allowed ? 0 : Math.ceil(s.retryAfterMs);
    const remaining = k === undefined ? s.remaining : Math.min(p.limit, Math.floor(s.remaining * k));
    const entry: PolicyDecision = {
      name: p.name,
      limit: p.limit,
      windowMs: s.windowMs ?? p.windowMs,
      remaining,
      resetMs: s.resetMs,
      retryAfterMs,
    };
    if (p.algorithm === 'concurrent') entry.concurrent = true;
    entries[i] = entry;
    const b = entries[binding] as PolicyDecision;
    // Allowed: the rate policy with least left binds (slots count another thing), a concurrent one only alone.
    if (
      reply.allowed
        ? (b.concurrent && !entry.concurrent) || (remaining < b.remaining && !entry.concurrent === !b.concurrent)
        : retryAfterMs > b.retryAfterMs
    )
      binding = i;
  }
  const b = entries[binding] as PolicyDecision;
  return {
    allowed: reply.allowed,
    limit: b.limit,
    remaining: b.remaining,
    resetMs: b.resetMs,
    retryAfterMs: b.retryAfterMs,
    policy: b.name,
    policies: entries,
    source,
  };
}

/** ms to the µs until a denied reply's cost could pass every policy: the longest of their retries. */
export function replyRetryMs(reply: StoreReply): number {
  let most = 0;
  for (const s of reply.states) if (s.retryAfterMs > most) most = s.retryAfterMs;
  return most;
}

/**
 * The decision when the store cannot answer and nothing is counted (remaining 0, not the limit): 'fail-open'
 * allows; 'fail-closed' (`fallback: false`) refuses, for `retryAfterMs`.
 */
export function uncountedDecision(policies: readonly Policy[], source: 'fail-open' | 'fail-closed', retryAfterMs = 0): Decision {
  const entries = policies.map(
    (p): PolicyDecision => ({
      name: p.name,
      limit: p.limit,
      windowMs: p.windowMs,
      remaining: 0,
      resetMs: 0,
      retryAfterMs,
      ...(p.algorithm === 'concurrent' ? { concurrent: true as const } : {}),
    }),
  );
  const b = entries[0] as PolicyDecision;
  return {
    allowed: source === 'fail-open',
    limit: b.limit,
    remaining: b.remaining,
    resetMs: 0,
    retryAfterMs,
    policy: b.name,
    policies: entries,
    source,
  };
}
