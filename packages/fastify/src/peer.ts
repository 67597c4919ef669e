// @fastify/rate-limit's options with its meaning (drop-in means the same observable behaviour): its
// algorithm (a fixed window from the key's first hit), its counting scope (one counter per client
// across the plugin's routes; a route with its own config counts on its own), its headers and their
// toggles, its error (errorResponseBuilder's, thrown for Fastify's error handler), allowList and ban.
// An option that cannot be honoured is refused by name, with the sluice option to use instead. Read
// from @fastify/rate-limit 10.3 (index.js, store/LocalStore.js).
import type { Decision, PolicyInput } from '@sluice/core';
import {
  type Awaitable,
  badOption,
  isBoolean,
  isFunction,
  type PeerAnswer,
  type PeerTranslator,
  parseDuration,
  policyPerLimit,
} from '@sluice/core/adapter';

type Options = Record<string, unknown>;

/** @fastify/rate-limit's options as it types them: what @sluice/fastify takes with their meaning (no `policy` of ours). */
export interface FastifyRateLimitSpellings<Req> {
  /** Requests per window, or a function of (request, key) that returns it (may be async). Default 1000. */
  max?: number | ((request: Req, key: string) => Awaitable<number>);
  /** The window: ms, or words ('1 minute', '1m'). Default 1 minute. */
  timeWindow?: number | string;
  /** The client's key. Default: request.ip. */
  keyGenerator?: (request: Req) => Awaitable<string>;
  /** Keys let through uncounted, or a function of (request, key). Default none. */
  allowList?: string[] | ((request: Req, key: string) => Awaitable<boolean>);
  /** 403 once a client was refused more than this many times in a window. Default: no ban. */
  ban?: number;
  /** The error thrown for a limited request. Default: an Error 'Rate limit exceeded, retry in 1 minute' with statusCode. */
  errorResponseBuilder?: (request: Req, context: { statusCode: number; ban: boolean; max: number; ttl: number; after: string }) => unknown;
  /** Headers of a limited response, each true unless given false. */
  addHeaders?: Partial<Record<'x-ratelimit-limit' | 'x-ratelimit-remaining' | 'x-ratelimit-reset' | 'retry-after', boolean>>;
  /** Headers of an allowed response, each true unless given false. */
  addHeadersOnExceeding?: Partial<Record<'x-ratelimit-limit' | 'x-ratelimit-remaining' | 'x-ratelimit-reset', boolean>>;
  /** ratelimit-* instead of x-ratelimit-*. Default false. */
  enableDraftSpec?: boolean;
  /** Called for an allowed request, a refused one, and a banned one. */
  onExceeding?: (request: Req, key: string) => void;
  onExceeded?: (request: Req, key: string) => void;
  onBanReach?: (request: Req, key: string) => void;
  /** true: a store failure lets the request through (sluice's failMode 'open'). Default false. */
  skipOnError?: boolean;
}

/** @fastify/rate-limit's option names, each taken with its meaning or refused naming ours. */
export const FASTIFY_RATE_LIMIT_NAMES = [
  'max',
  'timeWindow',
  'keyGenerator',
  'allowList',
  'whitelist',
  'ban',
  'errorResponseBuilder',
  'addHeaders',
  'addHeadersOnExceeding',
  'enableDraftSpec',
  'onExceeding',
  'onExceeded',
  'onBanReach',
  'skipOnError',
  'continueExceeding',
  'exponentialBackoff',
  'redis',
  'nameSpace',
  'cache',
  'groupId',
] as const;

/** Refused, each with what to use instead. */
const REFUSED: Record<string, string> = {
  continueExceeding: "absent: sluice's windows do not restart on a refused request; a longer policy beside the first does the job",
  exponentialBackoff: 'absent: give several policies (a request passes only if all pass)',
  redis: 'absent: give store: redisStore({ client }) (from @sluice/core)',
  nameSpace: 'absent: give prefix',
  cache: 'absent: give store: memoryStore({ maxKeys })',
  groupId: 'absent: give scope (routes that name one scope share a counter)',
};

/** Whether options given to the Fastify plugin (or a route) are in @fastify/rate-limit's spelling. */
function isFastifyRateLimit(o: Options): boolean {
  if (o.policy !== undefined || o.limiter !== undefined) return false;
  // `ban` is also sluice's own option (an object: { after, within, for }); @fastify/rate-limit's is a number.
  return FASTIFY_RATE_LIMIT_NAMES.some((n) => o[n] !== undefined && !(n === 'ban' && typeof o[n] === 'object'));
}

