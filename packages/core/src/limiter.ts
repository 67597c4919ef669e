// createLimiter: the stages a consume goes through, in order —
//   resolved options (limiter-options.ts)
//   -> prefilter (prefilter.ts): a local first tier, when configured
//   -> shard (shards.ts): which sub-key of a hot key
//   -> deny cache (deny-cache.ts): a denial the store gave lately, answered here
//   -> store call (store-call.ts): deadline and breaker
//   -> fail mode (fail-mode.ts): the decision when the store cannot answer
//   -> finish: shadow mode and the denied event.
// Every decision is also published on the diagnostics channel sluice:decision, every event on sluice:event.
import { channel } from 'node:diagnostics_channel';
import { performance } from 'node:perf_hooks';
import { createAdjust } from './adjust.js';
import type { Attempt } from './attempt.js';
import { type Decision, replyRetryMs, toDecision } from './decision.js';
import { DenyCache } from './deny-cache.js';
import { badOption, SluiceError } from './errors.js';
import { createFailMode, longestWindow } from './fail-mode.js';
import { fallbackTag, idKey, keyTag, shardTag, storeKey } from './keys.js';
import { type LimiterEvent, type LimiterOptions, resolveLimiterOptions } from './limiter-options.js';
import { memoryStore } from './memory-store.js';
import { isConcurrent, type Policy, type PolicyInput } from './policy.js';
import { createPrefilter } from './prefilter.js';
import { REPORT } from './report.js';
import { createShards } from './shards.js';
import { createSlots } from './slots.js';
import type { StoreRequest } from './store.js';
import { createStoreCall } from './store-call.js';

export type { FailMode, LimiterEvent, LimiterOptions } from './limiter-options.js';

/** A rate limiter. */
export interface Limiter {
  /**
   * Charges `cost` (default 1) to `key` if every policy allows it. Never rejects on a store failure.
   * With `id`, idempotent: a consume whose id was already charged for this key (within the longest
   * window) is allowed again and charges nothing; a denied one recorded nothing. With a concurrent
   * policy, an allowed Decision holds a slot until its `release()`.
   */
  consume(key: string, options?: { cost?: number; id?: string }): Promise<Decision>;
  /**
   * Moves `key`'s charge by `delta` on every rate policy (or on `policy`), atomically: delta > 0 charges
   * without a check (a debt that later requests wait out), delta < 0 refunds, never past full.
   * Returns the Decision after it, as a peek would see it. A store failure goes to the fail mode.
   * @example await limiter.adjust(user, usedTokens - estimate)
   */
  adjust(key: string, delta: number, options?: { policy?: PolicyInput | PolicyInput[] }): Promise<Decision>;
  /** Reads `key` without charging: would a cost of 1 pass now? */
  peek(key: string): Promise<Decision>;
  /** Forgets `key` everywhere this limiter counts it. */
  reset(key: string): Promise<void>;
  /** Releases what the limiter holds. A store that was passed in stays open. */
  close(): Promise<void>;
}

/** Every decision, as { prefix, key, decision, durationMs }; nothing is built while no one subscribes. */
const decisionChannel = channel('sluice:decision');
/** Every LimiterEvent, as the event itself. */
const eventChannel = channel('sluice:event');

/**
 * Creates a limiter. Bad options throw here, never at request time.
 * @example
 * const limiter = createLimiter({ policy: '100/1m' });
 * const d = await limiter.consume(ip); if (!d.allowed) reply429(d.retryAfterMs);
 */
