// shed(): the kit's load shedding as Hono middleware, and as a guard for node:http in front of @hono/node-server.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type ShedOptions, shedGate, shedGuard } from '@sluice/core/adapter';
import type { Context, MiddlewareHandler, Next } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { responseEnd } from './client.js';

/** Options of shed(): createShedder's (or a `shedder` to share) and `priority(c)`. */
export type HonoShedOptions = ShedOptions<Context>;

/**
 * shed()'s middleware: a Hono middleware, and also a guard for node:http's request and response in front of
 * the app, `(req, res, next) => void`, which reads only what your `priority` reads and writes the 503 with
 * `res.writeHead`/`res.end`.
 */
export type HonoShed = MiddlewareHandler & ((req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => void);

/**
 * Hono middleware that sheds load: a request that gets no slot of the adaptive concurrency limit (after
 * waiting up to `maxWait`, default 0) answers 503 with Retry-After and problem+json; a slot is held until
 * the response went out (under @hono/node-server, a stream's last chunk included). Bad options throw here.
 * Under heavy overload, mount it in front of the app on node:http (@hono/node-server's getRequestListener):
 * a shed request then costs node:http's parsing and the 503 only (docs/shedding.md); `priority(c)` then gets
 * Node's IncomingMessage (`.headers`, `.url`; not `c.req`). Mounted both ways, one request takes one slot.
 * @example app.use(shed({ priority: (c) => (c.req.path.startsWith('/checkout') ? 'critical' : 'normal') }))
 * @example
 * const guard = shed({ priority: (req) => (req.url.startsWith('/checkout') ? 'critical' : 'normal') });
 * const listener = getRequestListener(app.fetch);
 * http.createServer((req, res) => guard(req, res, (error) => (error ? res.writeHead(500).end() : listener(req, res)))).listen(3000);
 */
export function shed(options: HonoShedOptions = {}): HonoShed {
  const gate = shedGate<Context>(options);
  const guard = shedGuard(gate);
  const { status, headers, contentType, body } = gate.response;
  async function inApp(c: Context, next: Next) {
    const end = responseEnd(c);
    if (!(await gate.admit(c, end.raw))) {
      for (const [name, value] of Object.entries({ ...headers, 'Content-Type': contentType })) c.header(name, value);
      return c.body(body, status as ContentfulStatusCode);
    }
    try {
      await next();
    } finally {
      end.end();
    }
  }
  // Hono calls a middleware with (c, next); node:http's guard is called with (req, res, next).
  return function sluiceShed(cOrReq: Context, nextOrRes: Next | ServerResponse, next?: () => void) {
    if (typeof nextOrRes === 'function') return inApp(cOrReq, nextOrRes);
    guard(cOrReq, nextOrRes, next as () => void);
  } as unknown as HonoShed; // in front of the app, `priority` gets the IncomingMessage its type calls a Context
}
