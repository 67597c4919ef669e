// createLimiter: the stages a consume goes through, in order —
//   resolved options (limiter-options.ts) and the call's policy set (policy-set.ts: the limiter's, or a plan)
//   -> prefilter (prefilter.ts): a local first tier, when configured
//   -> shard (shards.ts): which sub-key of a hot key
//   -> deny cache (deny-cache.ts): a denial the store gave lately, answered here
//   -> store call (store-call.ts): deadline and breaker
//   -> fail mode (fail-mode.ts): the decision when the store cannot answer
//   -> finish: concurrent slots (slots.ts), shadow mode and the denied event.
// adjust() is adjust.ts. Every decision is also published on the diagnostics channel sluice:decision,
// every event on sluice:event.
import { channel } from 'node:diagnostics_channel';
import { performance } from 'node:perf_hooks';
import { createAdjust } from './adjust.js';
import type { Attempt } from './attempt.js';
import { type Decision, replyRetryMs, toDecision } from './decision.js';
import { DenyCache } from './deny-cache.js';
import { badOption, describe, SluiceError } from './errors.js';
import { eventsHeard, publish } from './events.js';
import { createFailMode } from './fail-mode.js';
import { fallbackTag, keyTag, requestKeys, scopedKey, shardTag } from './keys.js';
import { type LimiterEvent, type LimiterOptions, resolveLimiterOptions } from './limiter-options.js';
import { memoryStore } from './memory-store.js';
import { checkNames, ownCopy } from './options.js';
import { LIMIT_MAX, LIMIT_MAX_TEXT, type Policy, type PolicyInput } from './policy.js';
import { createPolicyCache, type PolicySet, policySet } from './policy-set.js';
import { createPrefilter } from './prefilter.js';
import { REPORT } from './report.js';
import { createSlots, type Slots } from './slots.js';
import type { StoreReply, StoreRequest } from './store.js';
import { ask, createStoreCall, type ReportError } from './store-call.js';

export type { FailMode, LimiterEvent, LimiterOptions } from './limiter-options.js';

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
}

/** Options of one consume. */
export interface ConsumeOptions {
  /** The counter's scope (see CallOptions.scope). */
  scope?: string;
  /** Units to charge, > 0. Default 1. */
  cost?: number;
  /**
   * This call's policies instead of the limiter's (plans, tiers), one or several: all must pass, atomically.
   * Parsed once per distinct input. Counters are per policy: see the README on plan changes. Default: the limiter's.
   */
  policy?: PolicyInput | PolicyInput[];
  /** Idempotent: an id already charged for this key (within the longest window) is allowed and charges nothing. */
  id?: string;
}

/** The adapter kit's check, at construction, of a constant cost against the limiter's own policies (checkCost's error). */
export const CHECK_COST = Symbol.for('sluice.checkCost');

/** Every decision, as { prefix, key, decision, durationMs }; nothing is built while no one subscribes. */
const decisionChannel = channel('sluice:decision');

/**
 * Creates a limiter. Bad options throw here, never at request time.
 * @example
 * const limiter = createLimiter({ policy: '100/1m' });
 * const d = await limiter.consume(ip); if (!d.allowed) reply429(d.retryAfterMs);
 */
