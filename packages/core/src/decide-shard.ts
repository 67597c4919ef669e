// The store's tier for one shard of a consume or peek: the deny cache's answer, else one store call
// (store-call.ts: its deadline and breaker) whose reply becomes the Decision, else the fail mode's.
// consume and peek come here; adjust, release and wait ask the store through ask() (store-call.ts).
import type { Attempt } from './attempt.js';
import { type Decision, replyRetryMs, toDecision } from './decision.js';
import { type DenyCache, deniedTag } from './deny-cache.js';
import type { Policy } from './policy/policy.js';
import type { StoreReply, StoreRequest } from './store/contract.js';
import { requestKeys, shardTag } from './store/keys.js';
import type { StoreCall, StoreListener } from './store-call.js';

/** What the tier hands a decision to, and asks when the store cannot answer: the limiter's other stages (limiter.ts's Pipeline). */
export interface ShardStages {
  prefix: string;
  clock: () => number;
  denyCache: DenyCache | undefined;
  storeCall: StoreCall;
  reportError(key: string | undefined, error: Error | undefined, latencyMs: number): void;
  /** Concurrent slots: the decision holds its slot (slots.ts). */
  hold(decision: Decision, attempt: Attempt, keys?: readonly string[]): Decision;
  /** Shadow mode and the denied event, for a decision that goes to the caller as it is (finish.ts). */
  finish(key: string, decision: Decision): Decision;
  /** An allowed consume's own adjustment (adjust.ts). */
  adjustOf(attempt: Attempt, shard: number, keys: readonly string[]): Decision['adjust'];
  /** The fail mode's decision (fail-mode.ts). */
  withoutStore(attempt: Attempt): Promise<Decision>;
}

const ignore = () => {};

/**
 * One shard's store call: the request itself, and its listener (store-call.ts), whose answer settles
 * the decision's promise. One object per call, with methods rather than closures, since it is on every
 * decision's path, where closures and objects are the limiter's own CPU (bench/lab/consume-cpu.mjs).
 * Declared once for every limiter, its stages a field: a class per limiter gives each limiter's objects
 * a shape of their own, and the code they all run through slows down once it has seen a few
 * (bench/limiters.mjs).
 */
class StoreAsk implements StoreRequest, StoreListener {
  readonly keys: readonly string[];
  readonly policies: readonly Policy[];
  readonly cost: number;
  readonly peek: boolean;
  readonly slot: string | undefined;
  readonly idTtlMs: number | undefined;
  resolve: (d: Decision | Promise<Decision>) => void = ignore;
  reject: (e: unknown) => void = ignore;
  constructor(
    readonly stages: ShardStages,
    readonly attempt: Attempt,
    readonly shard: number,
    tag: string,
    readonly denied: string,
    readonly now: number,
  ) {
    const { set } = attempt;
    this.policies = set.shards.policies[shard] as readonly Policy[];
    this.keys = requestKeys(stages.prefix, tag, this.policies, attempt.id);
    this.cost = attempt.cost;
    this.peek = attempt.peek;
    this.slot = set.hasSlots && !attempt.peek ? attempt.slot : undefined;
    this.idTtlMs = attempt.id !== undefined ? set.idTtlMs : undefined;
  }

  answered(error: Error | undefined, reply: StoreReply | undefined, latencyMs: number): void {
    const { attempt, stages: s } = this;
    if (reply === undefined) {
      s.reportError(attempt.key, error, latencyMs);
      this.resolve(s.withoutStore(attempt));
      return;
    }
    try {
      this.resolve(this.decision(reply));
    } catch (e) {
      // A reply that cannot be read: the caller hears of it rather than waiting forever.
      this.reject(e);
    }
  }

  decision(reply: StoreReply): Decision {
    const { attempt, shard, stages: s } = this;
    const { shards, policies } = attempt.set;
    const decision = s.hold(toDecision(policies, reply, 'store', shards.scales[shard]), attempt, this.keys);
    if (reply.allowed && !attempt.peek) decision.adjust = s.adjustOf(attempt, shard, this.keys);
    // The store's retry to the µs, not the Decision's whole ms: at high rates that is all of it.
    if (s.denyCache && !reply.allowed && !attempt.peek) s.denyCache.set(this.denied, attempt.cost, decision, this.now, replyRetryMs(reply));
    return attempt.final ? s.finish(attempt.key, decision) : decision;
  }
}

/** The StoreAsk whose promise is being made: the executor below, one for every call, takes its resolvers. */
let asking: StoreAsk | undefined;
const takeResolvers = (resolve: StoreAsk['resolve'], reject: StoreAsk['reject']) => {
  (asking as StoreAsk).resolve = resolve;
  (asking as StoreAsk).reject = reject;
};

/**
 * One shard's decision: the deny cache's, the store's, or the fail mode's. Not async: one promise per
 * call. A function of the stages rather than a closure per limiter, so that every limiter runs it alike.
 */
export function decideShard(s: ShardStages, attempt: Attempt, shard: number): Promise<Decision> {
  const { set } = attempt;
  const { shards } = set;
  const tag = shardTag(attempt.tag, shard, shards.count);
  const denied = deniedTag(tag, set);
  const now = s.clock();
  // An id the store already charged is allowed there: the deny cache must not answer for it.
  if (s.denyCache && !attempt.peek && attempt.id === undefined) {
    const cached = s.denyCache.get(denied, attempt.cost, now);
    if (cached) return Promise.resolve(attempt.final ? s.finish(attempt.key, cached) : cached);
  }
  if (!s.storeCall.allow(now)) return s.withoutStore(attempt);
  const ask = new StoreAsk(s, attempt, shard, tag, denied, now);
  asking = ask;
  const decision = new Promise<Decision>(takeResolvers);
  asking = undefined;
  s.storeCall.decide(ask, now, ask);
  return decision;
}
