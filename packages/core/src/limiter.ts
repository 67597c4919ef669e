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
// The stages hang off one object per limiter, a Pipeline, whose methods every limiter shares: the
// decision's path runs the same code with objects of the same shape however many limiters a process
// has (bench/limiters.mjs), where closures made per limiter would each be code of its own.
import { performance } from 'node:perf_hooks';
import { type Adjust, createAdjust } from './adjust.js';
import type { Attempt } from './attempt.js';
import { CALL_OPTIONS, CONSUME_OPTIONS, callOptions, checkCost, checkId, counterKey } from './call-checks.js';
import { decideShard, type ShardStages } from './decide-shard.js';
import type { Decision } from './decision.js';
import { DenyCache } from './deny-cache.js';
import { badOption } from './errors.js';
import { decisionChannel, eventsHeard, type LimiterEvent, publish, REPORT } from './events.js';
import { createFailMode, type FailModeOf } from './fail-mode.js';
import { finish } from './finish.js';
import { holdsLocally } from './held-locally.js';
import type { CallOptions, ConsumeOptions, Limiter } from './limiter-api.js';
import { type LimiterOptions, type ResolvedLimiterOptions, resolveLimiterOptions } from './limiter-options.js';
import { createPolicyCache, type PolicyCache, type PolicySet, policySet } from './policy-set.js';
import { Prefilter } from './prefilter.js';
import { createRegionTier, type RegionTier } from './regions/tier.js';
import { createReset } from './reset.js';
import { createRuleStage, type RuleStage } from './rule-check.js';
import { SlotSets } from './slots.js';
import type { Store } from './store/contract.js';
import { keyTag } from './store/keys.js';
import { memoryStore } from './store/memory-store.js';
import { createStoreCall, type StoreCall } from './store-call.js';
import { consumeTiers, type TierStages } from './tiers.js';
import { createWait, type Wait } from './wait.js';

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
  const p = new Pipeline(resolveLimiterOptions(options));
  // Arrows over the pipeline, so that a method taken off the limiter still works.
  const limiter: Limiter = {
    consume: (key, options) => p.consume(key, options),
    peek: (key, options) => p.peek(key, options),
    wait: (key, options) => p.regions?.refuse('wait') ?? p.wait(key, options),
    adjust: (key, delta, options) => p.adjustKey(key, delta, options),
    reset: (key, options) => p.reset(key, options),
    close: () => p.close(),
  };
  Object.defineProperty(limiter, REPORT, { value: (event: Omit<LimiterEvent, 'prefix'>) => p.emit(event) });
  Object.defineProperty(limiter, CHECK_COST, { value: (cost: number) => p.own && checkCost(cost, p.own.policies, p.own.capacity) });
  return limiter;
}

/** One limiter's stages and what they share; the stages reach each other through it (ShardStages, TierStages). */
class Pipeline implements ShardStages, TierStages {
  readonly prefix: string;
  readonly clock: () => number;
  readonly shadow: boolean;
  readonly own: PolicySet | undefined;
  readonly calls: PolicyCache;
  readonly denyCache: DenyCache | undefined;
  /** The local tiers' store (prefilter, fallback). */
  readonly local: Store | undefined;
  readonly hooks: (((event: LimiterEvent) => void) | undefined)[];
  readonly storeCall: StoreCall;
  readonly failMode: FailModeOf;
  readonly prefilter: Prefilter | undefined;
  readonly slots: SlotSets;
  readonly rules: RuleStage | undefined;
  readonly resetKey: (tag: string, sets: readonly PolicySet[]) => Promise<void>;
  readonly adjust: Adjust;
  readonly wait: Wait;
  /** With `regions`: a consume and a peek spend from this region's lease (regions/tier.ts). */
  readonly regions: RegionTier | undefined;
  /** Ends what holdsLocally recorded (close()); held here, it keeps that record alive while the limiter is. */
  readonly letGo: () => void;

