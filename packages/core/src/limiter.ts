import { channel } from 'node:diagnostics_channel';
import { performance } from 'node:perf_hooks';
import { type Breaker, createBreaker, sharedBreaker } from './breaker.js';
import { createDeadlines, type Settle } from './deadlines.js';
import { type Decision, failOpenDecision, replyRetryMs, toDecision } from './decision.js';
import { DenyCache } from './deny-cache.js';
import { type Duration, parseDuration } from './duration.js';
import { badOption, SluiceError } from './errors.js';
import { keyTag, storeKey } from './keys.js';
import { memoryStore } from './memory-store.js';
import { type Policy, type PolicyInput, parsePolicies, parsePolicy } from './policy.js';
import type { Store, StoreRequest } from './store.js';

/** What the limiter does when its store fails or times out. */
export type FailMode = 'open' | 'closed';

/** Something worth a log line or a metric. */
export interface LimiterEvent {
  type: 'store-error' | 'breaker-open' | 'breaker-close' | 'fallback' | 'fail-open' | 'denied' | 'shadow-denied';
  /** The limiter's key namespace (its `prefix`). */
  prefix: string;
  /** The caller's key, when the event is about one request. */
  key?: string;
  error?: Error;
  /** ms the store call took (store-error), or how long the breaker was open (breaker-close). */
  latencyMs?: number;
  decision?: Decision;
}

/** Options of createLimiter(). */
export interface LimiterOptions {
  /** One policy, or several: a request passes only if all pass, atomically; a denial charges none. */
  policy: PolicyInput | PolicyInput[];
  /** Where counters live. Default memoryStore(): embedded, one process. */
  store?: Store;
  /** Key namespace: non-empty, printable, no braces or spaces. Default 'sluice'. */
  prefix?: string;
  /** When the store fails or times out: 'open' allows, 'closed' asks the local fallback. Default 'closed'. */
  failMode?: FailMode;
  /** The local per-process limit used while the store is down (failMode 'closed'). Default: policy. */
  fallback?: PolicyInput | PolicyInput[];
  /** ms budget for one store call. Default 50. */
  timeout?: number;
  /** Split each key over N sub-keys (hot keys), each with its share of every limit. Default 1. */
  shards?: number;
  /** Answer store denials locally until they expire. Bounded by maxKeys (default 10000). Default true. */
  denyCache?: boolean | { maxKeys: number };
  /** A local first tier, checked before the store, that sheds floods. Default none. */
  prefilter?: PolicyInput;
  /** Decide and report, never deny (dry run). Default false. */
  shadow?: boolean;
  /** Circuit breaker in front of the store, shared by the limiters on one store with the same settings; false to disable. Default { failures: 5, cooldown: 500 }. */
  breaker?: false | { failures?: number; cooldown?: Duration };
  /** Store errors, breaker open/close, fallbacks, denials. An exception it throws is ignored. */
  onEvent?: (event: LimiterEvent) => void;
  /** Test hook: the ms clock of the local tiers (deny cache, breaker, prefilter, fallback). Default performance.now. */
  clock?: () => number;
}

/** A rate limiter. */
export interface Limiter {
  /** Charges `cost` (default 1) to `key` if every policy allows it. Never rejects on a store failure. */
  consume(key: string, options?: { cost?: number }): Promise<Decision>;
  /** Reads `key` without charging: would a cost of 1 pass now? */
  peek(key: string): Promise<Decision>;
  /** Forgets `key` everywhere this limiter counts it. */
  reset(key: string): Promise<void>;
  /** Releases what the limiter holds. A store that was passed in stays open. */
  close(): Promise<void>;
}

const DEFAULTS = {
  prefix: 'sluice',
  failMode: 'closed' as FailMode,
  timeout: 50,
  shards: 1,
  denyCacheKeys: 10_000,
  shadow: false,
  breakerFailures: 5,
  breakerCooldown: 500,
};

/** The names of createLimiter's options. */
export const LIMITER_OPTIONS: ReadonlySet<string> = new Set([
  'policy',
  'store',
  'prefix',
  'failMode',
  'fallback',
  'timeout',
  'shards',
  'denyCache',
  'prefilter',
  'shadow',
  'breaker',
  'onEvent',
  'clock',
]);
/** Every decision, as { prefix, key, decision, durationMs }; nothing is built while no one subscribes. */
const decisionChannel = channel('sluice:decision');
/** Every LimiterEvent, as the event itself. */
const eventChannel = channel('sluice:event');

