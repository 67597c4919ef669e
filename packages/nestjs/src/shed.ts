// shed(): the kit's load shedding as a Nest middleware, on Node's request and response, which both platforms hand
// their middleware (Express's req and res; on platform-fastify, @fastify/middie's request.raw and reply.raw).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type ShedOptions, shedGate, shedGuard } from '@sluice/core/adapter';

/**
 * Options of shed() and of SluiceModule.forRoot's `shed`: createShedder's (or a `shedder` to share) and
 * `priority(req)`, which takes the request the platform hands its middleware: Node's IncomingMessage (`req.url`,
 * `req.headers`, `req.method`; Express's Request on platform-express).
 */
export type NestShedOptions = ShedOptions<IncomingMessage>;

/** A Nest functional middleware, as app.use() and MiddlewareConsumer.apply() take it on either platform. */
export type ShedMiddleware = (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => void;

/**
 * A Nest middleware that sheds load: a request that gets no slot of the adaptive concurrency limit (after waiting
 * up to `maxWait`, default 0) answers 503 with Retry-After and problem+json; a slot is held until the response
 * finished or the client left. Middleware runs before guards: a shed request is never charged to a rate limit.
 * `priority(req)` that throws reaches Nest's error path (a 500) as ERR_SLUICE_PRIORITY. Bad options throw here.
 * SluiceModule.forRoot({ shed }) applies it to every route; shed() is for app.use() or a consumer's forRoutes.
 * @example app.use(shed({ priority: (req) => (req.url?.startsWith('/checkout') ? 'critical' : 'normal') }))
 */
export function shed(options: NestShedOptions = {}): ShedMiddleware {
  return shedGuard(shedGate<IncomingMessage>(options));
}
