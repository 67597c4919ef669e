import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Decision } from '@sluice/core';
import {
  type ForwardedCheck,
  shedGuard as guardOf,
  type HttpLimitOptions,
  httpLimit,
  isFunction,
  type PolicyGiven,
  routeScope,
  type ShedOptions,
  shedGate,
  spec,
  stackHeaders,
} from '@sluice/core/adapter';
import type { Context, Middleware, Next } from 'koa';

declare module 'koa' {
  interface DefaultState {
    /** The rate-limit decision for this request, set by @sluice/koa (absent when skipped). */
    rateLimit?: Decision;
  }
}

/** The options only the Koa adapter has. */
export interface KoaOwnOptions {
  /**
   * Answers a limited request instead of the default 429, and a refusal while the store cannot answer (decision.source
   * 'fail-closed') instead of the default 503; headers and Retry-After are already set. Default: problem+json 429 or 503.
   */
  onLimited?: (ctx: Context, decision: Decision) => void | Promise<void>;
}

const KOA_OPTIONS = { onLimited: spec<NonNullable<KoaOwnOptions['onLimited']>>(isFunction) };
const FORWARDED: ForwardedCheck<Context> = {
  untrusted: (ctx) => ctx.headers['x-forwarded-for'] !== undefined && !ctx.app.proxy,
  fix: 'app.proxy = true (and app.maxIpsCount = 1, the number of proxies in front of the app)',
  docs: 'https://github.com/sluice-js/sluice/blob/main/docs/migrating/koa-ratelimit.md#behind-a-proxy',
};

/** Options of rateLimit(): every createLimiter option or `limiter`, and the common adapter options. A policy or a limiter is required. */
export type KoaRateLimitOptions = HttpLimitOptions<Context> & KoaOwnOptions & PolicyGiven<Context>;

/**
 * Koa middleware, for an app or a @koa/router route (`router.post('/login', rateLimit(opts), handler)`,
 * which counts per route). `ctx.state.rateLimit` holds the Decision; the rate-limit headers also survive
 * an error thrown downstream. Bad options throw here.
 * @example app.use(rateLimit({ policy: '100/1m' }))
 */
export function rateLimit(options: KoaRateLimitOptions): Middleware {
  const limit = httpLimit<Context, undefined, typeof KOA_OPTIONS>(options, { own: KOA_OPTIONS, forwarded: FORWARDED });
  const { onLimited } = limit.own;

  return async function sluiceRateLimit(ctx, next) {
    // @koa/router's matched pattern (its `_matchedRoute`, the only way to read it); without a route, '*'.
    const pattern = (ctx as { _matchedRoute?: string | RegExp })._matchedRoute;
    const scope = pattern === undefined ? routeScope() : routeScope(ctx.method, String(pattern));
    const verdict = await limit.check(ctx, scope, () => ctx.ip, undefined, ctx.res);
    if (verdict === undefined) return next();
    // A decision already here is an earlier sluice middleware's: join its RateLimit lists.
    const stacked = ctx.state.rateLimit !== undefined;
    ctx.state.rateLimit = verdict.decision;
    ctx.set(stacked ? stackHeaders(verdict.headers, (name) => ctx.response.get(name)) : verdict.headers);
    if (verdict.limited) {
      if (onLimited) return onLimited(ctx, verdict.decision);
      const response = await limit.limitedResponse(verdict.decision, ctx);
      ctx.status = response.status;
      ctx.type = response.contentType;
      ctx.body = response.body;
      return;
    }
    // Koa's functions get the context alone: settle(ctx), requestWasSuccessful(ctx).
    limit.track(verdict, ctx, undefined, ctx.res);
    try {
      await next();
    } catch (error) {
      // Koa's error handling clears the response headers and then sets err.headers: ride along.
      if (error !== null && typeof error === 'object') {
        const e = error as { headers?: Record<string, string> };
        e.headers = { ...verdict.headers, ...e.headers };
      }
      throw error;
    }
  };
}

export default rateLimit;
export type { Decision } from '@sluice/core';

/** Options of shed(): createShedder's (or a `shedder` to share) and `priority(ctx)`. */
export type KoaShedOptions = ShedOptions<Context>;

/**
 * Koa middleware that sheds load: a request that gets no slot of the adaptive concurrency limit (after
 * waiting up to `maxWait`, default 0) answers 503 with Retry-After and problem+json. Bad options throw here.
 * Under heavy overload, mount shedGuard() in front of the app instead (docs/shedding.md).
 * @example app.use(shed({ priority: (ctx) => (ctx.path.startsWith('/checkout') ? 'critical' : 'normal') }))
 */
export function shed(options: KoaShedOptions = {}): Middleware {
  const gate = shedGate<Context>(options);
  const { status, headers, contentType, body } = gate.response;
  return async function sluiceShed(ctx: Context, next: Next) {
    if (await gate.admit(ctx, ctx.res)) return next();
    ctx.status = status;
    ctx.set(headers);
    ctx.type = contentType;
    ctx.body = body;
  };
}

/**
 * shed() in front of Koa, on node:http's request and response: a shed request then costs node:http's parsing
 * and the 503 only, not Koa's context and response (docs/shedding.md). `priority(req)` gets Node's
 * IncomingMessage (`.headers`, `.url`, `.method`; no `ctx.get` or `ctx.path`); `next(error)` when it threw.
 * Given the `shedder` of a shed() in the app too, one request takes one slot. Bad options throw here.
 * @example
 * const guard = shedGuard({ priority: (req) => (req.url?.startsWith('/checkout') ? 'critical' : 'normal') });
 * const handle = app.callback();
 * http.createServer((req, res) => guard(req, res, (error) => (error ? res.writeHead(500).end() : handle(req, res)))).listen(3000);
 */
export function shedGuard(
  options: ShedOptions<IncomingMessage> = {},
): (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => void {
  return guardOf(shedGate<IncomingMessage>(options));
}