const PREFIX = /^[!-z|]{1,64}$/; // printable ASCII without braces (hash tags) or spaces

/** The limiter options, validated, defaults applied. Throws naming the option and what is allowed. */
function resolveOptions(options: LimiterOptions) {
  if (options === null || typeof options !== 'object') badOption('options', 'an object', options);
  for (const name of Object.keys(options)) {
    if (!LIMITER_OPTIONS.has(name)) badOption(name, `absent: not a limiter option (known: ${[...LIMITER_OPTIONS].join(', ')})`, name);
  }
  const policies = parsePolicies(options.policy);
  const prefix = options.prefix ?? DEFAULTS.prefix;
  if (typeof prefix !== 'string' || !PREFIX.test(prefix)) {
    badOption('prefix', 'a string of 1 to 64 printable characters without braces or spaces', prefix);
  }
  const failMode = options.failMode ?? DEFAULTS.failMode;
  if (failMode !== 'open' && failMode !== 'closed') badOption('failMode', "'open' or 'closed'", failMode);
  const fallback = options.fallback === undefined ? policies : parsePolicies(options.fallback, 'fallback');
  const timeout = options.timeout ?? DEFAULTS.timeout;
  if (typeof timeout !== 'number' || !Number.isFinite(timeout) || timeout <= 0) {
    badOption('timeout', 'a positive number of ms', timeout);
  }
  const shards = options.shards ?? DEFAULTS.shards;
  const most = Math.min(...policies.map((p) => Math.min(p.limit, Math.floor(p.burst))));
  if (!Number.isSafeInteger(shards) || shards < 1 || shards > most) {
    badOption('shards', `an integer from 1 to ${most} (each shard needs a share of every limit)`, shards);
  }
  const denyCache = options.denyCache ?? true;
  let denyCacheKeys = 0;
  if (denyCache === true) denyCacheKeys = DEFAULTS.denyCacheKeys;
  else if (denyCache !== false) {
    const maxKeys = (denyCache as { maxKeys?: unknown } | null)?.maxKeys;
    if (typeof maxKeys !== 'number' || !Number.isSafeInteger(maxKeys) || maxKeys < 1) {
      badOption('denyCache', 'true, false or { maxKeys: positive integer }', denyCache);
    }
    denyCacheKeys = maxKeys;
  }
  const prefilter = options.prefilter === undefined ? undefined : parsePolicy(options.prefilter, 'prefilter');
  const shadow = options.shadow ?? DEFAULTS.shadow;
  if (typeof shadow !== 'boolean') badOption('shadow', 'a boolean', shadow);
  const breaker = options.breaker ?? {};
  if (breaker !== false && (breaker === null || typeof breaker !== 'object')) {
    badOption('breaker', 'false or { failures, cooldown }', breaker);
  }
  const breakerFailures = breaker === false ? 0 : (breaker.failures ?? DEFAULTS.breakerFailures);
  if (breaker !== false && (!Number.isSafeInteger(breakerFailures) || breakerFailures < 1)) {
    badOption('breaker.failures', 'a positive integer', breakerFailures);
  }
  const breakerCooldown = breaker === false ? 0 : parseDuration(breaker.cooldown ?? DEFAULTS.breakerCooldown, 'breaker.cooldown');
  const store = options.store;
  if (store !== undefined && (store === null || typeof store !== 'object' || typeof store.decide !== 'function')) {
    badOption('store', 'a Store, such as memoryStore() or redisStore({ client })', store);
  }
  if (options.onEvent !== undefined && typeof options.onEvent !== 'function') badOption('onEvent', 'a function', options.onEvent);
  const clock = options.clock ?? (() => performance.now());
  if (typeof clock !== 'function') badOption('clock', 'a function', clock);
  return {
    policies,
    store,
    prefix,
    failMode,
    fallback,
    timeout,
    shards,
    denyCacheKeys,
    prefilter,
    shadow,
    breakerFailures,
    breakerCooldown,
    onEvent: options.onEvent,
    clock,
  };
}

/** Each shard's share of a policy: shares of limit and burst sum to the whole, so shards never over-admit. */
function sharePolicy(p: Policy, shard: number, shards: number): Policy {
  const limit = Math.floor(p.limit / shards) + (shard < p.limit % shards ? 1 : 0);
  return { ...p, limit, burst: (p.burst * limit) / p.limit, id: `${p.id}s${shards}` };
}

