// createLimiter's options: the table (name, default, check, doc) and their resolution.
import { performance } from 'node:perf_hooks';
import { type Duration, parseDuration } from './duration.js';
import { badOption, SluiceError } from './errors.js';
import type { LimiterEvent } from './events.js';
import type { FailMode } from './fail-mode.js';
import {
  checkNames,
  isBoolean,
  isClock,
  isFunction,
  isPositiveInteger,
  type OptionSpec,
  own,
  ownCopy,
  type Resolved,
  resolve,
  spec,
} from './options.js';
import { isConcurrent, type Policy, type PolicyInput, parsePolicies, parsePolicy } from './policy/policy.js';
import { checkRegionsWith, type RegionsOptions, resolveRegions } from './regions/options.js';
import { type BanOptions, banSettings } from './rules/ban.js';
import { type Rules, rulesInside } from './rules/rules.js';
import type { Store } from './store/contract.js';
import { memoryStore } from './store/memory-store.js';
import { looksLikeClient } from './store/redis/clients.js';

/** Options of createLimiter(). */
export interface LimiterOptions {
  /**
   * One policy, or several: a request passes only if all pass, atomically; a denial charges none.
   * Required, unless every consume gives its own `policy` (plans chosen per request).
   */
  policy?: PolicyInput | PolicyInput[];
  /** Where counters live. Default memoryStore(): embedded, one process. */
  store?: Store;
  /** Key namespace: non-empty, printable, no braces or spaces. Default 'sluice'. */
  prefix?: string;
  /** When the store fails or times out: 'open' allows, 'closed' asks the local fallback. Default 'closed'. */
  failMode?: FailMode;
  /**
   * The local per-process limit used while the store is down (failMode 'closed'), or false: refuse every request
   * while the store cannot answer (source 'fail-closed', until the breaker's next probe). Default: the call's policies.
   */
  fallback?: PolicyInput | PolicyInput[] | false;
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
  /** Rules operators change at run time (createRules): overrides, deny and allow lists, bans. Default none. */
  rules?: Rules;
  /**
   * A key denied `after` times within `within` is denied for `for` on every process: a deny rule with
   * `ban: true` written to `rules` (or, without them, to rules of the limiter's own store and prefix). Default none.
   */
  ban?: BanOptions;
  /**
   * One limit across regions: this limiter decides in region `region` on its own `store`, with tokens leased
   * from the `home` store's global bucket of `policy` (docs/regions.md). Default none.
   */
  regions?: RegionsOptions;
  /** Store errors, breaker open/close, fallbacks, denials. An exception it throws is ignored. Default none. */
  onEvent?: (event: LimiterEvent) => void;
  /**
   * Test hook: the ms clock of the local tiers (deny cache, breaker, prefilter, fallback); an epoch clock when
   * calendar quotas are in play. Default the store's `clock` when it has one (a test's), else performance.now,
   * and Date.now for the prefilter's and fallback's counts.
   */
  clock?: () => number;
}

const PREFIX = /^[!-z|]{1,64}$/; // printable ASCII without braces (hash tags) or spaces
const DENY_CACHE_KEYS = 10_000;
const BREAKER = { failures: 5, cooldown: 500 };

function isStore(v: unknown, n: string): Store {
  if (looksLikeClient(v))
    throw new SluiceError('ERR_SLUICE_OPTION', `${n} must be a Store, got a Redis client: wrap it, redisStore({ client })`);
  if (v === null || typeof v !== 'object' || typeof (v as Store).decide !== 'function') {
    badOption(n, 'a Store, such as memoryStore() or redisStore({ client })', v);
  }
  return v as Store;
}

function isPrefix(v: unknown, n: string): string {
  if (typeof v !== 'string' || !PREFIX.test(v)) badOption(n, 'a string of 1 to 64 printable characters without braces or spaces', v);
  return v;
}

function isFailMode(v: unknown, n: string): FailMode {
  if (v !== 'open' && v !== 'closed') badOption(n, "'open' or 'closed'", v);
  return v;
}

/** fallback: policies, or false (refuse every request while the store cannot answer). */
function isFallback(v: unknown, n: string): Policy[] | false {
  if (v === false) return false;
  if (typeof v !== 'string' && (typeof v !== 'object' || v === null))
    badOption(n, 'a policy, an array of policies, or false (refuse every request while the store cannot answer)', v);
  return parsePolicies(v, n);
}

function isTimeout(v: unknown, n: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) badOption(n, 'a positive number of ms', v);
  return v;
}

