// What Hono does not hand over as Express and Koa do: the client's address (a runtime's getConnInfo), the route
// that matched, and the end of the response (Node's ServerResponse under @hono/node-server; elsewhere, the app's answer).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { getConnInfo } from '@hono/node-server/conninfo';
import { SluiceError } from '@sluice/core';
import type { Context } from 'hono';
import type { ConnInfo } from 'hono/conninfo';
import { matchedRoutes } from 'hono/route';
import type { RouterRoute } from 'hono/types';

/** @hono/node-server's bindings: c.env.outgoing is the request's ServerResponse (absent on a WebSocket upgrade). */
type NodeBindings = { incoming?: IncomingMessage; outgoing?: ServerResponse } | undefined;

/**
 * Where the client's address comes from, as hono/ip-restriction takes it: a runtime's `getConnInfo`, or a
 * function that returns the address.
 */
export type GetIP = (c: Context) => ConnInfo | string | undefined;

/**
 * The client's address of a request, by `getIP` or @hono/node-server's getConnInfo; undefined when it is
 * unknown (no Node socket: `app.request()` without one, another runtime), which the default key refuses.
 */
export function clientAddress(getIP: GetIP | undefined): (c: Context) => string | undefined {
  if (getIP === undefined) {
    // Not served by @hono/node-server (no c.env.incoming, where getConnInfo looks): unknown, without its throw.
    return (c) => {
      const env = c.env as (NodeBindings & { server?: NodeBindings }) | undefined;
      return (env?.server ?? env)?.incoming?.socket === undefined ? undefined : getConnInfo(c).remote.address;
    };
  }
  return (c) => {
    let info: ReturnType<GetIP>;
    try {
      info = getIP(c);
    } catch (error) {
      throw new SluiceError('ERR_SLUICE_KEY', `getIP(c) threw${error instanceof Error ? `: ${error.message}` : ''}`, { cause: error });
    }
    return typeof info === 'string' ? info : info?.remote?.address;
  };
}

/**
 * The route whose handler runs now (a middleware's own registration for app.use). The request's own getter
 * first (deprecated since Hono 4.8, read on 4.13): hono/route's helper reads it by a symbol of its copy of
 * hono, which is not the app's when the app loads the other build (CommonJS hono under an ES module app).
 */
export function routeOf(c: Context): RouterRoute | undefined {
  const req = c.req as { matchedRoutes?: RouterRoute[] };
  return ('matchedRoutes' in req ? (req.matchedRoutes as RouterRoute[]) : matchedRoutes(c))[c.req.routeIndex];
}

/** What the kit reads of a response's end: Node's ServerResponse, or its stand-in here. */
export interface RawEnd {
  readonly statusCode: number;
  readonly writableFinished: boolean;
  readonly destroyed: boolean;
  once(event: 'close' | 'finish', listener: () => void): unknown;
}

/**
 * The response's end, as the kit reads it. Under @hono/node-server, its ServerResponse (c.env.outgoing),
 * which closes once the body went out, a stream's last chunk included, or the client left. Elsewhere
 * (another runtime, `app.request()`), one that finishes once the app answered: call `end()` after `next()`.
 */
export function responseEnd(c: Context): { raw: RawEnd; node: boolean; end(): void } {
  const outgoing = (c.env as NodeBindings)?.outgoing;
  if (outgoing !== undefined && typeof outgoing.once === 'function') return { raw: outgoing, node: true, end() {} };
  let ended = false;
  const listeners: Array<[string, () => void]> = [];
  const raw: RawEnd = {
    get statusCode() {
      return c.res.status;
    },
    get writableFinished() {
      return ended;
    },
    get destroyed() {
      return ended;
    },
    once(event, listener) {
      listeners.push([event, listener]);
      return raw;
    },
  };
  return {
    raw,
    node: false,
    end() {
      if (ended) return;
      ended = true;
      for (const event of ['finish', 'close']) for (const [e, listener] of listeners) if (e === event) listener();
    },
  };
}
