// express-rate-limit's options with its meaning: drop-in means the same observable behaviour. Its algorithm (a
// fixed window from the key's first hit), its headers and their defaults, its body, content type and status,
// and each function's call signature (req, res). An option that cannot be honoured is refused by name, with
// the sluice option to use instead. Beside sluice's own spelling (a policy or a limiter given), keyGenerator,
// standardHeaders and legacyHeaders stand for key and headers. Read from express-rate-limit 7.5 and 8
// (source/lib.ts, source/headers.ts).
import { type HeadersMode, type PolicyInput, rateLimitHeaders } from '@sluice/core';
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
type EarlierDraft = Extract<HeadersMode, `draft-${number}`>;

/**
 * express-rate-limit's options as it types them (7 and 8), for a request type `Req` and a response type
 * `Res`: what @sluice/express takes with their meaning when the policy is given as windowMs and limit.
 */
export interface ExpressRateLimitSpellings<Req, Res> {
  /** The window in ms. Default 60000. */
  windowMs?: number;
  /** Requests per window, or a function of the request that returns it (may be async). Default 5. */
  limit?: number | ((req: Req, res: Res) => Awaitable<number>);
  /** express-rate-limit's older name for `limit`. */
  max?: number | ((req: Req, res: Res) => Awaitable<number>);
  /** The client's key. Default: the client IP. */
  keyGenerator?: (req: Req, res: Res) => Awaitable<string>;
  /** Requests for which it returns true are not counted. Default: none. */
  skip?: (req: Req, res: Res) => Awaitable<boolean>;
  /** The RateLimit fields of a draft (true: 'draft-6'), or false. Default false. */
  standardHeaders?: boolean | EarlierDraft;
  /** X-RateLimit-Limit, -Remaining and -Reset. Default true. */
  legacyHeaders?: boolean;
  /** The body of a limited response: a string (text/html), an object (JSON), or a function of (req, res). Default 'Too many requests, please try again later.' */
  message?: string | Record<string, unknown> | ((req: Req, res: Res) => Awaitable<string | Record<string, unknown>>);
  /** The status of a limited response. Default 429. */
  statusCode?: number;
  /** Answers a limited request instead; `options` is the resolved configuration. Default: statusCode and message. */
  handler?: (req: Req, res: Res, next: (error?: unknown) => void, options: Record<string, unknown>) => unknown;
  /** The draft-8 policy name. Default e.g. '5-in-1min'. */
  identifier?: string;
  /** true: a store failure lets the request through (sluice's failMode 'open'). Default false. */
  passOnStoreError?: boolean;
  /** false, or { xForwardedForHeader: false }, turns the X-Forwarded-For warning off. Default true. */
  validate?: boolean | Record<string, boolean>;
}

/** express-rate-limit's option names, each taken with its meaning or refused naming ours. */
export const EXPRESS_RATE_LIMIT_NAMES = [
  'windowMs',
  'limit',
  'max',
  'keyGenerator',
  'standardHeaders',
  'legacyHeaders',
  'handler',
  'identifier',
  'passOnStoreError',
  'validate',
  'requestPropertyName',
  'retryAfter',
  'logger',
] as const;

/** Refused, each with what to use instead. */
const REFUSED: Record<string, string> = {
  retryAfter: "absent: Retry-After is the seconds to the window's end, as express-rate-limit's default",
  logger: 'absent: onEvent hears what sluice reports (and console.warn the X-Forwarded-For warning)',
  requestPropertyName: 'absent: req.rateLimit holds the Decision (limit, remaining, resetMs); read it there',
};

const DEFAULTS = { windowMs: 60_000, limit: 5, message: 'Too many requests, please try again later.', statusCode: 429 };

/** Whether options are in express-rate-limit's spelling: its policy or headers, and no policy or limiter of ours. */
function isExpressRateLimit(o: Options): boolean {
  if (o.policy !== undefined || o.limiter !== undefined) return false;
  return ['windowMs', 'limit', 'max', 'handler', 'standardHeaders', 'legacyHeaders'].some((n) => o[n] !== undefined);
}