export function createLimiter(options: LimiterOptions): Limiter {
  const o = resolveLimiterOptions(options);
  const { policy: policies, prefix, store, clock, onEvent } = o;
  const guarded = !store.local;
  const shards = createShards(policies, o.shards);
  const denyCache = guarded && o.denyCache > 0 ? new DenyCache(o.denyCache) : undefined;
  const local = o.prefilter || (guarded && o.failMode === 'closed') ? memoryStore({ clock }) : undefined;

  const emit = (event: Omit<LimiterEvent, 'prefix'>) => {
    if (onEvent === undefined && !eventChannel.hasSubscribers) return;
    const full: LimiterEvent = { prefix, ...event };
    eventChannel.publish(full);
    try {
      onEvent?.(full);
    } catch {
      // A logging hook must not turn a decision into an error.
    }
  };
  const storeCall = createStoreCall(store, o, (open, error, ms) =>
    emit(open ? { type: 'breaker-open', error } : { type: 'breaker-close', latencyMs: ms }),
  );
  const failMode = createFailMode(o.failMode, prefix, policies, o.fallback, local, (type, key) => emit({ type, key }));
  const prefilter = o.prefilter && createPrefilter(o.prefilter, prefix, local as NonNullable<typeof local>);
  const keysOf = (tag: string, ps: readonly Policy[]) => ps.map((p) => storeKey(prefix, tag, p.id));
  const slots = createSlots({
    prefix,
    policies,
    fallback: o.fallback,
    local: o.failMode === 'closed' ? local : undefined,
    storeCall,
    clock,
    emit,
  });
  const hold = slots.hold;
  const idTtlMs = longestWindow(policies);
  const adjust = createAdjust({ options: o, shards: shards.count, local, denyCache, storeCall, emit });
  const hasSlots = policies.some(isConcurrent);

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

  const withoutStore = (attempt: Attempt): Promise<Decision> =>
    attempt.final
      ? failMode(attempt).then((d) => finish(attempt.key, hold(d, attempt)))
      : attempt.slot === undefined
        ? failMode(attempt)
        : failMode(attempt).then((d) => hold(d, attempt));

  /**
   * One shard's decision: the deny cache's, the store's, or the fail mode's. The fast path: not async,
   * and one promise per call, since it is on every decision's path.
   */
  function decideShard(attempt: Attempt, shard: number): Promise<Decision> {
    const tag = shardTag(attempt.tag, shard, shards.count);
    const now = clock();
    // An id the store already charged is allowed there: the deny cache must not answer for it.
    if (denyCache && !attempt.peek && attempt.id === undefined) {
      const cached = denyCache.get(tag, attempt.cost, now);
      if (cached) return Promise.resolve(attempt.final ? finish(attempt.key, cached) : cached);
    }
    if (!storeCall.allow(now)) return withoutStore(attempt);
    const ps = shards.policies[shard] as readonly Policy[];
    const request: StoreRequest = { keys: keysOf(tag, ps), policies: ps, cost: attempt.cost, peek: attempt.peek };
    if (hasSlots && !attempt.peek) request.slot = attempt.slot;
    if (attempt.id !== undefined) {
      (request.keys as string[]).push(idKey(prefix, tag, attempt.id));
      request.idTtlMs = idTtlMs;
    }
    return new Promise<Decision>((resolve, reject) => {
      storeCall.decide(request, now, (error, reply, latencyMs) => {
        if (reply === undefined) {
          emit({ type: 'store-error', key: attempt.key, error, latencyMs });
          resolve(withoutStore(attempt));
          return;
        }
        try {
          const decision = toDecision(policies, reply, 'store', shards.scales[shard]);
          if (attempt.slot !== undefined) hold(decision, attempt);
          // The store's retry to the µs, not the Decision's whole ms: at high rates that is all of it.
          if (denyCache && !reply.allowed && !attempt.peek) denyCache.set(tag, attempt.cost, decision, now, replyRetryMs(reply));
          resolve(attempt.final ? finish(attempt.key, decision) : decision);
        } catch (e) {
          // A store's malformed reply, say: the caller hears of it rather than waiting forever.
          reject(e);
        }
      });
    });
  }

  /** consume() with a prefilter or shards. */
  async function consumeTiers(attempt: Attempt): Promise<Decision> {
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

  const direct = !prefilter && shards.count === 1;

  const limiter: Limiter = {
    consume(key, options) {
      let cost: number;
      let id: string | undefined;
      try {
        checkKey(key);
        cost = checkCost(options?.cost, policies);
        id = options?.id;
        if (id !== undefined) checkId(id, hasSlots);
      } catch (error) {
        return Promise.reject(error);
      }
      const started = decisionChannel.hasSubscribers ? performance.now() : -1;
      const attempt: Attempt =
        id === undefined && !slots.taken
          ? { key, tag: keyTag(key), cost, peek: false, final: direct }
          : { key, tag: keyTag(key), cost, peek: false, final: direct, id, slot: slots.taken ? slots.next() : undefined };
      const decision = direct ? decideShard(attempt, 0) : consumeTiers(attempt);
      return started < 0 ? decision : observed(key, started, decision);
    },

    async peek(key) {
      checkKey(key);
      const started = decisionChannel.hasSubscribers ? performance.now() : -1;
      const decision = decideShard({ key, tag: keyTag(key), cost: 1, peek: true, final: false }, 0);
      return started < 0 ? decision : observed(key, started, decision);
    },

    async adjust(key, delta, options) {
      checkKey(key);
      return adjust(key, delta, options);
    },

    async reset(key) {
      checkKey(key);
      const tag = keyTag(key);
      if (local) await local.reset([...keysOf(fallbackTag(tag), o.fallback), ...(o.prefilter ? keysOf(tag, [o.prefilter]) : [])]);
      // One reset per shard: on a Cluster each shard lives in its own slot.
      await Promise.all(
        shards.policies.map((ps, s) => {
          const t = shardTag(tag, s, shards.count);
          denyCache?.delete(t);
          return store.reset(keysOf(t, ps));
        }),
      );
    },

    async close() {
      storeCall.close();
      denyCache?.clear();
      await local?.close();
      if (o.ownStore) await store.close();
    },
  };
  Object.defineProperty(limiter, REPORT, { value: emit });
  return limiter;
}

function checkKey(key: unknown): string {
  if (typeof key !== 'string') throw new SluiceError('ERR_SLUICE_KEY', `key must be a string, got ${typeof key}`);
  return key;
}

function checkId(id: unknown, concurrent: boolean): void {
  if (typeof id !== 'string' || id === '') badOption('id', 'a non-empty string', id);
  if (concurrent) badOption('id', 'absent on a limiter with a concurrent policy (a retry of a charged id would hold no slot)', id);
}

function checkCost(cost: unknown, policies: readonly Policy[]): number {
  if (cost === undefined) return 1;
  if (typeof cost !== 'number' || !Number.isFinite(cost) || cost <= 0) badOption('cost', 'a positive finite number', cost);
  if (!Number.isInteger(cost) && policies.some((p) => p.algorithm === 'sliding-log')) {
    badOption('cost', "a whole number with a 'sliding-log' policy", cost);
  }
  return cost;
}