/** denyCache: true, false or { maxKeys }, as the most keys answered locally (0 for none). */
function denyCacheKeys(v: unknown, n: string): number {
  if (v === true) return DENY_CACHE_KEYS;
  if (v === false) return 0;
  const maxKeys = typeof v === 'object' && v !== null ? own(v, 'maxKeys') : undefined;
  if (!Number.isSafeInteger(maxKeys) || (maxKeys as number) < 1) badOption(n, 'true, false or { maxKeys: positive integer }', v);
  return maxKeys as number;
}

/** breaker: false, or { failures, cooldown } over the defaults; false is a breaker that never opens. */
function breakerSettings(v: unknown, n: string): { failures: number; cooldown: number } {
  if (v === false) return { failures: 0, cooldown: 0 };
  if (v === null || typeof v !== 'object') badOption(n, 'false or { failures, cooldown }', v);
  checkNames(v, ['failures', 'cooldown'], 'a breaker option', `${n}.`);
  const b = ownCopy(v);
  return {
    failures: b.failures === undefined ? BREAKER.failures : isPositiveInteger(b.failures, `${n}.failures`),
    cooldown: b.cooldown === undefined ? BREAKER.cooldown : parseDuration(b.cooldown, `${n}.cooldown`),
  };
}

/** createLimiter's options, each once: its check and its default (the doc comments above end with the same). */
export const LIMITER_OPTIONS = {
  policy: spec(parsePolicies),
  store: spec(isStore),
  prefix: spec(isPrefix, 'sluice'),
  failMode: spec(isFailMode, 'closed'),
  fallback: spec(isFallback),
  timeout: spec(isTimeout, 50),
  shards: spec(isPositiveInteger, 1),
  denyCache: spec(denyCacheKeys, DENY_CACHE_KEYS),
  prefilter: spec(parsePolicy),
  shadow: spec(isBoolean, false),
  breaker: spec(breakerSettings, BREAKER),
  rules: spec(rulesInside),
  ban: spec(banSettings),
  regions: spec(resolveRegions),
  onEvent: spec<(event: LimiterEvent) => void>(isFunction),
  clock: spec(isClock),
} satisfies { [K in keyof LimiterOptions]-?: OptionSpec<unknown> };

/** The names of createLimiter's options. */
export const LIMITER_OPTION_NAMES: readonly string[] = Object.keys(LIMITER_OPTIONS);

/** A limiter's options, checked and with defaults applied. */
export interface ResolvedLimiterOptions extends Omit<Resolved<typeof LIMITER_OPTIONS>, 'store' | 'clock'> {
  /** The store to use; `ownStore` when the limiter made it (and closes it). */
  store: Store;
  ownStore: boolean;
  clock: () => number;
  /** The caller gave its own clock (tests): the breaker is then the limiter's own. */
  testClock: boolean;
}

/** The default clock: one function for every limiter, so that code calling it sees one (bench/limiters.mjs). */
const monotonicMs = (): number => performance.now();

/** The limiter options, validated, defaults applied. Throws naming the option and what is allowed. */
export function resolveLimiterOptions(options: LimiterOptions): ResolvedLimiterOptions {
  if (options === null || typeof options !== 'object') badOption('options', 'an object', options);
  checkNames(options, LIMITER_OPTION_NAMES, 'a limiter option');
  const o = resolve(LIMITER_OPTIONS, options);
  if (o.prefilter && isConcurrent(o.prefilter)) badOption('prefilter', 'a rate policy, not { concurrent }', 'a concurrent policy');
  // A limiter reads only its own prefix's rules: rules of another would never be in force here.
  if (o.rules !== undefined && o.rules.prefix !== o.prefix) {
    const [mine, theirs] = [JSON.stringify(o.prefix), JSON.stringify(o.rules.prefix)];
    throw new SluiceError(
      'ERR_SLUICE_OPTION',
      `rules must be of the limiter's prefix ${mine}, got rules of prefix ${theirs}: give createRules({ store, prefix: ${mine} })`,
    );
  }
  if (o.fallback === false && o.failMode === 'open')
    badOption('fallback', "a policy or absent with failMode 'open' (false refuses while the store is down: failMode 'closed')", false);
  if (o.regions !== undefined) checkRegionsWith({ store: o.store, policy: o.policy, shards: o.shards }, o.regions);
  // Shards that cannot split a policy, and concurrent policies with shards or a prefilter, are refused
  // where every policy set is made (policy-set.ts), the limiter's own at construction.
  // The store's clock, when it was given one (a test's), is the local tiers' too: a denial the deny cache
  // holds then ends when the test clock passes it, not a real second later.
  const clock = o.clock ?? o.store?.clock;
  return {
    ...o,
    store: o.store ?? memoryStore(),
    ownStore: o.store === undefined,
    clock: clock ?? monotonicMs,
    testClock: clock !== undefined,
  };
}
