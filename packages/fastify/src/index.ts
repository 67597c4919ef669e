import type { IncomingMessage, ServerResponse } from 'node:http';
import { type Decision, memoryStore } from '@sluice/core';
import {
  badOption,
  type ForwardedCheck,
  shedGuard as guardOf,
  type HttpLimit,
  type HttpLimitOptions,
  httpLimit,
  isBoolean,
  isFunction,
  type LimitedResponse,
  mergeHttpOptions,
  own as ownValue,
  type PolicyGiven,
  resolve,
  routeScope,
  type ShedOptions,
  shedGate,
  spec,
} from '@sluice/core/adapter';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import { type FastifyRateLimitSpellings, fastifyRateLimit } from './peer.js';

type FastifyPeers = Omit<FastifyRateLimitSpellings<FastifyRequest>, 'ban'>;

/** Options a route can override in `config: { rateLimit: { ... } }`. */
export interface FastifyRateLimitRouteOptions extends Omit<HttpLimitOptions<FastifyRequest, FastifyReply>, 'ban'>, FastifyPeers {
  /** sluice's BanOptions, or @fastify/rate-limit's number: 403 once a client was refused more than this many times in a window. */
  ban?: HttpLimitOptions<FastifyRequest, FastifyReply>['ban'] | number;
  /**
   * Answers a limited request instead of throwing the 429 error, and a refusal while the store cannot answer
   * (decision.source 'fail-closed') instead of the 503; headers and Retry-After are already set.
   */
  onLimited?: (request: FastifyRequest, reply: FastifyReply, decision: Decision) => void | Promise<void>;
}

/** Where and on which routes the plugin runs. */
export interface FastifyPluginOwnOptions {
  /** The hook that decides: 'onRequest', or 'preHandler' for keys that need a parsed body or auth. Default 'onRequest'. */
  hook?: 'onRequest' | 'preHandler';
  /** Limit every route (true), or only routes with `config.rateLimit` (false). Default true. */
  global?: boolean;
}

/**
 * Options of the plugin: the route options, plus where and on which routes it runs. A policy is required
 * (`policy`, `limiter`, or @fastify/rate-limit's `max`), unless `global: false` leaves it to the routes.
 */
export type FastifyRateLimitOptions = FastifyRateLimitRouteOptions &
  FastifyPluginOwnOptions &
  (PolicyGiven<FastifyRequest> | { max: NonNullable<FastifyPeers['max']> } | { global: false });

/** The kit's reading of the options: a number `ban` is @fastify/rate-limit's, which its translation takes (peer.ts). */
type KitOptions = HttpLimitOptions<FastifyRequest, FastifyReply>;

const ROUTE_OPTIONS = { onLimited: spec<NonNullable<FastifyRateLimitRouteOptions['onLimited']>>(isFunction) };
type Limit = HttpLimit<FastifyRequest, FastifyReply, typeof ROUTE_OPTIONS>;

function isHook(v: unknown, n: string): 'onRequest' | 'preHandler' {
  if (v !== 'onRequest' && v !== 'preHandler') badOption(n, "'onRequest' or 'preHandler'", v);
  return v;
}
/** The plugin's own options, each default once (FastifyPluginOwnOptions says the same). */
const PLUGIN_OPTIONS = { hook: spec(isHook, 'onRequest'), global: spec(isBoolean, true) };
const FORWARDED: ForwardedCheck<FastifyRequest> = {
  // request.ips (Fastify's documented field, there when trustProxy is on) lists the socket's address and each hop
  // Fastify trusted: one or none means request.ip is the peer's. Fastify 5.12.1 and later trust no hop for a
  // numeric trustProxy (read on 5.12.8), so a hop count is not a fix.
  untrusted: (request) => request.headers['x-forwarded-for'] !== undefined && (request.ips?.length ?? 0) < 2,
  fix: "Fastify({ trustProxy: '10.0.0.0/8' }) (the proxies' addresses or CIDR ranges, not a hop count)",
  docs: 'https://github.com/sluice-js/sluice/blob/main/docs/migrating/fastify-rate-limit.md#behind-a-proxy',
};

declare module 'fastify' {
  interface FastifyContextConfig {
    /** This route's rate limit: options over the plugin's (not the plugin's own: hook, global), or false for none. */
    rateLimit?: (FastifyRateLimitRouteOptions & { [K in keyof FastifyPluginOwnOptions]?: never }) | false;
  }
  interface FastifyRequest {
    /** The rate-limit decision for this request, set by @sluice/fastify (absent when skipped). */
    rateLimit?: Decision;
  }
}

/**
 * Thrown for a limited request, so the app's error handler can shape the answer: code 'FST_SLUICE_RATE_LIMITED'
 * (429), or 'FST_SLUICE_UNAVAILABLE' (503) for a refusal while the store cannot answer (`fallback: false`).
 */
export class RateLimitError extends Error {
  readonly statusCode: number;
  readonly code: 'FST_SLUICE_RATE_LIMITED' | 'FST_SLUICE_UNAVAILABLE';
  readonly decision: Decision;
  /** The default answer's body and content type. */
  readonly response: LimitedResponse;
  constructor(decision: Decision, response: LimitedResponse) {
    const unavailable = decision.source === 'fail-closed';
    super(unavailable ? 'The rate limiter cannot reach its store' : `Rate limit "${decision.policy}" exceeded`);
    this.name = 'RateLimitError';
    this.code = unavailable ? 'FST_SLUICE_UNAVAILABLE' : 'FST_SLUICE_RATE_LIMITED';
    this.statusCode = response.status;
    this.decision = decision;
    this.response = response;
  }
}

