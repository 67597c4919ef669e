// rateLimit(): the Hono middleware. It translates a Hono context for the kit (@sluice/core/adapter), which
// decides; the headers and the answer are Hono's c.header() and a Response.
import type { Decision } from '@sluice/core';
import {
  type ForwardedCheck,
  type HttpLimit,
  type HttpLimitOptions,
  httpLimit,
  isFunction,
  type PeerTranslator,
  type PolicyGiven,
  routeScope,
  spec,
  stackHeaders,
} from '@sluice/core/adapter';
import type { Context, Env, MiddlewareHandler, Next } from 'hono';
import { createMiddleware } from 'hono/factory';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { clientAddress, type GetIP, responseEnd, routeOf } from './client.js';
import { type HonoRateLimiterOptions, honoRateLimiter } from './peer.js';

/** The variables rateLimit() sets: `c.var.rateLimit`, the request's Decision (absent when skipped). */
export type RateLimitVariables = { rateLimit?: Decision };

declare module 'hono' {
  // Also for the handlers of an app whose app.use(rateLimit()) stands alone (its Env then reaches none of them).
  interface ContextVariableMap {
    /** The rate-limit decision for this request, set by @sluice/hono's rateLimit() (absent when skipped, or before it ran). */
    rateLimit?: Decision;
  }
}

/** The options only the Hono adapter has. */
export interface HonoOwnOptions<E extends Env> {
  /** Answers a limited request instead of the default 429; headers and Retry-After are already set. Default: problem+json 429. */
  onLimited?: (c: Context<E>, decision: Decision) => Response | Promise<Response>;
  /**
   * Where the client's address comes from, for the default key and the rules: a runtime's getConnInfo (as
   * hono/ip-restriction takes it) or `(c) => address`, e.g. the header your proxy sets. Default:
   * @hono/node-server's getConnInfo, the socket's address.
   */
  getIP?: GetIP;
}

/**
 * Options of rateLimit(): every createLimiter option or `limiter`, and the common adapter options, their
 * functions taking the Hono context. A policy or a limiter is required. `E`: the app's Env, for `c.var` in them.
 */
// biome-ignore lint/suspicious/noExplicitAny: Hono's own default Env (createMiddleware's), so `c.var.user` reads without a type argument
export type HonoRateLimitOptions<E extends Env = any> = HttpLimitOptions<Context<E>> & HonoOwnOptions<E> & PolicyGiven<Context<E>>;

/** onLimited as the middleware calls it: also given `next`, which hono-rate-limiter's handler may call (then it answers nothing). */
type OnLimited = (c: Context, decision: Decision, next: Next) => unknown;
const OWN = { onLimited: spec<OnLimited>(isFunction), getIP: spec<GetIP>(isFunction) };
type Limit = HttpLimit<Context, undefined, typeof OWN>;

/** X-Forwarded-For on a request keyed on the socket's address: Hono trusts no proxy, so only getIP is a fix. */
const forwarded = (getIP: () => GetIP | undefined): ForwardedCheck<Context> => ({
  untrusted: (c) => getIP() === undefined && c.req.header('x-forwarded-for') !== undefined,
  fix: 'rateLimit({ getIP: (c) => ... }) returning the address your proxy sets (the last X-Forwarded-For hop it appended)',
  docs: 'https://github.com/sluice-js/sluice/blob/main/docs/hono.md#behind-a-proxy',
});

/** The route's counter: its method and pattern ('POST /login'); a middleware's (app.use) is its mount, '*' at the root. */
function scopeOf(c: Context): string {
  const route = routeOf(c);
  if (route === undefined || route.method !== 'ALL') return route === undefined ? routeScope() : routeScope(route.method, route.path);
  const mount = route.path.replace(/\/?\*$/, '');
  return routeScope(undefined, mount === '' ? undefined : mount);
}

/** The kit's limit for `options` (bad ones throw here, by name, in either spelling), and the client's address it keys on by default. */
function honoLimit(options: object, peer: PeerTranslator): { limit: Limit; ip: (c: Context) => string | undefined } {
  const limit: Limit = httpLimit<Context, undefined, typeof OWN>(options as HonoRateLimitOptions, {
    own: OWN,
    peer,
    forwarded: forwarded(() => limit.own.getIP),
  });
  return { limit, ip: clientAddress(limit.own.getIP) };
}