class StoreTimeoutError extends Error {
  constructor(ms: number) {
    super(`store call timed out after ${ms} ms`);
    this.name = 'StoreTimeoutError';
  }
}

/**
 * Creates a limiter. Bad options throw here, never at request time.
 * @example
 * const limiter = createLimiter({ policy: '100/1m' });
 * const d = await limiter.consume(ip); if (!d.allowed) reply429(d.retryAfterMs);
 */
export function createLimiter(options: LimiterOptions): Limiter {
  const o = resolveOptions(options);
  const { policies, prefix, shards, onEvent } = o;
  const store = o.store ?? memoryStore();
  const guarded = !store.local;
  const shardPolicies = Array.from({ length: shards }, (_, s) =>
    shards === 1 ? policies : policies.map((p) => sharePolicy(p, s, shards)),
  );
  const scales = shardPolicies.map((ps) => (shards === 1 ? undefined : ps.map((p, i) => (policies[i] as Policy).limit / p.limit)));
  const denyCache = guarded && o.denyCacheKeys > 0 ? new DenyCache(o.denyCacheKeys) : undefined;
  const clock = o.clock;
  const local = o.prefilter || (guarded && o.failMode === 'closed') ? memoryStore({ clock }) : undefined;
  const prefilter = o.prefilter ? [o.prefilter] : undefined;

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
  /** Publishes a decision on sluice:decision once it is made; only called while someone subscribes. */
  const observed = (key: string, started: number, decision: Promise<Decision>): Promise<Decision> =>
    decision.then((d) => {
      decisionChannel.publish({ prefix, key, decision: d, durationMs: performance.now() - started });
      return d;
    });
  const onBreaker = (open: boolean, error: Error | undefined, ms: number) =>
    emit(open ? { type: 'breaker-open', error } : { type: 'breaker-close', latencyMs: ms });
  // Limiters on one store share its breaker (a test clock gets one of its own).
  const held =
    guarded && o.breakerFailures > 0
      ? options.clock === undefined
        ? sharedBreaker(store, o.breakerFailures, o.breakerCooldown, onBreaker)
        : { breaker: createBreaker(o.breakerFailures, o.breakerCooldown, onBreaker), release() {} }
      : undefined;
  const breaker: Breaker | undefined = held?.breaker;

  const keysOf = (tag: string, ps: readonly Policy[]) => ps.map((p) => storeKey(prefix, tag, p.id));
  const shardTag = (tag: string, shard: number) => (shards === 1 ? tag : `${tag}~${shard}`);

  const watch = createDeadlines(o.timeout, () => new StoreTimeoutError(o.timeout));
  const settle = <T>(promise: Promise<T>, done: Settle<T>): void => {
    if (guarded) watch(promise, done);
    else promise.then((value) => done(undefined, value), done);
  };

  /** The decision when the store cannot answer: by the fail mode. `last` as in fromStore(). */
  async function withoutStore(key: string, tag: string, cost: number, peek: boolean, last: boolean): Promise<Decision> {
    let decision: Decision;
    if (o.failMode === 'open') {
      emit({ type: 'fail-open', key });
      decision = failOpenDecision(policies);
    } else {
      const reply = await (local as Store).decide({ keys: keysOf(`!${tag}`, o.fallback), policies: o.fallback, cost, peek });
      emit({ type: 'fallback', key });
      decision = toDecision(o.fallback, reply, 'fallback');
    }
    return last ? finish(key, decision) : decision;
  }

  /**
   * The store's decision for one shard of a key, or the deny cache's, or the fail mode's. `last`: the
   * caller returns it as it is, so finish() it here. Not async, and one promise per call: this is on
   * every decision's path.
   */
  function fromStore(key: string, tag: string, shard: number, cost: number, peek: boolean, last: boolean): Promise<Decision> {
    const t = shardTag(tag, shard);
    const now = clock();
    if (denyCache && !peek) {
      const cached = denyCache.get(t, cost, now);
      if (cached) return Promise.resolve(last ? finish(key, cached) : cached);
    }
    if (breaker && !breaker.allow(now)) return withoutStore(key, tag, cost, peek, last);
    const ps = shardPolicies[shard] as Policy[];
    const request: StoreRequest = { keys: keysOf(t, ps), policies: ps, cost, peek };
    return new Promise<Decision>((resolve, reject) => {
      settle(store.decide(request), (e, reply) => {
        if (reply === undefined) {
          const error = e instanceof Error ? e : new Error(String(e));
          const end = clock();
          breaker?.failure(end, error);
          emit({ type: 'store-error', key, error, latencyMs: end - now });
          resolve(withoutStore(key, tag, cost, peek, last));
          return;
        }
        try {
          breaker?.success(clock());
          const decision = toDecision(policies, reply, 'store', scales[shard]);
          // The store's retry to the µs, not the Decision's whole ms: at high rates that is all of it.
          if (denyCache && !reply.allowed && !peek) denyCache.set(t, cost, decision, now, replyRetryMs(reply));
          resolve(last ? finish(key, decision) : decision);
        } catch (error) {
          // A store's malformed reply, say: the caller hears of it rather than waiting forever.
          reject(error);
        }
      });
    });
  }

  function checkKey(key: unknown): string {
    if (typeof key !== 'string') throw new SluiceError('ERR_SLUICE_KEY', `key must be a string, got ${typeof key}`);
    return key;
  }

  function checkCost(cost: unknown): number {
    if (cost === undefined) return 1;
    if (typeof cost !== 'number' || !Number.isFinite(cost) || cost <= 0) badOption('cost', 'a positive finite number', cost);
    if (!Number.isInteger(cost) && policies.some((p) => p.algorithm === 'sliding-log')) {
      badOption('cost', "a whole number with a 'sliding-log' policy", cost);
    }
    return cost;
  }

  function finish(key: string, decision: Decision): Decision {
    if (decision.allowed) return decision;
    if (!o.shadow) {
      emit({ type: 'denied', key, decision });
      return decision;
    }
    emit({ type: 'shadow-denied', key, decision });
    return { ...decision, allowed: true, retryAfterMs: 0, shadowed: true };
  }

  /** consume() with a prefilter or shards. */
  async function consumeTiers(key: string, tag: string, cost: number): Promise<Decision> {
    if (prefilter) {
      const reply = await (local as Store).decide({ keys: keysOf(tag, prefilter), policies: prefilter, cost, peek: false });
      if (!reply.allowed) return finish(key, toDecision(prefilter, reply, 'prefilter'));
    }
    const first = shards === 1 ? 0 : Math.floor(Math.random() * shards);
    const decision = await fromStore(key, tag, first, cost, false, false);
    if (decision.allowed || shards === 1 || (decision.source !== 'store' && decision.source !== 'deny-cache')) {
      return finish(key, decision);
    }
    // A hot key's shards drift apart: before denying, try one other.
    const other = (first + 1 + Math.floor(Math.random() * (shards - 1))) % shards;
    const second = await fromStore(key, tag, other, cost, false, false);
    return finish(key, second.allowed || second.retryAfterMs < decision.retryAfterMs ? second : decision);
  }

  return {
    consume(key, options) {
      let cost: number;
      try {
        checkKey(key);
        cost = checkCost(options?.cost);
      } catch (error) {
        return Promise.reject(error);
      }
      const tag = keyTag(key);
      const started = decisionChannel.hasSubscribers ? performance.now() : -1;
      // The common case, without an await or a promise of its own.
      const decision = !prefilter && shards === 1 ? fromStore(key, tag, 0, cost, false, true) : consumeTiers(key, tag, cost);
      return started < 0 ? decision : observed(key, started, decision);
    },

    async peek(key) {
      checkKey(key);
      const started = decisionChannel.hasSubscribers ? performance.now() : -1;
      const decision = fromStore(key, keyTag(key), 0, 1, true, false);
      return started < 0 ? decision : observed(key, started, decision);
    },

    async reset(key) {
      checkKey(key);
      const tag = keyTag(key);
      if (local) await local.reset([...keysOf(`!${tag}`, o.fallback), ...(prefilter ? keysOf(tag, prefilter) : [])]);
      // One reset per shard: on a Cluster each shard lives in its own slot.
      await Promise.all(
        shardPolicies.map((ps, s) => {
          denyCache?.delete(shardTag(tag, s));
          return store.reset(keysOf(shardTag(tag, s), ps));
        }),
      );
    },

    async close() {
      held?.release();
      denyCache?.clear();
      await local?.close();
      if (o.store === undefined) await store.close();
    },
  };
}
