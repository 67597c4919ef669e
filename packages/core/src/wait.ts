// limiter.wait(): waiting for a turn instead of being refused. A set whose policies can all
// reserve (token bucket, sliding window) and is not sharded asks the store once: a reservation charges
// the request its place in line and answers when its turn is, so waiters in every process go in the
// order they reserved, with no polling. Other sets ask again at their retry time, with jitter (a
// concurrent policy: when a slot is released in this process, and at least once a second). A store that
// cannot answer goes to the fail mode, as a consume does.
import { performance } from 'node:perf_hooks';
import type { Adjust } from './adjust.js';
import type { Attempt } from './attempt.js';
import { CONSUME_OPTIONS, callOptions, checkCost, checkId, counterKey } from './call-checks.js';
import { type Decision, toDecision } from './decision.js';
import { parseMaxWait } from './duration.js';
import { badOption, SluiceError } from './errors.js';
import type { ConsumeOptions, Limiter, WaitOptions } from './limiter-api.js';
import type { PolicyInput } from './policy/policy.js';
import type { PolicySet } from './policy-set.js';
import type { RuleStage } from './rule-check.js';
import type { Rule } from './rules/match.js';
import type { StoreReply, StoreRequest } from './store/contract.js';
import { keyTag, requestKeys } from './store/keys.js';
import { ask, type ReportError, type StoreCall } from './store-call.js';

export const WAIT_OPTIONS = [...CONSUME_OPTIONS, 'maxWait', 'signal'];
const MAX_WAIT_MS = 30_000;
/** A concurrent policy asks again at least this often, besides when a slot is released in this process. */
const SLOT_POLL_MS = 1000;

/**
 * The rejection of a wait whose turn would come later than maxWait: nothing was charged. `retryAfterMs`:
 * ms until the cost could pass, as a denied Decision's.
 */
export class WaitError extends SluiceError {
  readonly retryAfterMs: number;
  constructor(retryAfterMs: number, maxWaitMs: number, rule?: Rule) {
    super(
      'ERR_SLUICE_WAIT',
      rule === undefined
        ? `the turn would come in ${retryAfterMs} ms, later than maxWait (${maxWaitMs} ms); nothing was charged`
        : `refused by a deny rule on ${rule.pattern} (${rule.expiresAt === undefined ? 'it does not lapse' : `it lapses in ${retryAfterMs} ms`}); nothing was charged`,
    );
    this.retryAfterMs = retryAfterMs;
  }
}

/** Whether a set's store call can take a reservation: every policy's algorithm has one, and one shard. */
const reservable = new WeakMap<PolicySet, boolean>();
function canReserve(set: PolicySet): boolean {
  let can = reservable.get(set);
  if (can === undefined) {
    can = set.shards.count === 1 && set.policies.every((p) => p.algorithm === 'token-bucket' || p.algorithm === 'sliding-window');
    reservable.set(set, can);
  }
  return can;
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first; `wake` may end it early. */
function sleep(ms: number, signal: AbortSignal | undefined, wake?: (done: () => void) => () => void): Promise<void> {
  return new Promise((resolve, reject) => {
    let stopWaking: (() => void) | undefined;
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', aborted);
      stopWaking?.();
      resolve();
    };
    const aborted = () => {
      clearTimeout(timer);
      stopWaking?.();
      reject(signal?.reason);
    };
    const timer = setTimeout(done, Math.max(0, ms));
    signal?.addEventListener('abort', aborted, { once: true });
    stopWaking = wake?.(done);
  });
}

/** Up to a fifth of the wait (at most a second) more, so that waiters denied together do not ask again together. */
const jitter = (ms: number): number => Math.random() * Math.min(1000, ms / 5 + 5);

export type Wait = Limiter['wait'];

