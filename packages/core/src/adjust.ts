// limiter.adjust(): a charge moved by delta on the rate policies, atomically, without a check (a
// refund never past full); the fail mode's way when the store cannot answer.

import type { Attempt } from './attempt.js';
import { type Decision, toDecision } from './decision.js';
import { badOption } from './errors.js';
import type { FailModeOf } from './fail-mode.js';
import type { ResolvedLimiterOptions } from './limiter-options.js';
import { isConcurrent, LIMIT_MAX, LIMIT_MAX_TEXT, type Policy, type PolicyInput, SLIDING_LOG_MAX, WINDOW_MAX_MS } from './policy/policy.js';
import type { PolicySet } from './policy-set.js';
import type { StoreReply, StoreRequest } from './store/contract.js';
import { keyTag, requestKeys, shardTag } from './store/keys.js';
import { ask, type ReportError, type StoreCall } from './store-call.js';

/** The caller has checked the key. */
export type Adjust = ((key: string, delta: number, options?: { policy?: PolicyInput | PolicyInput[] }) => Promise<Decision>) & {
  /**
   * A consume's Decision.adjust: the same key, shard and policies it was charged under, in the store
   * (source 'store') or in the local fallback (source 'fallback'). `keys`: the consume's own store keys,
   * reused when the adjustment moves all of them (no concurrent policy, no id): a key built again is a new
   * string that the store hashes again.
   */
  of(attempt: Attempt, shard: number, source: 'store' | 'fallback', keys?: readonly string[]): (delta: number) => Promise<Decision>;
};

export function createAdjust(o: {
  options: ResolvedLimiterOptions;
  storeCall: StoreCall;
  reportError: ReportError;
  failMode: FailModeOf;
  /** The policy set of a call's `policy`, or the limiter's. */
  setOf: (policy: unknown) => PolicySet;
  /** Forgets the deny cache's denials of a key's tag. */
  forgetDenials: (tag: string) => void;
}): Adjust {
  const { options, storeCall, reportError, failMode, setOf, forgetDenials } = o;
  const { prefix, clock } = options;
  const keysOf = (tag: string, ps: readonly Policy[]) => requestKeys(prefix, tag, ps);

  /** The rate policies of `policies`, the ones an adjustment moves: found once per list. */
  const rates = new WeakMap<readonly Policy[], readonly Policy[]>();
  const ratesOf = (policies: readonly Policy[]): readonly Policy[] => {
    let ps = rates.get(policies);
    if (ps === undefined) {
      ps = policies.filter((p) => !isConcurrent(p));
      rates.set(policies, ps);
    }
    return ps;
  };

  /**
   * Moves the counters of `tag` (a key's, or one shard's) under the rate policies `ps` of `set` by `delta`;
   * when the store cannot answer, the fail mode moves the fallback's. Throws on a bad delta.
   */
  function move(
    key: string,
    baseTag: string,
    tag: string,
    ps: readonly Policy[],
    set: PolicySet,
    delta: number,
    keys: readonly string[] | undefined,
  ): Promise<Decision> {
    checkDelta(delta, ps);
    // A refund may turn the store's denial into a pass: the deny cache must not outlive it.
    if (delta < 0) forgetDenials(baseTag);
    const request: StoreRequest = { keys: keys?.length === ps.length ? keys : keysOf(tag, ps), policies: ps, cost: 1, peek: false, delta };
    const answer = (reply: StoreReply) => toDecision(ps, reply, 'store');
    return ask(storeCall, reportError, key, request, clock(), answer, () => failMode.adjust(baseTag, ps, set, delta));
  }

  /** The checked call: throws on bad input, and its promise is the adjustment's (not async: one promise fewer). */
  function adjust(key: string, delta: number, given: { policy?: PolicyInput | PolicyInput[] } | undefined): Promise<Decision> {
    if (options.shards > 1) {
      badOption('shards', "1 for limiter.adjust (a charge went to one shard: use the decision's adjust())", options.shards);
    }
    const set = setOf(given?.policy);
    const tag = keyTag(key);
    return move(key, tag, tag, ratesOf(set.policies), set, delta, undefined);
  }

  const limiterAdjust = (key: string, delta: number, given?: { policy?: PolicyInput | PolicyInput[] }): Promise<Decision> => {
    try {
      return adjust(key, delta, given);
    } catch (error) {
      return Promise.reject(error);
    }
  };
  return Object.assign(limiterAdjust, {
    of(attempt: Attempt, shard: number, source: 'store' | 'fallback', keys?: readonly string[]) {
      return (delta: number): Promise<Decision> => {
        const { set } = attempt;
        try {
          if (source === 'fallback') {
            checkDelta(delta, ratesOf(set.fallback));
            return failMode.adjust(attempt.tag, ratesOf(set.policies), set, delta);
          }
          const tag = shardTag(attempt.tag, shard, set.shards.count);
          // The consume's keys are one per policy, then its id's: as many as the rate policies only when all are.
          return move(attempt.key, attempt.tag, tag, ratesOf(set.shards.policies[shard] as readonly Policy[]), set, delta, keys);
        } catch (error) {
          return Promise.reject(error);
        }
      };
    },
  });
}

/** Throws for a delta the policies `ps` cannot take. */
function checkDelta(delta: unknown, ps: readonly Policy[]): asserts delta is number {
  if (typeof delta !== 'number' || !Number.isFinite(delta)) badOption('delta', 'a finite number', delta);
  if (ps.length === 0) badOption('policy', 'at least one rate policy to adjust (a concurrent slot is given back by release())', 'none');
  if (Math.abs(delta) > LIMIT_MAX) badOption('delta', `at most ${LIMIT_MAX_TEXT} either way`, delta);
  for (const p of ps) {
    // A token bucket's debt is time to wait out, delta / limit × window: at most WINDOW_MAX_MS of it per call.
    if (p.algorithm === 'token-bucket' && delta * p.windowMs > WINDOW_MAX_MS * p.limit) {
      const most = Math.floor((WINDOW_MAX_MS * p.limit) / p.windowMs);
      badOption(
        'delta',
        `at most ${most} with policy "${p.name}" (delta / limit × window, the wait it adds, at most ${WINDOW_MAX_MS / 86_400_000} days)`,
        delta,
      );
    }
  }
  if (ps.some((p) => p.algorithm === 'sliding-log')) {
    if (!Number.isInteger(delta)) badOption('delta', "a whole number with a 'sliding-log' policy", delta);
    // A charge adds a member per unit, in one script call.
    if (delta > SLIDING_LOG_MAX) badOption('delta', `at most ${SLIDING_LOG_MAX} with a 'sliding-log' policy`, delta);
  }
}
