// What the Express, Fastify and Koa adapters share: their options, resolved once; the key, cost and skip of a
// request; the decision's headers; the 429 body. Framework-free: a request is an opaque `Req` here.
import type { Decision } from './decision.js';
import { parseDuration } from './duration.js';
import { badOption, describe, SluiceError } from './errors.js';
import { type HeadersMode, parseHeadersMode, rateLimitHeaders, retryAfterSeconds } from './headers.js';
import { ipKey } from './ip-key.js';
import { CHECK_COST, type ConsumeOptions, createLimiter, type Limiter, type LimiterOptions } from './limiter.js';
import { LIMITER_OPTION_NAMES } from './limiter-options.js';
import { checkNames, isBoolean, isFunction, type OptionSpec, ownCopy, resolve } from './options.js';
import type { PolicyInput } from './policy.js';
import { settleAfter } from './settle.js';

type Awaitable<T> = T | Promise<T>;

/** A 429 body: a string is sent as text/plain, an object as JSON. */
export type LimitedBody = string | Record<string, unknown>;

/** A request's own policies (its plan): one policy or several, chosen from the request; may be async. */
export type PolicyOf<Req> = (req: Req) => Awaitable<PolicyInput | PolicyInput[]>;

/**
 * The options every adapter takes, for a request type `Req` and a response type `Res` (Koa has none:
 * its functions get the context alone), but where its policy comes from.
 */
export interface HttpLimitOptions<Req, Res = undefined> extends Omit<Partial<LimiterOptions>, 'policy'> {
  /**
   * One policy, or several (as in createLimiter), or a function of the request that returns them (per
   * plan: `(req) => plans[req.user.plan]`, may be async; also with a shared `limiter`). Give this, or `limiter`.
   */
  policy?: PolicyInput | PolicyInput[] | PolicyOf<Req>;
  /** A limiter to use (and share) instead of limiter options. Default: one made from the limiter options. */
  limiter?: Limiter;
  /** The client's key. Default: the client IP as the framework resolves it (trust-proxy aware), see ipv6Subnet. */
  key?: (req: Req) => Awaitable<string>;
  /** The request's cost, a positive number, or a function of the request that returns it. Default 1. */
  cost?: number | ((req: Req) => Awaitable<number>);
  /** Requests for which it returns true are not counted. Default: none. */
  skip?: (req: Req) => Awaitable<boolean>;
  /** Names a counter to share it across routes. Default: each route counts on its own (method and route pattern). */
  scope?: string;
  /** Which headers to send: 'draft' (IETF RateLimit), 'legacy' (X-RateLimit-*), 'both' or false. Default 'draft'. */
  headers?: HeadersMode;
  /** Status of a limited response, 400 to 599. Default 429. */
  statusCode?: number;
  /** Body of a limited response, or a function of the decision that returns it. Default: application/problem+json. */
  message?: LimitedBody | ((decision: Decision, req: Req) => Awaitable<LimitedBody>);
  /** Prefix length that groups IPv6 clients in the default key; false keeps whole addresses. Default 56. */
  ipv6Subnet?: number | false;
  /**
   * The request's real cost, known once the response has finished or the connection closed (tokens an
   * LLM call used): the charge moves to it, up (a debt later requests wait out) or down (a refund).
   * Runs once per allowed request, may be async; undefined keeps the charge. An error in it never
   * touches the response: it is reported as a 'settle-error' event. Default none.
   */
  settle?: (req: Req, res: Res) => Awaitable<number | undefined>;
  /** express-rate-limit: refund a request that failed (requestWasSuccessful false, or aborted by the client). Default false. */
  skipFailedRequests?: boolean;
  /** express-rate-limit: refund a request that succeeded. Default false. */
  skipSuccessfulRequests?: boolean;
  /** express-rate-limit: whether a finished request succeeded, for the two skip options. Default: status below 400. */
  requestWasSuccessful?: (req: Req, res: Res) => Awaitable<boolean>;
}