/** @fastify/rate-limit's spelling, for the kit: `httpLimit(options, { peer: fastifyRateLimit })`. */
export const fastifyRateLimit: PeerTranslator = {
  names: FASTIFY_RATE_LIMIT_NAMES,
  aliases: { policy: ['max', 'timeWindow'], key: ['keyGenerator'] },
  translate: (o, route) => (isFastifyRateLimit(o) ? translate(o, route) : besideOurs(o)),
};

/** Options in sluice's spelling: @fastify/rate-limit's names are refused beside them (a number `ban` included). */
function besideOurs(o: Options): undefined {
  for (const name of FASTIFY_RATE_LIMIT_NAMES) {
    const value = o[name];
    if (value === undefined || (name === 'ban' && typeof value === 'object')) continue;
    if (name === 'max' || name === 'timeWindow')
      badOption(name, "absent beside policy or limiter (max and timeWindow are @fastify/rate-limit's spelling of a policy)", value);
    badOption(name, "given with max and timeWindow (@fastify/rate-limit's spelling), not beside policy or limiter", value);
  }
  return undefined;
}

const WINDOW_MS = 60_000;
const WORDS = /^(\d+(?:\.\d+)?)\s*(milliseconds?|seconds?|secs?|minutes?|mins?|hours?|hrs?|days?)$/i;
const WORD_MS: Record<string, number> = { mil: 1, sec: 1000, min: 60_000, hou: 3_600_000, hrs: 3_600_000, hr: 3_600_000, day: 86_400_000 };

/** Its timeWindow: ms, a duration ('1m'), or words ('1 minute'). */
function timeWindowMs(value: unknown): number {
  const words = typeof value === 'string' ? WORDS.exec(value.trim()) : null;
  if (!words) return parseDuration(value, 'timeWindow');
  const unit = (words[2] as string).toLowerCase();
  return Number(words[1]) * (WORD_MS[unit.slice(0, 3)] ?? WORD_MS[unit.slice(0, 2)] ?? 0);
}

/** @lukeed/ms' format(ms, true), which @fastify/rate-limit's default error message uses: '1 minute', '30 seconds'. */
function longDuration(ms: number): string {
  const units: [number, string][] = [
    [31_557_600_000, 'year'],
    [86_400_000, 'day'],
    [3_600_000, 'hour'],
    [60_000, 'minute'],
    [1000, 'second'],
  ];
  if (ms < 1000) return `${ms} ms`;
  const [size, name] = units.find(([u], i) => ms >= u || i === units.length - 1) as [number, string];
  const v = ms / size;
  const n = (v | 0) === v ? v : ~~(v + 0.5);
  return `${n} ${name}${n !== 1 ? 's' : ''}`;
}

/** @fastify/rate-limit's header toggles: each of its four headers on unless given false. */
function toggles(value: unknown, name: string, labels: readonly string[]): Set<string> {
  if (value !== undefined && (value === null || typeof value !== 'object')) badOption(name, 'an object of header names to booleans', value);
  const given = (value ?? {}) as Record<string, unknown>;
  return new Set(labels.filter((l) => given[l] !== false));
}

/**
 * Turns `o` (@fastify/rate-limit's spelling, own properties) into the kit's options, in place: a first-hit
 * fixed window, the key, the scope; returns its headers, allowList, ban and error. `route`: the options are
 * a route's own config (it counts on its own), else the plugin's (one counter across its routes).
 */