export function createWait(o: {
  prefix: string;
  clock: () => number;
  storeCall: StoreCall;
  reportError: ReportError;
  setOf: (policy: unknown) => PolicySet;
  /** The fail mode's decision, when the store cannot answer. */
  withoutStore: (attempt: Attempt) => Promise<Decision>;
  adjust: Adjust;
  consume: Limiter['consume'];
  /** Calls `listener` when a concurrent slot is released in this process; returns its removal. */
  onRelease: (listener: () => void) => () => void;
  /** The rules operators set (rule-check.ts): a deny refuses a wait at once, an allow lets it through, an override names its set. */
  rules?: Pick<RuleStage, 'check'>;
}): Wait {
  const { prefix, clock, storeCall, reportError, setOf, withoutStore, adjust } = o;

  /** One reservation: the store's reply and its Decision, or the fail mode's Decision (no reply). */
  function reserve(attempt: Attempt, maxWaitMs: number): Promise<{ reply?: StoreReply; decision: Decision }> {
    const { set } = attempt;
    const ps = set.policies;
    const request: StoreRequest = {
      keys: requestKeys(prefix, attempt.tag, ps, attempt.id),
      policies: ps,
      cost: attempt.cost,
      peek: false,
      maxWaitMs,
    };
    if (attempt.id !== undefined) request.idTtlMs = set.idTtlMs;
    return ask(
      storeCall,
      reportError,
      attempt.key,
      request,
      clock(),
      (reply) => {
        const decision = toDecision(ps, reply, 'store');
        if (reply.allowed) decision.adjust = adjust.of(attempt, 0, 'store');
        return { reply, decision };
      },
      () => withoutStore(attempt).then((decision) => ({ decision })),
    );
  }

  /** Waits for the reservation's turn; an abort first gives its place back (its own adjust) and rejects. */
  async function turn(decision: Decision, at: number, cost: number, signal: AbortSignal | undefined): Promise<void> {
    try {
      await sleep(at - performance.now(), signal);
    } catch (reason) {
      await decision.adjust?.(-cost).catch(() => undefined);
      throw reason;
    }
  }

  return async function wait(key: string, options?: WaitOptions): Promise<Decision> {
    const call = options === undefined ? undefined : callOptions(options, WAIT_OPTIONS, 'wait');
    const scoped = counterKey(key, call?.scope);
    const ruled = o.rules?.check(key, call?.scope, call?.ip);
    const set = ruled?.set ?? setOf(call?.policy);
    const cost = checkCost(call?.cost, set.policies, set.capacity);
    const id = call?.id;
    if (id !== undefined) checkId(id, set.hasSlots);
    const maxWaitMs = call?.maxWait === undefined ? MAX_WAIT_MS : parseMaxWait(call.maxWait, 'maxWait');
    const signal = call?.signal;
    if (signal !== undefined && !(signal instanceof AbortSignal)) badOption('signal', 'an AbortSignal', signal);
    signal?.throwIfAborted();
    if (ruled?.decision !== undefined) {
      if (ruled.decision.allowed) return { ...ruled.decision, waitedMs: 0 };
      throw new WaitError(ruled.decision.retryAfterMs, maxWaitMs, ruled.decision.rule);
    }

    const started = performance.now();
    const deadline = started + maxWaitMs;
    const done = (d: Decision): Decision => {
      d.waitedMs = Math.round(performance.now() - started);
      return d;
    };
    const again: ConsumeOptions = { cost };
    if (call?.policy !== undefined) again.policy = call.policy as PolicyInput;
    if (id !== undefined) again.id = id;
    const slots = set.hasSlots;
    for (;;) {
      let decision: Decision;
      if (canReserve(set)) {
        const attempt: Attempt = {
          set,
          key: scoped,
          tag: keyTag(scoped),
          cost,
          peek: false,
          final: true,
          ...(id === undefined ? {} : { id }),
        };
        const left = Math.max(0, deadline - performance.now());
        const { reply, decision: d } = await reserve(attempt, left);
        if (reply !== undefined) {
          if (!reply.allowed) throw new WaitError(d.retryAfterMs, maxWaitMs);
          // The store decided before its reply came: counted from the reply, a turn is never early, and late by
          // at most the round trip (counted from halfway, a first call's script load made turns 80 ms early).
          const at = performance.now() + (reply.waitMs ?? 0);
          await turn(d, at, cost, signal);
          return done(d);
        }
        decision = d;
      } else {
        decision = await o.consume(scoped, again);
      }
      if (decision.allowed) return done(decision);
      const now = performance.now();
      const retry = decision.retryAfterMs;
      if (!slots && now + retry > deadline) throw new WaitError(retry, maxWaitMs);
      if (now >= deadline) throw new WaitError(Math.max(retry, 1), maxWaitMs);
      const pause = slots ? Math.min(SLOT_POLL_MS, deadline - now) : Math.min(retry + jitter(retry), deadline - now);
      await sleep(pause, signal, slots ? o.onRelease : undefined);
    }
  };
}