/** Where an adapter's policy comes from, for types: `policy` or a shared `limiter` (a middleware without either does not type-check). */
export type PolicyGiven<Req> = { policy: PolicyInput | PolicyInput[] | PolicyOf<Req> } | { limiter: Limiter };

/** The option spellings of the middlewares users switch from: express-rate-limit and @fastify/rate-limit. */
export interface PeerSpellings<Req> {
  /** express-rate-limit: the window in ms (with `limit` or `max`). Default 60000. */
  windowMs?: number;
  /** express-rate-limit: requests per window. */
  limit?: number;
  /** express-rate-limit and @fastify/rate-limit: requests per window. */
  max?: number;
  /** @fastify/rate-limit: the window, in ms or as '1 minute', '1m'. Default 60000. */
  timeWindow?: number | string;
  /** express-rate-limit's name for `key`. */
  keyGenerator?: (req: Req) => Awaitable<string>;
  /** express-rate-limit: send the IETF RateLimit headers (any draft: sluice sends draft 10). With legacyHeaders, instead of `headers`. */
  standardHeaders?: boolean | 'draft-6' | 'draft-7' | 'draft-8';
  /** express-rate-limit: send X-RateLimit-* headers. Default true when standardHeaders is given. */
  legacyHeaders?: boolean;
}

/** The name of one peer spelling. */
export type PeerSpelling = keyof PeerSpellings<unknown>;

/** A limited response, ready to send. */
export interface LimitedResponse {
  status: number;
  contentType: string;
  body: string;
}

/** The outcome for one request. */
export interface HttpVerdict {
  decision: Decision;
  /** Rate-limit headers to set, Retry-After included when limited. */
  headers: Record<string, string>;
  limited: boolean;
  /** The client's key, and what it was charged (a settle moves the decision's own charge: decision.adjust). */
  key: string;
  cost: number;
}

/** What the kit reads of Node's http.ServerResponse (Express's res, Fastify's reply.raw, Koa's ctx.res). */
export interface RawResponse {
  readonly statusCode: number;
  /** True once the whole response went out ('finish'). */
  readonly writableFinished: boolean;
  /** True once the connection closed, whether or not the response went out. */
  readonly destroyed: boolean;
  once(event: 'close', listener: () => void): unknown;
}

/** One adapter middleware's resolved options and limiter. */
export interface HttpLimit<Req, Res = undefined> {
  readonly limiter: Limiter;
  /**
   * Decides for one request; undefined when `skip` says so. `route` names the default counter
   * ('POST /login'), `ip` reads the client IP for the default key. Throws on a bad key or cost.
   */
  check(req: Req, route: string, ip: () => string | undefined): Promise<HttpVerdict | undefined>;
  /** The response for a limited decision: by `statusCode` and `message`, problem+json by default. */
  limitedResponse(decision: Decision, req: Req): Promise<LimitedResponse>;
  /**
   * Call for an allowed request before passing it on: once `raw` closes (after it finished, or
   * without: an abort), gives the decision's concurrent slots back and settles its charge (settle, the skip
   * options). Costs nothing when there is neither.
   */
  track(verdict: HttpVerdict, req: Req, res: Res, raw: RawResponse): void;
}