  constructor(readonly o: ResolvedLimiterOptions) {
    const { prefix, store, clock, onEvent } = o;
    this.prefix = prefix;
    this.clock = clock;
    this.shadow = o.shadow;
    const guarded = !store.local;
    const setOptions = { shards: o.shards, fallback: o.fallback || undefined, prefilter: o.prefilter !== undefined };
    this.own = o.policy ? policySet(o.policy, setOptions, '', 'policy') : undefined;
    this.calls = createPolicyCache(this.own, setOptions);
    this.denyCache = guarded && o.denyCache > 0 ? new DenyCache(o.denyCache) : undefined;
    // The local tiers count on the wall clock as the memory store does (calendar periods need it), or on
    // the test clock when one is given.
    const fallsBack = o.failMode === 'closed' && o.fallback !== false;
    const local = o.prefilter || (guarded && fallsBack) ? memoryStore(o.testClock ? { clock } : {}) : undefined;
    this.local = local;
    // resetAll (testing) forgets what this process holds of the prefix along with the store's keys.
    this.letGo = holdsLocally(store, prefix, async () => {
      this.denyCache?.clear();
      await local?.resetPrefix?.(prefix);
    });
    this.hooks = [onEvent];
    this.storeCall = createStoreCall(store, o, { prefix, onEvent });
    this.failMode = createFailMode(
      o.fallback === false ? 'refuse' : o.failMode,
      prefix,
      local,
      (type, key) => this.emit({ type, key }),
      () => this.storeCall.retryIn(clock()),
    );
    this.prefilter = o.prefilter && new Prefilter(o.prefilter, prefix, local as Store);
    const reportError = this.reportError.bind(this);
    const setOf = this.setOf.bind(this);
    const forgetDenials = this.forgetDenials.bind(this);
    this.slots = new SlotSets({ prefix, local: fallsBack ? local : undefined, storeCall: this.storeCall, clock, reportError });
    this.rules = createRuleStage(o, (inputs) => this.calls.get(inputs), this.emit.bind(this));
    this.resetKey = createReset(prefix, store, local, o.prefilter);
    this.adjust = createAdjust({ options: o, storeCall: this.storeCall, reportError, failMode: this.failMode, setOf, forgetDenials });
    this.wait = createWait({
      prefix,
      clock,
      storeCall: this.storeCall,
      reportError,
      setOf,
      withoutStore: (attempt) => this.withoutStore(attempt),
      adjust: this.adjust,
      consume: (key, options) => this.consume(key, options),
      onRelease: (wake) => this.slots.onRelease(wake),
      rules: this.rules,
    });
    this.regions = o.regions && createRegionTier(o.regions, { options: o, stages: this, emit: this.emit.bind(this), onEvent });
  }

  emit(event: Omit<LimiterEvent, 'prefix'>): void {
    if (eventsHeard(this.o.onEvent)) publish({ prefix: this.prefix, ...event }, this.hooks);
  }

  /** A store call that could not be answered ('store-error'), naming the caller's key when there is one. */
  reportError(key: string | undefined, error: Error | undefined, latencyMs: number): void {
    this.emit(key === undefined ? { type: 'store-error', error, latencyMs } : { type: 'store-error', key, error, latencyMs });
  }

  hold(decision: Decision, attempt: Attempt, keys?: readonly string[]): Decision {
    return attempt.slot === undefined ? decision : this.slots.hold(decision, attempt, keys);
  }

  finish(key: string, decision: Decision): Decision {
    return finish(this, key, decision);
  }

  adjustOf(attempt: Attempt, shard: number, keys: readonly string[]): Decision['adjust'] {
    return this.adjust.of(attempt, shard, 'store', keys);
  }

  /** The fail mode's decision; a fallback's that charged can adjust itself there. */
  withoutStore(attempt: Attempt): Promise<Decision> {
    return this.failMode(attempt).then((d) => {
      if (d.allowed && !attempt.peek && d.source === 'fallback') d.adjust = this.adjust.of(attempt, 0, 'fallback');
      const held = attempt.slot === undefined ? d : this.hold(d, attempt);
      return attempt.final ? this.finish(attempt.key, held) : held;
    });
  }