function makeHook(limit: Limit, url: string): onRequestHookHandler {
  const { onLimited } = limit.own;
  return async function sluiceRateLimit(request, reply) {
    const verdict = await limit.check(request, routeScope(request.method, url), () => request.ip, undefined, reply.raw);
    if (verdict === undefined) return;
    request.rateLimit = verdict.decision;
    reply.headers(verdict.headers);
    if (!verdict.limited) {
      limit.track(verdict, request, reply, reply.raw);
      return;
    }
    // Under @fastify/rate-limit's spelling, its errorResponseBuilder's error, for the app's error handler.
    const peerError = limit.limitedError?.(verdict, request);
    if (peerError !== undefined) throw peerError;
    if (onLimited) {
      await onLimited(request, reply, verdict.decision);
      return reply;
    }
    const response = await limit.limitedResponse(verdict.decision, request);
    // The app's own error handler shapes the answer; Fastify's default one would drop our body, so answer here.
    if (request.server.errorHandler.name !== 'defaultErrorHandler') throw new RateLimitError(verdict.decision, response);
    return reply.code(response.status).type(response.contentType).send(response.body);
  };
}

const plugin: FastifyPluginAsync<FastifyRateLimitOptions> = async (fastify, options) => {
  const { hook, global } = resolve(PLUGIN_OPTIONS, options);
  const { hook: _hook, global: _global, ...app } = options as FastifyRateLimitRouteOptions & FastifyPluginOwnOptions;
  // Routes that override options still count in the plugin's store, so a shared `scope` shares a counter.
  if (ownValue(app, 'store') === undefined && ownValue(app, 'limiter') === undefined) app.store = memoryStore();
  const own = { own: ROUTE_OPTIONS, forwarded: FORWARDED, peer: fastifyRateLimit };
  const appLimit: Limit | undefined = global ? httpLimit(app as KitOptions, own) : undefined;
  fastify.decorateRequest('rateLimit', undefined);

  fastify.addHook('onRoute', (route) => {
    const config = ownValue(Object(route.config), 'rateLimit') as FastifyRateLimitRouteOptions | false | undefined;
    if (config === false || (config === undefined && appLimit === undefined)) return;
    if (config !== undefined && (config === null || typeof config !== 'object'))
      badOption('config.rateLimit', 'an object or false', config);
    for (const name of config === undefined ? [] : Object.keys(PLUGIN_OPTIONS)) {
      const value = ownValue(config as object, name);
      if (value !== undefined) badOption(`config.rateLimit.${name}`, `absent on a route: ${name} is the plugin's option`, value);
    }
    const limit: Limit =
      config === undefined
        ? (appLimit as Limit)
        : httpLimit(mergeHttpOptions(app, config, fastifyRateLimit) as KitOptions, { ...own, route: true });
    const handler = makeHook(limit, route.url);
    const existing = route[hook];
    route[hook] = existing === undefined ? [handler] : [...(Array.isArray(existing) ? existing : [existing]), handler];
  });
};

/**
 * The Fastify plugin. Every route registered after it is limited per client and per route, unless its
 * `config.rateLimit` overrides options or is false. `request.rateLimit` holds the Decision.
 * @example await app.register(rateLimit, { policy: '100/1m' })
 */
export const rateLimit = fp(plugin, { fastify: '5.x', name: '@sluice/fastify' });
export default rateLimit;
export type { Decision } from '@sluice/core';

/** Options of the shed plugin: createShedder's (or a `shedder` to share) and `priority(request)`. */
export type FastifyShedOptions = ShedOptions<FastifyRequest>;

const shedPlugin: FastifyPluginAsync<FastifyShedOptions> = async (fastify, options) => {
  const gate = shedGate<FastifyRequest>(options);
  const { status, headers, contentType, body } = gate.response;
  fastify.addHook('onRequest', async function sluiceShed(request, reply) {
    if (await gate.admit(request, reply.raw)) return;
    return reply.code(status).headers(headers).type(contentType).send(body);
  });
};

/**
 * The Fastify plugin that sheds load: every route registered after it takes a slot of the adaptive concurrency
 * limit in onRequest; a request that gets none (after waiting up to `maxWait`, default 0) answers 503 with
 * Retry-After and problem+json. Bad options throw at register.
 * @example await app.register(shed, { priority: (request) => (request.url.startsWith('/checkout') ? 'critical' : 'normal') })
 */
export const shed = fp(shedPlugin, { fastify: '5.x', name: '@sluice/fastify/shed' });

/**
 * shed() in front of Fastify, on node:http's request and response (Fastify's `serverFactory`): a shed request
 * then costs node:http's parsing and the 503, nothing of Fastify's (docs/shedding.md). `priority(req)` gets Node's
 * IncomingMessage (`req.headers`, `req.url`, `req.method`); `next(error)` when it threw. Bad options throw here.
 * @example
 * const guard = shedGuard({ priority: (req) => (req.url?.startsWith('/checkout') ? 'critical' : 'normal') });
 * const app = Fastify({
 *   serverFactory: (handler) => http.createServer((req, res) => guard(req, res, (error) => (error ? res.writeHead(500).end() : handler(req, res)))),
 * });
 */
export function shedGuard(
  options: ShedOptions<IncomingMessage> = {},
): (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => void {
  return guardOf(shedGate<IncomingMessage>(options));
}