/** The adapter kit's own options, each once: its default, its check, its doc line. */
const ADAPTER_OPTIONS = {
  limiter: {
    doc: 'a shared limiter instead of limiter options',
    check: (v, n) => {
      if (typeof v !== 'object' || v === null || typeof (v as Limiter).consume !== 'function')
        badOption(n, 'a Limiter from createLimiter()', v);
      return v as Limiter;
    },
  } as OptionSpec<Limiter | undefined>,
  key: { doc: "the client's key; default the client IP", check: isFunction } as OptionSpec<
    ((req: unknown) => Awaitable<string>) | undefined
  >,
  cost: {
    doc: "the request's cost, a number or a function; default 1",
    check: (v, n) => {
      if (typeof v === 'number') {
        if (!Number.isFinite(v) || v <= 0) badOption(n, 'a positive finite number or a function', v);
        return () => v;
      }
      return isFunction(v, n);
    },
  } as OptionSpec<((req: unknown) => Awaitable<number>) | undefined>,
  skip: { doc: 'requests it returns true for are not counted', check: isFunction } as OptionSpec<
    ((req: unknown) => Awaitable<boolean>) | undefined
  >,
  scope: {
    doc: 'a counter shared across routes; default per route',
    check: (v, n) => {
      if (typeof v !== 'string' || v === '') badOption(n, 'a non-empty string', v);
      return v;
    },
  } as OptionSpec<string | undefined>,
  headers: {
    doc: "'draft', 'legacy', 'both' or false; default 'draft'",
    default: 'draft',
    check: (v, n) => parseHeadersMode(v, n),
  } as OptionSpec<HeadersMode>,
  statusCode: {
    doc: 'status of a limited response; default 429',
    default: 429,
    check: (v, n) => {
      if (!Number.isInteger(v) || (v as number) < 400 || (v as number) > 599) badOption(n, 'an integer from 400 to 599', v);
      return v as number;
    },
  },
  message: {
    doc: 'body of a limited response, or a function of the decision; default problem+json',
    check: (v, n) => {
      if (typeof v !== 'string' && typeof v !== 'function' && (v === null || typeof v !== 'object')) {
        badOption(n, 'a string, an object or a function', v);
      }
      return v as LimitedBody | ((decision: Decision, req: unknown) => Awaitable<LimitedBody>);
    },
  } as OptionSpec<LimitedBody | ((decision: Decision, req: unknown) => Awaitable<LimitedBody>) | undefined>,
  ipv6Subnet: {
    doc: 'IPv6 prefix length of the default key, or false; default 56',
    default: 56,
    check: (v, n) => {
      if (v !== false && (!Number.isInteger(v) || (v as number) < 1 || (v as number) > 128))
        badOption(n, 'an integer from 1 to 128, or false', v);
      return v as number | false;
    },
  } as OptionSpec<number | false>,
  settle: { doc: "the request's real cost after the response; default none", check: isFunction } as OptionSpec<
    ((req: unknown, res: unknown) => Awaitable<number | undefined>) | undefined
  >,
  skipFailedRequests: { doc: 'refund failed and aborted requests; default false', default: false, check: isBoolean },
  skipSuccessfulRequests: { doc: 'refund successful requests; default false', default: false, check: isBoolean },
  requestWasSuccessful: { doc: 'whether a request succeeded; default status < 400', check: isFunction } as OptionSpec<
    ((req: unknown, res: unknown) => Awaitable<boolean>) | undefined
  >,
} satisfies { [K in Exclude<keyof HttpLimitOptions<unknown>, keyof LimiterOptions>]-?: OptionSpec<unknown> };

/** The peer spellings (checked where they are turned into a policy, a key and a headers mode). */
const PEER_NAMES: readonly PeerSpelling[] = ['windowMs', 'limit', 'max', 'timeWindow', 'keyGenerator', 'standardHeaders', 'legacyHeaders'];
const POLICY_OPTIONS = new Set(['policy', 'windowMs', 'limit', 'max', 'timeWindow']);
const WORDS = /^(\d+(?:\.\d+)?)\s*(milliseconds?|seconds?|secs?|minutes?|mins?|hours?|hrs?|days?)$/i;
const WORD_MS: Record<string, number> = { mil: 1, sec: 1000, min: 60_000, hou: 3_600_000, hrs: 3_600_000, hr: 3_600_000, day: 86_400_000 };

/** @fastify/rate-limit's timeWindow: ms, a duration ('1m'), or words ('1 minute'). */
function timeWindowMs(value: unknown): number {
  const words = typeof value === 'string' ? WORDS.exec(value.trim()) : null;
  if (!words) return parseDuration(value, 'timeWindow');
  const unit = (words[2] as string).toLowerCase();
  return Number(words[1]) * (WORD_MS[unit.slice(0, 3)] ?? WORD_MS[unit.slice(0, 2)] ?? 0);
}