/** Each of express-rate-limit's options that sluice's spelling does not take, with ours. */
const OURS: Record<string, string> = {
  handler: 'onLimited(req, res, next, decision)',
  identifier: "the policy's name",
  passOnStoreError: "failMode: 'open'",
  validate: 'nothing (sluice validates its options when the middleware is made)',
  requestPropertyName: 'req.rateLimit',
};

/** Its names that stand for one of ours, also beside sluice's own spelling. */
const ALIASES = {
  policy: ['windowMs', 'limit', 'max'],
  key: ['keyGenerator'],
  headers: ['standardHeaders', 'legacyHeaders'],
} as const;

/** express-rate-limit's spelling, for the kit: `httpLimit(options, { peer: expressRateLimit })`. */
export const expressRateLimit: PeerTranslator = {
  names: EXPRESS_RATE_LIMIT_NAMES,
  aliases: ALIASES,
  translate: (o) => (isExpressRateLimit(o) ? translate(o) : besideOurs(o)),
};

/**
 * Options in sluice's spelling: express-rate-limit's names that stand for one of ours (keyGenerator for key,
 * standardHeaders and legacyHeaders for headers) become it, in place; the others are refused, naming ours.
 */
function besideOurs(o: Options): undefined {
  for (const [name, ours] of Object.entries(OURS)) {
    if (o[name] !== undefined)
      badOption(name, `given with windowMs and limit (express-rate-limit's spelling); beside policy or limiter use ${ours}`, o[name]);
  }
  alias(o, 'policy', ALIASES.policy, () => {
    const limit = o.limit ?? o.max;
    if (limit === undefined) badOption('limit', 'a positive integer when windowMs is given', limit);
    return { limit, window: o.windowMs === undefined ? DEFAULTS.windowMs : parseDuration(o.windowMs, 'windowMs') };
  });
  alias(o, 'key', ALIASES.key, () => isFunction(o.keyGenerator, 'keyGenerator'));
  alias(o, 'headers', ALIASES.headers, () => {
    const { draft, legacy } = headerModes(o);
    return draft !== undefined && legacy ? 'both' : draft !== undefined ? 'draft' : legacy ? 'legacy' : false;
  });
  return undefined;
}

/** `o[name]` from the names that stand for it, which go; refused when `name` is given beside them. */
function alias(o: Options, name: string, names: readonly string[], value: () => unknown): void {
  if (!names.some((n) => o[n] !== undefined)) return;
  if (o[name] !== undefined) badOption(name, `given alone, not with ${names.join(', ').replace(/, ([^,]*)$/, ' or $1')}`, o[name]);
  o[name] = value();
  for (const n of names) delete o[n];
}

/** express-rate-limit's `identifier` default: the policy's name in draft-8 headers, e.g. '5-in-1min'. */
function identifier(limit: number, windowMs: number): string {
  const s = windowMs / 1000;
  const m = s / 60;
  const h = m / 60;
  const d = h / 24;
  const duration = s < 60 ? `${s}sec` : m < 60 ? `${m}min` : h < 24 ? `${h}hr${h > 1 ? 's' : ''}` : `${d}day${d > 1 ? 's' : ''}`;
  return `${limit}-in-${duration}`;
}

/** The headers modes from standardHeaders (true is draft-6) and legacyHeaders (default true). */
function headerModes(o: Options): { draft: EarlierDraft | undefined; legacy: boolean } {
  const { standardHeaders: standard, legacyHeaders: legacy } = o;
  if (standard !== undefined && typeof standard !== 'boolean' && !['draft-6', 'draft-7', 'draft-8'].includes(standard as string)) {
    badOption('standardHeaders', "a boolean, 'draft-6', 'draft-7' or 'draft-8'", standard);
  }
  if (legacy !== undefined) isBoolean(legacy, 'legacyHeaders');
  return { draft: standard === true ? 'draft-6' : standard ? (standard as EarlierDraft) : undefined, legacy: legacy !== false };
}

/**
 * Turns `o` (express-rate-limit's spelling, own properties) into the kit's options, in place: a first-hit
 * fixed window, the key, skip and handler; returns its headers and limited answer.
 */
