// createLimiter wires the stages a consume goes through, in order; each is a file of its own:
//   call-checks.ts   the call's options, key and scope, cost and id
//   rule-check.ts    the rules operators change at run time: a deny or an allow answers here, an override
//                    names the policy set; and bans (rules/ban.ts) count the denials made below
//   policy-set.ts    the call's policy set: the limiter's, or a plan
//   tiers.ts         prefilter.ts (a local first tier) and shards.ts (a hot key's sub-key, one more try)
//   decide-shard.ts  one shard's decision: deny-cache.ts (a denial the store gave lately, answered here
//                    for a second at most), else one store call (store-call.ts: its deadline and breaker;
//                    adjust, release and wait ask the store through its ask()), or else
//   fail-mode.ts     the decision when the store cannot answer
//   slots.ts         concurrent slots (release), adjust.ts (adjust), finish.ts (shadow mode, denied event)
//   wait.ts          wait(): a reservation through the store call, or asking again
//   regions/         with `regions`, a consume and a peek spend from this region's lease instead (tier.ts)
// reset.ts forgets a key everywhere. Every decision is also published on the diagnostics channel
// sluice:decision, every event on sluice:event (events.ts makes both).
import { performance } from 'node:perf_hooks';
import { createAdjust } from './adjust.js';
import type { Attempt } from './attempt.js';
import { CALL_OPTIONS, CONSUME_OPTIONS, callOptions, checkCost, checkId, counterKey } from './call-checks.js';
import { createDecideShard, type ShardStages } from './decide-shard.js';
import type { Decision } from './decision.js';
import { DenyCache } from './deny-cache.js';
import { badOption } from './errors.js';
import { decisionChannel, eventsHeard, type LimiterEvent, publish, REPORT } from './events.js';
import { createFailMode } from './fail-mode.js';
import { createFinish } from './finish.js';
import { holdsLocally } from './held-locally.js';
import type { Limiter } from './limiter-api.js';
import { type LimiterOptions, resolveLimiterOptions } from './limiter-options.js';
import { createPolicyCache, type PolicySet, policySet } from './policy-set.js';
import { createPrefilter } from './prefilter.js';
import { createRegionTier } from './regions/tier.js';
import { createReset } from './reset.js';
import { createRuleStage } from './rule-check.js';
import { createSlots, type Slots } from './slots.js';
import { keyTag } from './store/keys.js';
import { memoryStore } from './store/memory-store.js';
import { createStoreCall, type ReportError } from './store-call.js';
import { createTiers } from './tiers.js';
import { createWait } from './wait.js';

export type { LimiterEvent } from './events.js';
export type { FailMode } from './fail-mode.js';
export type { CallOptions, ConsumeOptions, Limiter, WaitOptions } from './limiter-api.js';
export type { LimiterOptions } from './limiter-options.js';

