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
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { type ExpressRateLimitSpellings, expressRateLimit } from './peer.js';

declare global {
  namespace Express {
    interface Request {
      /** The rate-limit decision for this request, set by @sluice/express (absent when skipped). */
      rateLimit?: Decision;
    }
  }
}

/** express-rate-limit's names that sluice's own spelling also takes: its policy (alone), its key and its headers. */
type ExpressPeers = Pick<
  ExpressRateLimitSpellings<Request, Response>,
  'windowMs' | 'limit' | 'max' | 'keyGenerator' | 'standardHeaders' | 'legacyHeaders'
>;

/** The options only the Express adapter has. */
export interface ExpressOwnOptions {
  /**
   * Answers a limited request instead of the default 429, and a refusal while the store cannot answer (decision.source
   * 'fail-closed') instead of the default 503; headers and Retry-After are already set. Default: problem+json 429 or 503.
   */
  onLimited?: (req: Request, res: Response, next: NextFunction, decision: Decision) => void;
}

const EXPRESS_OPTIONS = { onLimited: spec<NonNullable<ExpressOwnOptions['onLimited']>>(isFunction) };
const FORWARDED: ForwardedCheck<Request> = {
  untrusted: (req) => req.headers['x-forwarded-for'] !== undefined && !req.app.get('trust proxy'),
  fix: "app.set('trust proxy', 1) (1: the number of proxies in front of the app)",
  docs: 'https://github.com/sluice-js/sluice/blob/main/docs/migrating/express-rate-limit.md#behind-a-proxy',
};

/**
 * Options of rateLimit(): every createLimiter option or `limiter`, the common adapter options, and express-rate-limit's
 * spellings. A policy is required: `policy`, `limiter`, or express-rate-limit's `limit` / `max` (with `windowMs`).
 */
export type ExpressRateLimitOptions = HttpLimitOptions<Request, Response> &
  ExpressPeers &
  ExpressOwnOptions &
  (PolicyGiven<Request> | { limit: number } | { max: number });

/** express-rate-limit's options with its meaning (a policy given as windowMs and limit), beside the limiter options. */
export type ExpressRateLimitDropIn = Omit<
  HttpLimitOptions<Request, Response>,
  'policy' | 'limiter' | 'key' | 'skip' | 'message' | 'statusCode' | 'headers'
> &
  ExpressRateLimitSpellings<Request, Response> &
  ExpressOwnOptions;

/**
 * Express middleware. On an app or router it counts everything under its mount per client; on a route
 * (`router.post('/login', rateLimit(opts), handler)`) it counts that route per client. `req.rateLimit` holds the
 * Decision. Bad options throw here.
 * @example app.use(rateLimit({ policy: '100/1m' }))
 */
export function rateLimit(options: ExpressRateLimitOptions): RequestHandler;
/** express-rate-limit's options with its meaning: `rateLimit({ windowMs: 60_000, limit: (req) => ..., handler })`. */
export function rateLimit(options: ExpressRateLimitDropIn): RequestHandler;
export function rateLimit(options: ExpressRateLimitOptions | ExpressRateLimitDropIn): RequestHandler {
  const limit = httpLimit<Request, Response, typeof EXPRESS_OPTIONS>(options as ExpressRateLimitOptions, {
    own: EXPRESS_OPTIONS,
    forwarded: FORWARDED,
    peer: expressRateLimit,
  });
  const { onLimited } = limit.own;

  return function sluiceRateLimit(req, res, next) {
    // On a route, its method and full pattern; elsewhere, the mount.
    const scope = req.route ? routeScope(req.method, `${req.baseUrl}${String(req.route.path)}`) : routeScope(undefined, req.baseUrl);
    limit
      .check(req, scope, () => req.ip, res, res)
      .then((verdict) => {
        if (verdict === undefined) return next();
        // A decision already here is an earlier sluice middleware's: join its RateLimit lists.
        const stacked = req.rateLimit !== undefined;
        req.rateLimit = verdict.decision;
        res.set(stacked ? stackHeaders(verdict.headers, (name) => res.getHeader(name)) : verdict.headers);
        if (!verdict.limited) {
          limit.track(verdict, req, res, res);
          return next();
        }
        if (onLimited) return onLimited(req, res, next, verdict.decision);
        limit.limitedResponse(verdict.decision, req, res).then((r) => {
          res.status(r.status).type(r.contentType).send(r.body);
        }, next);
      }, next);
  };
}

export default rateLimit;
export type { Decision } from '@sluice/core';

/** Options of shed(): createShedder's (or a `shedder` to share) and `priority(req)`. */
export type ExpressShedOptions = ShedOptions<Request>;

/**
 * Express middleware that sheds load: a request that gets no slot of the adaptive concurrency limit (after
 * waiting up to `maxWait`, default 0) answers 503 with Retry-After and problem+json. Bad options throw here.
 * Under heavy overload, mount shedGuard() in front of the app instead (docs/shedding.md).
 * @example app.use(shed({ priority: (req) => (req.path.startsWith('/checkout') ? 'critical' : 'normal') }))
 */
export function shed(options: ExpressShedOptions = {}): RequestHandler {
  // Express's req and res are node:http's: the kit's guard is the middleware, and its 503 is written with
  // writeHead/end (no res.send: no ETag, charset or freshness work; under overload most requests take this path).
  return guardOf(shedGate<Request>(options));
}

/**
 * shed() in front of Express, on node:http's request and response: a shed request then costs node:http's parsing
 * and the 503 only, not Express's per-request work (docs/shedding.md). `priority(req)` gets Node's IncomingMessage
 * (`req.headers`, `req.url`, `req.method`; not Express's `req.path` or `req.ip`); `next(error)` when it threw.
 * Given the `shedder` of a shed() in the app too, one request takes one slot. Bad options throw here.
 * @example
 * const guard = shedGuard({ priority: (req) => (req.url?.startsWith('/checkout') ? 'critical' : 'normal') });
 * http.createServer((req, res) => guard(req, res, (error) => (error ? res.writeHead(500).end() : app(req, res)))).listen(3000);
 */
export function shedGuard(
  options: ShedOptions<IncomingMessage> = {},
): (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => void {
  return guardOf(shedGate<IncomingMessage>(options));
}
