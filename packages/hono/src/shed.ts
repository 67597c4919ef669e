// shed(): the kit's load shedding as Hono middleware; shedGuard(), the same on node:http in front of @hono/node-server.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { shedGuard as guardOf, type ShedOptions, shedGate } from '@sluice/core/adapter';
import type { Context, MiddlewareHandler } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { responseEnd } from './client.js';

/** Options of shed(): createShedder's (or a `shedder` to share) and `priority(c)`. */
export type HonoShedOptions = ShedOptions<Context>;

/**
 * Hono middleware that sheds load: a request that gets no slot of the adaptive concurrency limit (after
 * waiting up to `maxWait`, default 0) answers 503 with Retry-After and problem+json; a slot is held until
 * the response went out (under @hono/node-server, a stream's last chunk included). Bad options throw here.
 * Under heavy overload, mount shedGuard() in front of the app instead (docs/shedding.md).
 * @example app.use(shed({ priority: (c) => (c.req.path.startsWith('/checkout') ? 'critical' : 'normal') }))
 */
export function shed(options: HonoShedOptions = {}): MiddlewareHandler {
  const gate = shedGate<Context>(options);
  const { status, headers, contentType, body } = gate.response;
  return async function sluiceShed(c, next) {
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
  };
}

/**
 * shed() in front of the app, on node:http's request and response (@hono/node-server's getRequestListener): a
 * shed request then costs node:http's parsing and the 503 only (docs/shedding.md). `priority(req)` gets Node's
 * IncomingMessage (`.headers`, `.url`; not `c.req`); `next(error)` when it threw. Given the `shedder` of a
 * shed() in the app too, one request takes one slot. Bad options throw here.
 * @example
 * const guard = shedGuard({ priority: (req) => (req.url?.startsWith('/checkout') ? 'critical' : 'normal') });
 * const listener = getRequestListener(app.fetch);
 * http.createServer((req, res) => guard(req, res, (error) => (error ? res.writeHead(500).end() : listener(req, res)))).listen(3000);
 */
export function shedGuard(
  options: ShedOptions<IncomingMessage> = {},
): (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => void {
  return guardOf(shedGate<IncomingMessage>(options));
}