export function createLimiter(options: LimiterOptions): Limiter {
  const o = resolveLimiterOptions(options);
  const { prefix, store, clock, onEvent } = o;
  const guarded = !store.local;
  const setOptions = { shards: o.shards, fallback: o.fallback, prefilter: o.prefilter !== undefined };
  const own = o.policy && policySet(o.policy, setOptions, '', 'policy');
  const calls = createPolicyCache(own, setOptions);
  const denyCache = guarded && o.denyCache > 0 ? new DenyCache(o.denyCache) : undefined;
  // The local tiers count on the wall clock as the memory store does (calendar periods need it), or on
  // the test clock when one is given.
  const local = o.prefilter || (guarded && o.failMode === 'closed') ? memoryStore(o.testClock ? { clock } : {}) : undefined;

  const hooks = [onEvent];
  const emit = (event: Omit<LimiterEvent, 'prefix'>) => {
    if (eventsHeard(onEvent)) publish({ prefix, ...event }, hooks);
  };
  const storeCall = createStoreCall(store, o, { prefix, onEvent });
  const reportError: ReportError = (key, error, latencyMs) =>
    emit(key === undefined ? { type: 'store-error', error, latencyMs } : { type: 'store-error', key, error, latencyMs });
  const failMode = createFailMode(o.failMode, prefix, local, (type, key) => emit({ type, key }));
  const prefilter = o.prefilter && createPrefilter(o.prefilter, prefix, local as NonNullable<typeof local>);
  const keysOf = (tag: string, ps: readonly Policy[]) => requestKeys(prefix, tag, ps);

  // Concurrent slots, per policy set that has any (made when first used).
  const slotsBySet = new WeakMap<PolicySet, Slots>();
  const slotsOf = (set: PolicySet): Slots => {
    let slots = slotsBySet.get(set);
    if (slots === undefined) {
      const fallbackLocal = o.failMode === 'closed' ? local : undefined;
      slots = createSlots({ prefix, policies: set.policies, fallback: set.fallback, local: fallbackLocal, storeCall, clock, reportError });
      slotsBySet.set(set, slots);
    }
    return slots;
  };
  const hold = (decision: Decision, attempt: Attempt, keys?: readonly string[]): Decision =>
    attempt.slot === undefined ? decision : slotsOf(attempt.set).hold(decision, attempt, keys);

  /** The deny-cache tag of a key's shard under a set: a call's policies keep their denials apart ('{' is in no tag). */
  const deniedTag = (tag: string, set: PolicySet): string => (set.id === '' ? tag : `${tag}{${set.id}`);
  /** Forgets every known set's denials of a key: sets share counters (a policy in two plans, a quota under two limits). */
  function forgetDenials(tag: string): void {
    if (!denyCache || denyCache.empty) return;
    for (const set of [...(own ? [own] : []), ...calls.sets()]) {
      for (let s = 0; s < set.shards.count; s++) denyCache.delete(deniedTag(shardTag(tag, s, set.shards.count), set));
    }
  }

  /** Shadow mode and the denied event, once per decision that goes to the caller. */
  function finish(key: string, decision: Decision): Decision {
    if (decision.allowed) return decision;
    if (!o.shadow) {
      emit({ type: 'denied', key, decision });
      return decision;
    }
    emit({ type: 'shadow-denied', key, decision });
    return { ...decision, allowed: true, retryAfterMs: 0, shadowed: true };
  }

  /** The fail mode's decision; a fallback's that charged can adjust itself there. */
  const withoutStore = (attempt: Attempt): Promise<Decision> =>
    failMode(attempt).then((d) => {
      if (d.allowed && !attempt.peek && d.source === 'fallback') d.adjust = adjust.of(attempt, 0, 'fallback');
      const held = attempt.slot === undefined ? d : hold(d, attempt);
      return attempt.final ? finish(attempt.key, held) : held;
    });

  /**
   * One shard's decision: the deny cache's, the store's, or the fail mode's. The fast path: not async,
   * and one promise per call, since it is on every decision's path.
   */
  function decideShard(attempt: Attempt, shard: number): Promise<Decision> {
    const { set } = attempt;
    const { shards, policies } = set;
    const tag = shardTag(attempt.tag, shard, shards.count);
    const denied = deniedTag(tag, set);
    const now = clock();
    // An id the store already charged is allowed there: the deny cache must not answer for it.
    if (denyCache && !attempt.peek && attempt.id === undefined) {
      const cached = denyCache.get(denied, attempt.cost, now);
      if (cached) return Promise.resolve(attempt.final ? finish(attempt.key, cached) : cached);
    }
    const ps = shards.policies[shard] as readonly Policy[];
    const request: StoreRequest = { keys: requestKeys(prefix, tag, ps, attempt.id), policies: ps, cost: attempt.cost, peek: attempt.peek };
    if (set.hasSlots && !attempt.peek) request.slot = attempt.slot;
    if (attempt.id !== undefined) request.idTtlMs = set.idTtlMs;
    const answer = (reply: StoreReply): Decision => {
      const decision = hold(toDecision(policies, reply, 'store', shards.scales[shard]), attempt, request.keys);
      if (reply.allowed && !attempt.peek) decision.adjust = adjust.of(attempt, shard, 'store');
      // The store's retry to the µs, not the Decision's whole ms: at high rates that is all of it.
      if (denyCache && !reply.allowed && !attempt.peek) denyCache.set(denied, attempt.cost, decision, now, replyRetryMs(reply));
      return attempt.final ? finish(attempt.key, decision) : decision;
    };
    return ask(storeCall, reportError, attempt.key, request, now, answer, () => withoutStore(attempt));
  }

  /** consume() with a prefilter or shards. */
  async function consumeTiers(attempt: Attempt): Promise<Decision> {
    const { shards } = attempt.set;
    if (prefilter) {
      const denied = await prefilter(attempt);
      if (denied) return finish(attempt.key, denied);
    }
    // An id's record lives in one shard: its retries go there, and only there.
    const first = attempt.id === undefined ? shards.pick() : shards.of(attempt.id);
    const decision = await decideShard(attempt, first);
    if (
      decision.allowed ||
      shards.count === 1 ||
      attempt.id !== undefined ||
      (decision.source !== 'store' && decision.source !== 'deny-cache')
    ) {
      return finish(attempt.key, decision);
    }
    const second = await decideShard(attempt, shards.other(first));
    return finish(attempt.key, second.allowed || second.retryAfterMs < decision.retryAfterMs ? second : decision);
  }

  /** Publishes a decision on sluice:decision once it is made; only while someone subscribes. */
  const observed = (key: string, started: number, decision: Promise<Decision>): Promise<Decision> =>
    decision.then((d) => {
      decisionChannel.publish({ prefix, key, decision: d, durationMs: performance.now() - started });
      return d;
    });

  /** The set a call is decided by: its own `policy`, parsed once per distinct input, or the limiter's. */
  function setOf(policy: unknown): PolicySet {
    if (policy !== undefined) return calls.get(policy);
    if (own === undefined) badOption('policy', "given to this call, since the limiter has none (e.g. { policy: '100/1m' })", undefined);
    return own;
  }

  const adjust = createAdjust({ options: o, storeCall, reportError, failMode, setOf, forgetDenials });

  const limiter: Limiter = {
    consume(key, options) {
      let cost: number;
      let set: PolicySet;
      let id: string | undefined;
      try {
        const call = callOptions(options, CONSUME_OPTIONS, 'consume');
        key = counterKey(key, call?.scope);
        set = setOf(call?.policy);
        cost = checkCost(call?.cost, set.policies, set.capacity);
        id = call?.id;
        if (id !== undefined) checkId(id, set.hasSlots);
      } catch (error) {
        return Promise.reject(error);
      }
      const started = decisionChannel.hasSubscribers ? performance.now() : -1;
      const direct = !prefilter && set.shards.count === 1;
      const attempt: Attempt =
        id === undefined && !set.hasSlots
          ? { set, key, tag: keyTag(key), cost, peek: false, final: direct }
          : { set, key, tag: keyTag(key), cost, peek: false, final: direct, id, slot: set.hasSlots ? slotsOf(set).next() : undefined };
      const decision = direct ? decideShard(attempt, 0) : consumeTiers(attempt);
      return started < 0 ? decision : observed(key, started, decision);
    },

    async peek(key, options) {
      const call = callOptions(options, CALL_OPTIONS, 'peek');
      key = counterKey(key, call?.scope);
      const set = setOf(call?.policy);
      const started = decisionChannel.hasSubscribers ? performance.now() : -1;
      const decision = decideShard({ set, key, tag: keyTag(key), cost: 1, peek: true, final: false }, 0);
      return started < 0 ? decision : observed(key, started, decision);
    },

    adjust(key, delta, options) {
      try {
        const call = callOptions(options, CALL_OPTIONS, 'adjust');
        return adjust(counterKey(key, call?.scope), delta, call);
      } catch (error) {
        return Promise.reject(error);
      }
    },

    async reset(key, options) {
      const call = callOptions(options, CALL_OPTIONS, 'reset');
      key = counterKey(key, call?.scope);
      const policy = call?.policy;
      const tag = keyTag(key);
      const known = [...(own ? [own] : []), ...calls.sets()];
      const sets = policy !== undefined ? [setOf(policy)] : known;
      // Every known set's denials of the key go, not only the reset one's.
      forgetDenials(tag);
      if (local) {
        const fallbacks = new Set(sets.flatMap((set) => keysOf(fallbackTag(tag), set.fallback)));
        await local.reset([...fallbacks, ...(o.prefilter ? keysOf(tag, [o.prefilter]) : [])]);
      }
      // One reset per shard: on a Cluster each shard lives in its own slot.
      const byShard = new Map<string, Set<string>>();
      for (const set of sets) {
        set.shards.policies.forEach((ps, s) => {
          const t = shardTag(tag, s, set.shards.count);
          const keys = byShard.get(t) ?? new Set<string>();
          byShard.set(t, keys);
          for (const k of keysOf(t, ps)) keys.add(k);
        });
      }
      await Promise.all([...byShard.values()].map((keys) => store.reset([...keys])));
    },

    async close() {
      storeCall.close();
      denyCache?.clear();
      await local?.close();
      if (o.ownStore) await store.close();
    },
  };
  Object.defineProperty(limiter, REPORT, { value: emit });
  Object.defineProperty(limiter, CHECK_COST, { value: (cost: number) => own && checkCost(cost, own.policies, own.capacity) });
  return limiter;
}