  knownSets(): PolicySet[] {
    return [...(this.own ? [this.own] : []), ...this.calls.sets()];
  }

  /** Forgets every known set's denials of a key: sets share counters (a policy in two plans, a quota under two limits). */
  forgetDenials(tag: string): void {
    this.denyCache?.forget(tag, this.knownSets());
  }

  /** The set a call is decided by: its own `policy`, parsed once per distinct input, or the limiter's. */
  setOf(policy: unknown): PolicySet {
    if (policy !== undefined) return this.calls.get(policy);
    if (this.own === undefined)
      badOption('policy', "given to this call, since the limiter has none (e.g. { policy: '100/1m' })", undefined);
    return this.own;
  }

  /** Publishes a decision on sluice:decision once it is made; only while someone subscribes. */
  observed(key: string, started: number, decision: Promise<Decision>): Promise<Decision> {
    return decision.then((d) => {
      decisionChannel.publish({ prefix: this.prefix, key, decision: d, durationMs: performance.now() - started });
      return d;
    });
  }

  consume(key: string, options: ConsumeOptions | undefined): Promise<Decision> {
    const { rules } = this;
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
      set = ruled?.set ?? this.setOf(call?.policy);
      cost = checkCost(call?.cost, set.policies, set.capacity);
      id = call?.id;
      if (id !== undefined) checkId(id, set.hasSlots);
    } catch (error) {
      return Promise.reject(error);
    }
    const started = decisionChannel.hasSubscribers ? performance.now() : -1;
    const direct = this.prefilter === undefined && set.shards.count === 1;
    const attempt: Attempt =
      id === undefined && !set.hasSlots
        ? { set, key, tag: keyTag(key), cost, peek: false, final: direct }
        : { set, key, tag: keyTag(key), cost, peek: false, final: direct, id, slot: set.hasSlots ? this.slots.of(set).next() : undefined };
    let decision = !direct ? consumeTiers(this, attempt) : this.regions ? this.regions.decide(attempt) : decideShard(this, attempt, 0);
    if (rules !== undefined) decision = rules.watch(caller, scope, attempt.tag, decision);
    return started < 0 ? decision : this.observed(key, started, decision);
  }

  async peek(key: string, options: CallOptions | undefined): Promise<Decision> {
    const { rules } = this;
    const call = callOptions(options, CALL_OPTIONS, 'peek');
    const caller = key;
    key = counterKey(key, call?.scope);
    const ruled = rules?.check(caller, call?.scope, call?.ip);
    if (ruled?.decision !== undefined && rules) return rules.answer(key, ruled.decision);
    const set = ruled?.set ?? this.setOf(call?.policy);
    const started = decisionChannel.hasSubscribers ? performance.now() : -1;
    const attempt: Attempt = { set, key, tag: keyTag(key), cost: 1, peek: true, final: false };
    const decision = this.regions ? this.regions.decide(attempt) : decideShard(this, attempt, 0);
    return started < 0 ? decision : this.observed(key, started, decision);
  }

  adjustKey(key: string, delta: number, options: CallOptions | undefined): Promise<Decision> {
    if (this.regions) return this.regions.refuse('adjust');
    try {
      const call = callOptions(options, CALL_OPTIONS, 'adjust');
      return this.adjust(counterKey(key, call?.scope), delta, call);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  async reset(key: string, options: CallOptions | undefined): Promise<void> {
    const call = callOptions(options, CALL_OPTIONS, 'reset');
    key = counterKey(key, call?.scope);
    const tag = keyTag(key);
    // Every known set's denials of the key go, not only the reset one's.
    this.forgetDenials(tag);
    await this.resetKey(tag, call?.policy !== undefined ? [this.setOf(call.policy)] : this.knownSets());
  }

  async close(): Promise<void> {
    this.letGo();
    await this.rules?.close();
    await this.regions?.close();
    this.storeCall.close();
    this.denyCache?.clear();
    await this.local?.close();
    if (this.o.ownStore) await this.o.store.close();
  }
}