/** The adapter kit's check, at construction, of a constant cost against the limiter's own policies (checkCost's error). */
export const CHECK_COST = Symbol.for('sluice.checkCost');

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
  const setOptions = { shards: o.shards, fallback: o.fallback || undefined, prefilter: o.prefilter !== undefined };
  const own = o.policy && policySet(o.policy, setOptions, '', 'policy');
  const calls = createPolicyCache(own, setOptions);
  const denyCache = guarded && o.denyCache > 0 ? new DenyCache(o.denyCache) : undefined;
  // The local tiers count on the wall clock as the memory store does (calendar periods need it), or on
  // the test clock when one is given.
  const fallsBack = o.failMode === 'closed' && o.fallback !== false;
  const local = o.prefilter || (guarded && fallsBack) ? memoryStore(o.testClock ? { clock } : {}) : undefined;
  // resetAll (testing) forgets what this process holds of the prefix along with the store's keys.
  const letGo = holdsLocally(store, prefix, async () => {
    denyCache?.clear();
    await local?.resetPrefix?.(prefix);
  });

  const hooks = [onEvent];
  const emit = (event: Omit<LimiterEvent, 'prefix'>) => {
    if (eventsHeard(onEvent)) publish({ prefix, ...event }, hooks);
  };
  const storeCall = createStoreCall(store, o, { prefix, onEvent });
  const reportError: ReportError = (key, error, latencyMs) =>
    emit(key === undefined ? { type: 'store-error', error, latencyMs } : { type: 'store-error', key, error, latencyMs });
  const failMode = createFailMode(
    o.fallback === false ? 'refuse' : o.failMode,
    prefix,
    local,
    (type, key) => emit({ type, key }),
    () => storeCall.retryIn(clock()),
  );
  const prefilter = o.prefilter && createPrefilter(o.prefilter, prefix, local as NonNullable<typeof local>);

  // Concurrent slots, per policy set that has any (made when first used).
  const slotsBySet = new WeakMap<PolicySet, Slots>();
  const slotsOf = (set: PolicySet): Slots => {
    let slots = slotsBySet.get(set);
    if (slots === undefined) {
      const fallbackLocal = fallsBack ? local : undefined;
      slots = createSlots({ prefix, policies: set.policies, fallback: set.fallback, local: fallbackLocal, storeCall, clock, reportError });
      slotsBySet.set(set, slots);
    }
    return slots;
  };
  // A slot released in this process wakes the waits for one (wait.ts).
  const onRelease = new Set<() => void>();
  const hold = (decision: Decision, attempt: Attempt, keys?: readonly string[]): Decision => {
    if (attempt.slot === undefined) return decision;
    const held = slotsOf(attempt.set).hold(decision, attempt, keys);
    const { release } = held;
    if (release)
      held.release = () =>
        release().finally(() => {
          for (const wake of onRelease) wake();
        });
    return held;
  };

  const knownSets = (): PolicySet[] => [...(own ? [own] : []), ...calls.sets()];
  /** Forgets every known set's denials of a key: sets share counters (a policy in two plans, a quota under two limits). */
  const forgetDenials = (tag: string): void => denyCache?.forget(tag, knownSets());

  const finish = createFinish(o.shadow, emit);

  /** The fail mode's decision; a fallback's that charged can adjust itself there. */
  const withoutStore = (attempt: Attempt): Promise<Decision> =>
    failMode(attempt).then((d) => {
      if (d.allowed && !attempt.peek && d.source === 'fallback') d.adjust = adjust.of(attempt, 0, 'fallback');
      const held = attempt.slot === undefined ? d : hold(d, attempt);
      return attempt.final ? finish(attempt.key, held) : held;
    });

  const shardStages: ShardStages = {
    prefix,
    clock,
    denyCache,
    storeCall,
    reportError,
    hold,
    finish,
    adjustOf: (attempt, shard) => adjust.of(attempt, shard, 'store'),
    withoutStore,
  };
  const decideShard = createDecideShard(shardStages);
  // regions: a consume and a peek spend from this region's lease instead (regions/tier.ts).
  const regions = o.regions && createRegionTier(o.regions, { options: o, stages: shardStages, emit, onEvent });
  const decideFirst = regions ? regions.decide : (attempt: Attempt) => decideShard(attempt, 0);
  const consumeTiers = createTiers(prefilter, regions ? regions.decide : decideShard, finish);

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

  const rules = createRuleStage(o, (inputs) => calls.get(inputs), emit);
  const resetKey = createReset(prefix, store, local, o.prefilter);
  const adjust = createAdjust({ options: o, storeCall, reportError, failMode, setOf, forgetDenials });
  const wait = createWait({
    prefix,
    clock,
    storeCall,
    reportError,
    setOf,
    withoutStore,
    adjust,
    consume: (key, options) => limiter.consume(key, options),
    onRelease: (wake) => {
      onRelease.add(wake);
      return () => onRelease.delete(wake);
    },
    rules,
  });

  const limiter: Limiter = {
    consume(key, options) {
      let cost: number;
      let set: PolicySet;
      let id: string | undefined;
      let caller: string;
      let scope: string | undefined;
      try {
        const call = options === undefined ? undefined : callOptions(options, CONSUME_OPTIONS, 'consume');
        caller = key;
        scope = call?.scope;
        key = counterKey(key, scope);
        const ruled = rules?.check(caller, scope, call?.ip);
        if (ruled?.decision !== undefined && rules) return rules.answer(key, ruled.decision);
        set = ruled?.set ?? setOf(call?.policy);
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
      let decision = direct ? decideFirst(attempt) : consumeTiers(attempt);
      if (rules !== undefined) decision = rules.watch(caller, scope, attempt.tag, decision);
      return started < 0 ? decision : observed(key, started, decision);
    },

    async peek(key, options) {
      const call = callOptions(options, CALL_OPTIONS, 'peek');
      const caller = key;
      key = counterKey(key, call?.scope);
      const ruled = rules?.check(caller, call?.scope, call?.ip);
      if (ruled?.decision !== undefined && rules) return rules.answer(key, ruled.decision);
      const set = ruled?.set ?? setOf(call?.policy);
      const started = decisionChannel.hasSubscribers ? performance.now() : -1;
      const decision = decideFirst({ set, key, tag: keyTag(key), cost: 1, peek: true, final: false });
      return started < 0 ? decision : observed(key, started, decision);
    },

    wait: (key, options) => regions?.refuse('wait') ?? wait(key, options),

    adjust(key, delta, options) {
      if (regions) return regions.refuse('adjust');
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
      const tag = keyTag(key);
      // Every known set's denials of the key go, not only the reset one's.
      forgetDenials(tag);
      await resetKey(tag, call?.policy !== undefined ? [setOf(call.policy)] : knownSets());
    },

    async close() {
      letGo();
      await rules?.close();
      await regions?.close();
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