/** The policy given in a peer's spelling (windowMs/timeWindow with limit/max), or undefined. */
function peerPolicy(o: Record<string, unknown>): PolicyInput | undefined {
  const { windowMs, limit, max, timeWindow } = o;
  if (windowMs === undefined && limit === undefined && max === undefined && timeWindow === undefined) return undefined;
  if (o.policy !== undefined) badOption('policy', 'given alone, not with windowMs, limit, max or timeWindow', o.policy);
  const count = limit ?? max;
  if (count === undefined) badOption('limit', 'a positive integer when windowMs or timeWindow is given', count);
  const window =
    windowMs !== undefined ? parseDuration(windowMs, 'windowMs') : timeWindow !== undefined ? timeWindowMs(timeWindow) : 60_000;
  return { limit: count as number, window };
}

/** The `headers` mode, from `headers` or from express-rate-limit's standardHeaders and legacyHeaders. */
function headersMode(o: Record<string, unknown>, headers: HeadersMode): HeadersMode {
  const { standardHeaders: standard, legacyHeaders: legacy } = o;
  if (standard === undefined && legacy === undefined) return headers;
  if (o.headers !== undefined) badOption('headers', 'given alone, not with standardHeaders or legacyHeaders', o.headers);
  if (standard !== undefined && typeof standard !== 'boolean' && !['draft-6', 'draft-7', 'draft-8'].includes(standard as string)) {
    badOption('standardHeaders', "a boolean, 'draft-6', 'draft-7' or 'draft-8'", standard);
  }
  if (legacy !== undefined && typeof legacy !== 'boolean') badOption('legacyHeaders', 'a boolean', legacy);
  // express-rate-limit's defaults: no standard headers, legacy headers on.
  const draft = standard !== undefined && standard !== false;
  const old = legacy ?? true;
  return draft && old ? 'both' : draft ? 'draft' : old ? 'legacy' : false;
}

/** What an adapter adds to the kit: its own options (such as onLimited), checked by the adapter, and the peer spellings it takes. */
export interface AdapterOwn {
  own?: readonly string[];
  peers?: readonly PeerSpelling[];
}

/**
 * Resolves an adapter's options once, at construction: bad options throw here naming the option.
 * @example const limit = httpLimit<Request>({ policy: '100/1m' }, { own: ['onLimited'] }); const v = await limit.check(req, 'GET /', () => req.ip);
 */