/** The names each call's options may have. */
const CONSUME_OPTIONS = ['cost', 'policy', 'id', 'scope'];
const CALL_OPTIONS = ['policy', 'scope'];

/**
 * A call's options, undefined or an object: a name the call does not take is refused ("did you mean"), and only own
 * properties are read. Cheap on the hot path: the names are looked at in full only when one is not a known own one.
 */
function callOptions<T extends object>(options: T | undefined, known: readonly string[], call: string): T | undefined {
  if (options === undefined) return undefined;
  if (options === null || typeof options !== 'object') badOption(`${call} options`, 'an object', options);
  for (const name in options) {
    if (!known.includes(name) || !Object.hasOwn(options, name)) {
      checkNames(options, known, `a ${call} option`);
      return ownCopy(options) as T; // an inherited name: a polluted Object.prototype
    }
  }
  return options;
}

/** The key a counter is kept under: the caller's, in its scope when one is given (keys.ts scopedKey). */
function counterKey(key: unknown, scope: unknown): string {
  checkKey(key);
  if (scope === undefined) return key as string;
  if (typeof scope !== 'string' || scope === '') badOption('scope', 'a non-empty string', scope);
  return scopedKey(scope, key as string);
}

function checkKey(key: unknown): string {
  if (typeof key !== 'string') throw new SluiceError('ERR_SLUICE_KEY', `key must be a string, got ${describe(key)}`);
  // An empty key would count every such caller in one shared bucket.
  if (key === '') throw new SluiceError('ERR_SLUICE_KEY', 'key must be a non-empty string, got ""');
  return key;
}