function translate(o: Options): PeerAnswer {
  for (const [name, instead] of Object.entries(REFUSED)) if (o[name] !== undefined) badOption(name, instead, o[name]);
  if (o.store !== undefined && typeof (o.store as { increment?: unknown }).increment === 'function') {
    badOption('store', 'a sluice Store: redisStore({ client }) for Redis (instead of rate-limit-redis), or memoryStore()', o.store);
  }
  const windowMs = o.windowMs === undefined ? DEFAULTS.windowMs : parseDuration(o.windowMs, 'windowMs');
  const given = o.limit ?? o.max ?? DEFAULTS.limit;
  if (o.identifier !== undefined && typeof o.identifier !== 'string') {
    badOption('identifier', 'a string (the draft-8 policy name; a function of the request is not taken)', o.identifier);
  }
  const named = o.identifier as string | undefined;
  const policyFor = (limit: number): PolicyInput => ({
    limit,
    window: windowMs,
    algorithm: 'fixed-window',
    start: 'first-hit',
    name: named ?? identifier(limit, windowMs),
  });
  if (typeof given === 'function') {
    const limitOf = given as (req: unknown, res: unknown) => Awaitable<number>;
    const pick = policyPerLimit(policyFor);
    o.policy = (req: unknown, res: unknown) => {
      const limit = limitOf(req, res);
      return typeof limit === 'number' ? pick(limit) : Promise.resolve(limit).then(pick);
    };
  } else {
    o.policy = policyFor(given as number);
  }
  if (o.keyGenerator !== undefined) o.key = isFunction(o.keyGenerator, 'keyGenerator');
  if (o.passOnStoreError !== undefined && isBoolean(o.passOnStoreError, 'passOnStoreError') && o.failMode === undefined)
    o.failMode = 'open';
  const { draft, legacy } = headerModes(o);
  const handler = o.handler === undefined ? undefined : isFunction<(...args: unknown[]) => unknown>(o.handler, 'handler');
  const message = o.message ?? DEFAULTS.message;
  const statusCode = o.statusCode ?? DEFAULTS.statusCode;
  if (!Number.isInteger(statusCode)) badOption('statusCode', 'an integer', statusCode);
  // What express-rate-limit passes its handler as `options`: the resolved configuration.
  const config = { ...o, windowMs, limit: given, message, statusCode, standardHeaders: draft ?? false, legacyHeaders: legacy };
  if (handler !== undefined) o.onLimited = (req: unknown, res: unknown, next: unknown) => handler(req, res, next, config);
  const validate = o.validate;
  const warnForwarded =
    validate !== false && !(typeof validate === 'object' && validate !== null && (validate as Options).xForwardedForHeader === false);
  for (const n of [...EXPRESS_RATE_LIMIT_NAMES, 'message', 'statusCode']) delete o[n];

  return {
    warnForwarded,
    headers(decision, key) {
      const out: Record<string, string> = legacy ? rateLimitHeaders(decision, { headers: 'legacy' }) : {};
      if (draft !== undefined) Object.assign(out, rateLimitHeaders(decision, { headers: draft, key }));
      // Retry-After only with some headers on, as express-rate-limit sends it: the seconds to the window's end.
      if (!legacy && draft === undefined) delete out['Retry-After'];
      else if (!decision.allowed) out['Retry-After'] = String(Math.max(0, Math.ceil(decision.resetMs / 1000)));
      return out;
    },
    async respond(_decision, req, res) {
      // express-rate-limit's handler sets the status before it calls message(req, res).
      if (typeof message === 'function' && res !== null && typeof res === 'object')
        (res as { statusCode: number }).statusCode = statusCode as number;
      const body = typeof message === 'function' ? await message(req, res) : message;
      // Express's res.send: a string as text/html, anything else as JSON.
      if (typeof body === 'string') return { status: statusCode as number, contentType: 'text/html; charset=utf-8', body };
      return { status: statusCode as number, contentType: 'application/json; charset=utf-8', body: JSON.stringify(body) };
    },
  };
}