export function httpLimit<Req, Res = undefined>(
  options: HttpLimitOptions<Req, Res> & PeerSpellings<Req>,
  adapter: AdapterOwn = {},
): HttpLimit<Req, Res> {
  if (options === null || typeof options !== 'object') badOption('options', 'an object', options);
  const o = ownCopy(options);
  const peers = adapter.peers ?? PEER_NAMES;
  checkNames(o, [...LIMITER_OPTION_NAMES, ...Object.keys(ADAPTER_OPTIONS), ...peers, ...(adapter.own ?? [])], 'a rate-limit option');
  if (o.key !== undefined && o.keyGenerator !== undefined) badOption('keyGenerator', 'absent when key is given', 'a function');
  const a = resolve(ADAPTER_OPTIONS, { ...o, key: o.key ?? o.keyGenerator });
  const key = a.key as ((req: Req) => Awaitable<string>) | undefined;
  const cost = a.cost as ((req: Req) => Awaitable<number>) | undefined;
  const skip = a.skip as ((req: Req) => Awaitable<boolean>) | undefined;
  const { scope, statusCode: status, ipv6Subnet: subnet } = a;
  const message = a.message as LimitedBody | ((decision: Decision, req: Req) => Awaitable<LimitedBody>) | undefined;
  const mode = headersMode(o, a.headers);

  let limiter = a.limiter;
  // A policy function is the request's: each call passes what it returns, and the limiter has none.
  const policyOf = typeof o.policy === 'function' ? (o.policy as PolicyOf<Req>) : undefined;
  const limiterOptions: Record<string, unknown> = {};
  for (const name of LIMITER_OPTION_NAMES) if (o[name] !== undefined && !(name === 'policy' && policyOf)) limiterOptions[name] = o[name];
  const policy = peerPolicy(o);
  if (policy !== undefined) limiterOptions.policy = policy;
  if (limiter !== undefined) {
    const extra = Object.keys(limiterOptions);
    if (extra.length > 0)
      badOption(extra[0] as string, 'absent when limiter is given (set it on the limiter)', limiterOptions[extra[0] as string]);
  } else {
    if (limiterOptions.policy === undefined && policyOf === undefined) {
      badOption('policy', "given (e.g. '100/1m' or (req) => plans[req.user.plan]), or limiter, or windowMs with limit", undefined);
    }
    limiter = createLimiter(limiterOptions as unknown as LimiterOptions);
  }
  const theLimiter = limiter;
  // A constant cost that can never pass would answer every request 500: refused here (not with a per-request policy).
  if (typeof o.cost === 'number' && policyOf === undefined) (theLimiter as { [CHECK_COST]?: (cost: number) => void })[CHECK_COST]?.(o.cost);
  const after = settleAfter<Req, Res>(theLimiter, a);

  return {
    limiter: theLimiter,
    async check(req, route, ip) {
      // A sync answer is taken as it is: awaiting it would cost every request a microtask.
      if (skip !== undefined) {
        const skipped = call(skip, req, 'ERR_SLUICE_KEY', 'skip');
        if (skipped === true || (skipped !== false && (await caught(skipped, 'ERR_SLUICE_KEY', 'skip')))) return undefined;
      }
      const given = key === undefined ? ipKey(ip(), subnet) : call(key, req, 'ERR_SLUICE_KEY', 'key');
      const client: unknown = typeof given === 'string' ? given : await caught(given, 'ERR_SLUICE_KEY', 'key');
      if (typeof client !== 'string' || client === '') {
        const got = client === '' ? 'an empty string, which would count every such request in one shared bucket' : describe(client);
        throw new SluiceError('ERR_SLUICE_KEY', `key(req) must return a non-empty string, got ${got}`);
      }
      const counter = scope ?? route;
      const price = cost === undefined ? undefined : call(cost, req, 'ERR_SLUICE_COST', 'cost');
      let charge: ConsumeOptions =
        price === undefined
          ? { scope: counter }
          : { scope: counter, cost: typeof price === 'number' ? price : await caught(price, 'ERR_SLUICE_COST', 'cost') };
      if (policyOf !== undefined) {
        const chosen = call(policyOf, req, 'ERR_SLUICE_OPTION', 'policy');
        const policy =
          typeof (chosen as Promise<unknown> | undefined)?.then === 'function'
            ? await caught(chosen, 'ERR_SLUICE_OPTION', 'policy')
            : chosen;
        charge = { ...charge, policy: policy as PolicyInput | PolicyInput[] };
      }
      const decision = await theLimiter.consume(client, charge);
      const limited = !decision.allowed;
      // A settle moves the decision's own charge: its key, scope, shard and the request's own policies.
      return { decision, headers: rateLimitHeaders(decision, { headers: mode }), limited, key: client, cost: charge.cost ?? 1 };
    },
    track(verdict, req, res, raw) {
      const { decision } = verdict;
      // Nothing was charged when shadow mode let a denial through or the store was down and open.
      const charged = after !== undefined && decision.allowed && decision.shadowed !== true && decision.source !== 'fail-open';
      const release = decision.release;
      if (!charged && release === undefined) return;
      const end = () => {
        if (release !== undefined) void release();
        if (charged) after(verdict, req, res, raw);
      };
      // Closed before we got here (the client left while the limiter decided): 'close' will not come.
      if (raw.destroyed) return end();
      // 'close' comes once for every response, after 'finish' or without it (the client left), always
      // since Node 11: one listener, and writableFinished tells the two apart. (express-rate-limit
      // refunded on 'close' as if it meant a failure, so it refunded successful requests too.)
      raw.once('close', end);
    },
    async limitedResponse(decision, req) {
      const body = typeof message === 'function' ? await message(decision, req) : (message ?? problem(decision, status));
      if (typeof body === 'string') return { status, contentType: 'text/plain; charset=utf-8', body };
      const contentType = message === undefined ? 'application/problem+json; charset=utf-8' : 'application/json; charset=utf-8';
      return { status, contentType, body: JSON.stringify(body) };
    },
  };
}