/** A limited request's answer: onLimited's (undefined when hono-rate-limiter's handler passed it on), else the kit's response. */
async function limited(limit: Limit, c: Context, next: Next, decision: Decision): Promise<Response | undefined> {
  const { onLimited } = limit.own;
  if (onLimited) return ((await onLimited(c, decision, next)) ?? undefined) as Response | undefined;
  const r = await limit.limitedResponse(decision, c);
  c.header('Content-Type', r.contentType);
  return c.body(r.body, r.status as ContentfulStatusCode);
}

/** The headers sluice's middlewares set on a request, so far: an inner one (a route's) joins their RateLimit lists. */
const sent = new WeakMap<Context, Record<string, string>>();

/**
 * Sets `headers` again on the answer when it has none of them: a Response made by hand (`new Response(...)`,
 * by a handler or onLimited) carries no c.header(), which Hono merges into its own helpers' (c.json, c.text) only.
 */
function onAnswer(c: Context, headers: Record<string, string>): void {
  const missing = Object.entries(headers).filter(([name]) => !c.res.headers.has(name));
  if (missing.length === 0) return;
  try {
    for (const [name, value] of missing) c.res.headers.set(name, value);
  } catch {
    // Immutable headers (a fetch() Response passed on): a copy of the response carries them.
    const copy = new Headers(c.res.headers);
    for (const [name, value] of missing) copy.set(name, value);
    c.res = new Response(c.res.body, { status: c.res.status, statusText: c.res.statusText, headers: copy });
  }
}

/** The middleware that decides with `limit`; the Decision goes in c.var[property]. */
function middleware(limit: Limit, ip: (c: Context) => string | undefined, property: string): MiddlewareHandler {
  return createMiddleware(async function sluiceRateLimit(c, next) {
    const end = responseEnd(c);
    const verdict = await limit.check(c, scopeOf(c), () => ip(c), undefined, end.node ? end.raw : undefined);
    if (verdict === undefined) return next();
    c.set(property as never, verdict.decision as never);
    const earlier = sent.get(c);
    const own = verdict.headers;
    const headers = earlier === undefined ? own : { ...earlier, ...stackHeaders(own, (n) => earlier[n]) };
    sent.set(c, headers);
    // By c.header(), not on c.res: reading c.res makes Hono wrap the handler's answer again, which costs
    // @hono/node-server its fast path (the body read back as a stream: about 100 µs of CPU a request).
    for (const [name, value] of Object.entries(headers)) c.header(name, value);
    if (verdict.limited) {
      const answer = await limited(limit, c, next, verdict.decision);
      if (answer === undefined) return; // hono-rate-limiter's handler called next()
      c.res = answer;
      onAnswer(c, headers);
      return c.res;
    }
    // Hono's functions get the context alone: settle(c), requestWasSuccessful(c).
    limit.track(verdict, c, undefined, end.raw);
    try {
      await next();
    } finally {
      end.end();
    }
    onAnswer(c, headers);
  });
}

/**
 * Hono middleware (made with createMiddleware), for an app (`app.use(rateLimit(opts))`: one counter per
 * client for everything below its mount) or a route (`app.post('/login', rateLimit(opts), handler)`: that
 * route's counter). `c.var.rateLimit` holds the Decision. Bad options throw here.
 * @example app.use(rateLimit({ policy: '100/1m' }))
 */
// biome-ignore lint/suspicious/noExplicitAny: Hono's own default Env, as HonoRateLimitOptions
export function rateLimit<E extends Env = any>(options: HonoRateLimitOptions<E>): MiddlewareHandler<{ Variables: RateLimitVariables }>;
/**
 * hono-rate-limiter's options with its meaning: `rateLimit({ windowMs: 60_000, limit: 100, keyGenerator: (c) => ... })`,
 * its draft-6 headers, message and status by default. `c.var[requestPropertyName]` holds the Decision.
 */
// biome-ignore lint/suspicious/noExplicitAny: Hono's own default Env, as HonoRateLimitOptions
export function rateLimit<E extends Env = any, K extends string = 'rateLimit'>(
  options: HonoRateLimiterOptions<E, K>,
): MiddlewareHandler<{ Variables: { [P in K]?: Decision } }>;
export function rateLimit(options: HonoRateLimitOptions | HonoRateLimiterOptions): MiddlewareHandler {
  const peer = honoRateLimiter();
  const { limit, ip } = honoLimit(options, peer);
  return middleware(limit, ip, peer.property);
}