function checkId(id: unknown, concurrent: boolean): void {
  if (typeof id !== 'string' || id === '') badOption('id', 'a non-empty string', id);
  if (concurrent) badOption('id', 'absent on a limiter with a concurrent policy (a retry of a charged id would hold no slot)', id);
}

function checkCost(cost: unknown, policies: readonly Policy[], capacity: PolicySet['capacity']): number {
  if (cost === undefined) return 1;
  if (typeof cost !== 'number' || !Number.isFinite(cost) || cost <= 0) {
    throw new SluiceError('ERR_SLUICE_COST', `cost must be a positive finite number, got ${describe(cost)}`);
  }
  if (!Number.isInteger(cost) && policies.some((p) => p.algorithm === 'sliding-log')) {
    throw new SluiceError('ERR_SLUICE_COST', `cost must be a whole number with a 'sliding-log' policy, got ${cost}`);
  }
  // Not a denial: a Retry-After would promise that it passes later, and it never does.
  if (cost > capacity.cost) {
    throw new SluiceError(
      'ERR_SLUICE_COST',
      `cost ${cost} can never pass: it is above the capacity ${capacity.cost} of policy "${capacity.policy.name}"`,
    );
  }
  // Only concurrent policies bound no capacity: the bound of every count still holds (policy.ts).
  if (cost > LIMIT_MAX) throw new SluiceError('ERR_SLUICE_COST', `cost must be at most ${LIMIT_MAX_TEXT}, got ${cost}`);
  return cost;
}