/** A user function's error, as the SluiceError the framework gets: `code`, and the original as `cause`. */
function userError(error: unknown, code: string, name: string): SluiceError {
  if (error instanceof SluiceError) return error;
  const what = error instanceof Error ? `: ${error.message}` : '';
  return new SluiceError(code, `${name}(req) threw${what}`, { cause: error });
}

/** Calls a user's key, cost or skip function; a throw becomes a SluiceError with `code`. */
function call<T>(fn: (req: never) => T, req: unknown, code: string, name: string): T {
  try {
    return fn(req as never);
  } catch (error) {
    throw userError(error, code, name);
  }
}

/** Awaits a user function's promise; a rejection becomes a SluiceError with `code`. */
async function caught<T>(value: T | Promise<T>, code: string, name: string): Promise<T> {
  try {
    return await value;
  } catch (error) {
    throw userError(error, code, name);
  }
}

/**
 * The headers to set when an earlier sluice middleware already set its own on this response (an app-level
 * and a route-level one, stacked): the RateLimit and RateLimit-Policy lists carry both; the rest is replaced.
 * @example res.set(stackHeaders(verdict.headers, (name) => res.getHeader(name)))
 */
export function stackHeaders(headers: Record<string, string>, existing: (name: string) => unknown): Record<string, string> {
  const out = { ...headers };
  for (const name of ['RateLimit-Policy', 'RateLimit']) {
    const before = existing(name);
    if (out[name] !== undefined && typeof before === 'string' && before !== '') out[name] = `${before}, ${out[name]}`;
  }
  return out;
}

/** The default body of a limited response: RFC 9457 problem details naming the violated policies. */
function problem(decision: Decision, status: number): Record<string, unknown> {
  const violated = decision.policies.filter((p) => p.retryAfterMs > 0).map((p) => p.name);
  const names = violated.length > 0 ? violated : [decision.policy];
  return {
    type: 'about:blank',
    title: 'Too Many Requests',
    status,
    detail: `Rate limit ${names.map((n) => `"${n}"`).join(', ')} exceeded; retry in ${retryAfterSeconds(decision)} s.`,
    'violated-policies': names,
  };
}

/**
 * Per-route options over an app's: the route's win. A route that gives a policy replaces the app's policy
 * (in any spelling); a route that gives a limiter, or limiter options, replaces the other kind.
 * @example mergeHttpOptions({ policy: '100/1m', store }, { policy: '5/15m', failMode: 'closed' })
 */
export function mergeHttpOptions<T extends object>(app: T, route: Partial<T>): T {
  // Own properties only, on no prototype: a route's JSON `"__proto__"` is a key (refused by name), not the prototype.
  const merged = ownCopy(app);
  const r = ownCopy(route);
  const given = (name: string) => r[name] !== undefined;
  if (Object.keys(r).some((n) => given(n) && POLICY_OPTIONS.has(n))) for (const n of POLICY_OPTIONS) delete merged[n];
  if (given('limiter')) for (const n of LIMITER_OPTION_NAMES) delete merged[n];
  // A policy function is the request's, not the limiter's: a route may give one over an app's limiter.
  else if (
    LIMITER_OPTION_NAMES.some((n) => given(n) && !(n === 'policy' && typeof r.policy === 'function')) &&
    merged.limiter !== undefined
  ) {
    badOption('limiter', 'absent on the app when a route sets limiter options: give the app a store instead', 'a Limiter');
  }
  if (given('key')) delete merged.keyGenerator;
  if (given('keyGenerator')) delete merged.key;
  for (const n of Object.keys(r)) if (given(n)) merged[n] = r[n];
  return merged as T;
}
