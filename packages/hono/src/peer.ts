// hono-rate-limiter's options with its meaning (drop-in means the same observable behaviour): a fixed window
// from the key's first hit, draft-6 headers by default and Retry-After only with them, its message, status and
// handler(c, next, options), each function taking the context. An option sluice cannot honour is refused by
// name, with the sluice option to use instead. Read from hono-rate-limiter 0.5 (its rateLimiter()).
import { type Decision, type PolicyInput, rateLimitHeaders } from '@sluice/core';
import {
  type Awaitable,
  badOption,
  type HttpLimitOptions,
  isFunction,
  type PeerAnswer,
  type PeerTranslator,
  policyPerLimit,
} from '@sluice/core/adapter';
import type { Context, Env, Next } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { GetIP } from './client.js';

type Body = string | Record<string, unknown>;
type Options = Record<string, unknown>;

/** hono-rate-limiter's options as it types them, for the app's Env `E`; `K`: the c.var name of the Decision. */
export interface HonoRateLimiterSpellings<E extends Env, K extends string> {
  /** The window in ms. Default 60000. */
  windowMs?: number;
  /** Requests per window, or a function of the context that returns it (may be async). Default 5. */
  limit?: number | ((c: Context<E>) => Awaitable<number>);
  /** The client's key. Default: the client's address (getIP). */
  keyGenerator?: (c: Context<E>) => Awaitable<string>;
  /** The RateLimit fields of a draft (true: 'draft-6'), or false for no headers, Retry-After included. Default 'draft-6'. */
  standardHeaders?: boolean | 'draft-6' | 'draft-7';
  /** The body of a limited response: a string (text/plain), an object (JSON), or a function of the context. Default 'Too many requests, please try again later.' */
  message?: Body | ((c: Context<E>) => Awaitable<Body>);
  /** The status of a limited response. Default 429. */
  statusCode?: ContentfulStatusCode;
  /** Answers a limited request instead; `options` is the resolved configuration. Default: statusCode and message. */
  handler?: (c: Context<E>, next: Next, options: Record<string, unknown>) => unknown;
  /** Requests for which it returns true are not counted. Default: none. */
  skip?: (c: Context<E>) => Awaitable<boolean>;
  /** The c.var name the Decision goes under (hono-rate-limiter put its own info there). Default 'rateLimit'. */
  requestPropertyName?: K;
  /** Refund a request that failed (requestWasSuccessful false, or aborted by the client). Default false. */
  skipFailedRequests?: boolean;
  /** Refund a request that succeeded. Default false. */
  skipSuccessfulRequests?: boolean;
  /** Whether a finished request succeeded, for the two skip options. Default: status below 400. */
  requestWasSuccessful?: (c: Context<E>) => Awaitable<boolean>;
}

/** rateLimit()'s options in hono-rate-limiter's spelling: its options, beside the limiter options and getIP. */
// biome-ignore lint/suspicious/noExplicitAny: Hono's own default Env, as HonoRateLimitOptions
export type HonoRateLimiterOptions<E extends Env = any, K extends string = 'rateLimit'> = Omit<
  HttpLimitOptions<Context<E>>,
  'policy' | 'limiter' | 'key' | 'skip' | 'message' | 'statusCode' | 'headers' | 'requestWasSuccessful'
> &
  HonoRateLimiterSpellings<E, K> & { getIP?: GetIP };

/** Its options that only its spelling takes, each with ours. */
const OURS: Record<string, string> = {
  windowMs: "policy (e.g. '100/15m')",
  limit: "policy (e.g. '100/15m')",
  keyGenerator: 'key(c)',
  standardHeaders: "headers ('draft-6', 'draft-7', ...)",
  handler: 'onLimited(c, decision)',
  requestPropertyName: 'c.var.rateLimit',
};
/** Refused in its spelling too, each with what to use instead. */
const REFUSED: Record<string, string> = {
  requestStorePropertyName: "absent: reset a client's counter with limiter.reset(key) (give a `limiter`) or the CLI's `sluice reset`",
  binding: 'absent: sluice counts in its own store, memoryStore() or redisStore({ client })',
  headers: 'absent with windowMs and limit: standardHeaders says which headers',
  onLimited: 'absent with windowMs and limit: handler(c, next, options) answers a limited request',
};
const NAMES = [...Object.keys(OURS), 'requestStorePropertyName', 'binding'];
const DEFAULTS = { windowMs: 60_000, limit: 5, message: 'Too many requests, please try again later.', statusCode: 429 };

/** hono-rate-limiter's spelling, for the kit (`httpLimit(options, { peer })`), one per middleware: `property` is the c.var name the Decision goes under. */
export interface HonoRateLimiterTranslator extends PeerTranslator {
  /** After translate(): requestPropertyName under its spelling, else 'rateLimit'. */
  readonly property: string;
}

/** Whether options are in hono-rate-limiter's spelling: its names, and no policy or limiter of ours. */
const isHonoRateLimiter = (o: Options): boolean =>
  o.policy === undefined && o.limiter === undefined && NAMES.some((n) => o[n] !== undefined);