function translate(o: Options, route: boolean): PeerAnswer {
  for (const [name, instead] of Object.entries(REFUSED)) if (o[name] !== undefined) badOption(name, instead, o[name]);
  const windowMs = o.timeWindow === undefined ? WINDOW_MS : timeWindowMs(o.timeWindow);
  const max = o.max ?? 1000;
  if (typeof max !== 'function' && (typeof max !== 'number' || !Number.isFinite(max)))
    badOption('max', 'a number or a function (request, key)', max);
  const policyFor = (limit: number): PolicyInput => ({
    limit: Math.trunc(limit),
    window: windowMs,
    algorithm: 'fixed-window',
    start: 'first-hit',
  });
  if (typeof max === 'function') {
    const pick = policyPerLimit(policyFor);
    const maxOf = max as (req: unknown, key: string) => Awaitable<number>;
    o.policy = (req: unknown, _res: unknown, key: string) => {
      const limit = maxOf(req, key);
      return typeof limit === 'number' ? pick(limit) : Promise.resolve(limit).then(pick);
    };
  } else {
    o.policy = policyFor(max as number);
  }
  if (o.keyGenerator !== undefined) o.key = isFunction(o.keyGenerator, 'keyGenerator');
  if (o.skipOnError !== undefined && isBoolean(o.skipOnError, 'skipOnError') && o.failMode === undefined) o.failMode = 'open';
  // One counter per client across the plugin's routes; a route with its own config counts on its own.
  if (!route && o.scope === undefined) o.scope = '*';
  // Its default key is request.ip as it is: IPv6 clients are not grouped by subnet.
  if (o.keyGenerator === undefined && o.key === undefined && o.ipv6Subnet === undefined) o.ipv6Subnet = false;
  const draft = o.enableDraftSpec === undefined ? false : isBoolean(o.enableDraftSpec, 'enableDraftSpec');
  const [limitH, remainingH, resetH] = draft
    ? ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']
    : ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'];
  const onDenial = toggles(o.addHeaders, 'addHeaders', [limitH, remainingH, resetH, 'retry-after']);
  const onPass = toggles(o.addHeadersOnExceeding, 'addHeadersOnExceeding', [limitH, remainingH, resetH]);
  const list = o.allowList ?? o.whitelist;
  if (list !== undefined && !Array.isArray(list) && typeof list !== 'function')
    badOption('allowList', 'an array of keys or a function (request, key)', list);
  // A number is @fastify/rate-limit's ban; an object is sluice's own (BanOptions), left to the limiter.
  const peerBan = typeof o.ban === 'number';
  const ban = peerBan ? Math.trunc(o.ban as number) : -1;
  if (peerBan && (!Number.isFinite(o.ban) || (o.ban as number) < 0)) badOption('ban', 'a number >= 0, or sluice BanOptions', o.ban);
  const builder =
    o.errorResponseBuilder === undefined
      ? undefined
      : isFunction<(req: unknown, context: Record<string, unknown>) => unknown>(o.errorResponseBuilder, 'errorResponseBuilder');
  const callbacks = Object.fromEntries(
    (['onExceeding', 'onExceeded', 'onBanReach'] as const).map((n) => [
      n,
      o[n] === undefined ? undefined : isFunction<(req: unknown, key: string) => void>(o[n], n),
    ]),
  );
  for (const n of FASTIFY_RATE_LIMIT_NAMES) if (n !== 'ban' || peerBan) delete o[n];
  // Refused requests per client in the current window (sluice does not count them): ban's count. This process's.
  const refused = new Map<string, { until: number; n: number }>();

  const ttlS = (d: Decision) => Math.ceil(d.resetMs / 1000);
  return {
    allow(req, key) {
      if (list === undefined) return false;
      return Array.isArray(list) ? list.includes(key) : (list as (req: unknown, key: string) => Awaitable<boolean>)(req, key);
    },
    headers(decision) {
      const out: Record<string, string> = {};
      const on = decision.allowed ? onPass : onDenial;
      if (on.has(limitH)) out[limitH] = String(decision.limit);
      if (on.has(remainingH)) out[remainingH] = String(decision.allowed ? decision.remaining : 0);
      if (on.has(resetH)) out[resetH] = String(ttlS(decision));
      if (!decision.allowed && on.has('retry-after')) out['retry-after'] = String(ttlS(decision));
      return out;
    },
    seen(decision, req, key) {
      if (decision.allowed) callbacks.onExceeding?.(req, key);
      else callbacks.onExceeded?.(req, key);
    },
    error(decision, req, key) {
      let banned = false;
      if (ban >= 0) {
        const now = Date.now();
        if (refused.size > 10_000) for (const [k, v] of refused) if (v.until <= now) refused.delete(k);
        let seen = refused.get(key);
        if (seen === undefined || seen.until <= now) {
          seen = { until: now + decision.resetMs, n: 0 };
          refused.set(key, seen);
        }
        seen.n++;
        banned = seen.n > ban;
      }
      if (banned) callbacks.onBanReach?.(req, key);
      const ttl = decision.resetMs;
      const context = { statusCode: banned ? 403 : 429, ban: banned, max: decision.limit, ttl, after: longDuration(ttlS(decision) * 1000) };
      if (builder !== undefined) return builder(req, context);
      return Object.assign(new Error(`Rate limit exceeded, retry in ${context.after}`), { statusCode: context.statusCode });
    },
  };
}