/** hono-rate-limiter's spelling for the kit, with the c.var name its options give (a Hono answer the kit has no slot for). */
export function honoRateLimiter(): HonoRateLimiterTranslator {
  let property = 'rateLimit';
  return {
    names: NAMES,
    aliases: {},
    get property() {
      return property;
    },
    translate(o) {
      if (!isHonoRateLimiter(o)) return besideOurs(o);
      const translated = translate(o);
      property = translated.property;
      return translated.answer;
    },
  };
}

/** Options in sluice's spelling: hono-rate-limiter's names are refused beside them, naming ours. */
function besideOurs(o: Options): undefined {
  for (const [name, ours] of Object.entries(OURS)) {
    if (o[name] !== undefined)
      badOption(name, `absent beside policy or limiter (it is hono-rate-limiter's spelling): use ${ours}`, o[name]);
  }
  for (const name of NAMES) if (o[name] !== undefined) badOption(name, REFUSED[name] as string, o[name]);
  return undefined;
}

/**
 * Turns `o` (hono-rate-limiter's spelling, own properties) into the kit's options, in place: a first-hit
 * fixed window, the key, the handler as onLimited; returns its headers and limited answer, and the c.var name.
 */
function translate(o: Options): { answer: PeerAnswer; property: string } {
  for (const [name, instead] of Object.entries(REFUSED)) if (o[name] !== undefined) badOption(name, instead, o[name]);
  if (typeof (o.store as { increment?: unknown } | undefined)?.increment === 'function') {
    badOption('store', 'a sluice Store: redisStore({ client }) for Redis (instead of @hono-rate-limiter/redis), or memoryStore()', o.store);
  }
  const windowMs = o.windowMs ?? DEFAULTS.windowMs;
  if (typeof windowMs !== 'number' || !Number.isFinite(windowMs) || windowMs <= 0)
    badOption('windowMs', 'a positive number of ms', windowMs);
  const limit = o.limit ?? DEFAULTS.limit;
  if (typeof limit !== 'function' && !(Number.isInteger(limit) && (limit as number) > 0))
    badOption('limit', 'a positive integer, or a function of the context that returns one', limit);
  const policyFor = (n: number): PolicyInput => ({ limit: n, window: windowMs, algorithm: 'fixed-window', start: 'first-hit' });
  const draft = o.standardHeaders ?? 'draft-6';
  if (draft !== 'draft-6' && draft !== 'draft-7' && typeof draft !== 'boolean')
    badOption('standardHeaders', "a boolean, 'draft-6' or 'draft-7'", draft);
  const mode = draft === true ? 'draft-6' : draft;
  const message = (o.message ?? DEFAULTS.message) as Body | ((c: Context) => Awaitable<Body>);
  const statusCode = o.statusCode ?? DEFAULTS.statusCode;
  if (!Number.isInteger(statusCode)) badOption('statusCode', 'an integer', statusCode);
  const handler =
    o.handler === undefined ? undefined : isFunction<NonNullable<HonoRateLimiterSpellings<Env, string>['handler']>>(o.handler, 'handler');
  const property = o.requestPropertyName ?? 'rateLimit';
  if (typeof property !== 'string' || property === '') badOption('requestPropertyName', 'a non-empty string', property);
  // What hono-rate-limiter passes its handler as `options`: the resolved configuration.
  const config = { ...o, windowMs, limit, message, statusCode, standardHeaders: draft, requestPropertyName: property };

  if (o.keyGenerator !== undefined) o.key = o.keyGenerator;
  if (typeof limit === 'function') {
    // The limits' first-hit windows share one counter per key, held against each request's limit, as
    // hono-rate-limiter's store counts.
    const pick = policyPerLimit(policyFor);
    const limitOf = limit as (c: unknown) => Awaitable<number>;
    o.policy = (c: unknown) => {
      const n = limitOf(c);
      return typeof n === 'number' ? pick(n) : Promise.resolve(n).then(pick);
    };
  } else o.policy = policyFor(limit as number);
  // Its handler answers a limited request, and may pass it on (next()): the middleware then answers nothing.
  if (handler !== undefined) o.onLimited = (c: Context, _decision: Decision, next: Next) => handler(c, next, config);
  for (const n of [...NAMES, 'message', 'statusCode']) delete o[n];

  const answer: PeerAnswer = {
    headers(decision) {
      if (mode === false) return {};
      const out = rateLimitHeaders(decision, { headers: mode });
      // Retry-After only with the headers on: the seconds to the window's end, as hono-rate-limiter sends it.
      if (!decision.allowed) out['Retry-After'] = String(Math.max(0, Math.ceil(decision.resetMs / 1000)));
      return out;
    },
    async respond(_decision, c) {
      const body = typeof message === 'function' ? await message(c as Context) : message;
      // Hono's c.text and c.json, as hono-rate-limiter answers.
      if (typeof body === 'string') return { status: statusCode as number, contentType: 'text/plain; charset=UTF-8', body };
      return { status: statusCode as number, contentType: 'application/json', body: JSON.stringify(body) };
    },
  };
  return { answer, property };
}
