// One harness per framework with the same shape, so a contract suite can run against Express, Fastify and Koa
// (describe.each), plus a parser for the draft-10 RateLimit / RateLimit-Policy structured-field lists. Each app
// listens on 127.0.0.1, port 0, and is driven through supertest, as users of the three frameworks test their
// own apps; its URL is there too, for a client outside this process (a CLI, a child process).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import { getConnInfo } from '@hono/node-server/conninfo';
import Router from '@koa/router';
import { rateLimit as expressRateLimit } from '@sluice/express';
import fastifyRateLimit from '@sluice/fastify';
import { rateLimit as honoRateLimit } from '@sluice/hono';
import { rateLimit as koaRateLimit } from '@sluice/koa';
import express from 'express';
import Fastify from 'fastify';
import { type Context, Hono } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import Koa from 'koa';
import request from 'supertest';

export type FrameworkName = 'express' | 'fastify' | 'koa' | 'hono';

/**
 * Adapter options, loosely typed here on purpose: the suite passes the same object to all three adapters
 * (framework-shaped callbacks are picked per framework by the tests). Strict typing is test/types' job.
 */
export type Options = Record<string, unknown>;

export interface RouteSpec {
  method: 'GET' | 'POST';
  path: string;
  /**
   * Route-level options: `router.post(path, rateLimit(opts), h)` (Express, @koa/router) or
   * `config: { rateLimit: opts }` (Fastify). `false` means Fastify's `config.rateLimit: false`.
   */
  options?: Options | false;
  /** Instead of answering 200, the handler throws an Error with this status. */
  throws?: number;
}

export interface StartOptions {
  /** App-level options: `app.use(rateLimit(app))` (Express, Koa) or `app.register(rateLimit, app)` (Fastify). */
  app?: Options;
  routes: RouteSpec[];
  /**
   * express `app.set('trust proxy', true)`, fastify `{ trustProxy: true }`, koa `app.proxy = true`; hono (which
   * trusts no proxy) `getIP` reading the first X-Forwarded-For address.
   */
  trustProxy?: boolean;
  /** Fastify only: `app.setErrorHandler(errorHandler)`. */
  errorHandler?: (error: unknown, request: unknown, reply: unknown) => unknown;
}

export interface Running {
  /** supertest on the app's server: `running.request.get('/r').set('x-user', 'ann')`. */
  request: ReturnType<typeof request>;
  /** `http://127.0.0.1:<port>`, for a client that is not in this process. */
  url: string;
  close(): Promise<void>;
}

export interface Harness {
  name: FrameworkName;
  /** Starts an app on 127.0.0.1, port 0. Rejects when the adapter rejects its options. */
  start(options: StartOptions): Promise<Running>;
  /** Creates the middleware (Express, Koa) or registers the plugin and readies an app (Fastify) with `options`. */
  create(options: Options): Promise<void>;
}

/** The body every handler answers with: the remaining count it read from the request's Decision. */
export interface HandlerBody {
  ok: true;
  path: string;
  remaining: number | null;
  policy: string | null;
}

interface DecisionLike {
  remaining: number;
  policy: string;
}

function body(path: string, decision: DecisionLike | undefined): HandlerBody {
  return { ok: true, path, remaining: decision?.remaining ?? null, policy: decision?.policy ?? null };
}

function boom(status: number): Error & { status: number; statusCode: number; expose: boolean } {
  return Object.assign(new Error(`handler failed with ${status}`), { status, statusCode: status, expose: true });
}

/** `server` listening on 127.0.0.1, given to supertest, which then sends to it and leaves closing to us. */
function listen(server: Server): Promise<Running> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        request: request(server),
        url: `http://127.0.0.1:${port}`,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}

const expressHarness: Harness = {
  name: 'express',
  async start({ app: appOptions, routes, trustProxy }) {
    const app = express();
    if (trustProxy) app.set('trust proxy', true);
    if (appOptions) app.use(expressRateLimit(appOptions as never));
    for (const route of routes) {
      const handler = (req: express.Request, res: express.Response) => {
        if (route.throws) throw boom(route.throws);
        res.json(body(route.path, (req as unknown as { rateLimit?: DecisionLike }).rateLimit));
      };
      const method = route.method === 'GET' ? 'get' : 'post';
      if (route.options) app[method](route.path, expressRateLimit(route.options as never), handler);
      else app[method](route.path, handler);
    }
    return listen(createServer(app));
  },
  async create(options) {
    expressRateLimit(options as never);
  },
};

const fastifyHarness: Harness = {
  name: 'fastify',
  async start({ app: appOptions, routes, trustProxy, errorHandler }) {
    const app = Fastify({ trustProxy: trustProxy ?? false, forceCloseConnections: true });
    if (errorHandler) app.setErrorHandler(errorHandler as never);
    // Route-level options need the plugin: without app-level options it only limits routes that ask (global: false).
    const withRouteOptions = routes.some((r) => r.options !== undefined);
    if (appOptions) await app.register(fastifyRateLimit, appOptions as never);
    else if (withRouteOptions) await app.register(fastifyRateLimit, { global: false } as never);
    for (const route of routes) {
      app.route({
        method: route.method,
        url: route.path,
        ...(route.options === undefined ? {} : { config: { rateLimit: route.options as never } }),
        handler: async (request) => {
          if (route.throws) throw boom(route.throws);
          return body(route.path, (request as unknown as { rateLimit?: DecisionLike }).rateLimit);
        },
      });
    }
    try {
      await app.listen({ port: 0, host: '127.0.0.1' });
    } catch (error) {
      await app.close().catch(() => {});
      throw error;
    }
    const { port } = app.server.address() as AddressInfo;
    return { request: request(app.server), url: `http://127.0.0.1:${port}`, close: () => app.close() };
  },
  async create(options) {
    const app = Fastify();
    try {
      await app.register(fastifyRateLimit, options as never);
      await app.ready();
    } finally {
      await app.close().catch(() => {});
    }
  },
};

const koaHarness: Harness = {
  name: 'koa',
  async start({ app: appOptions, routes, trustProxy }) {
    const app = new Koa();
    app.silent = true; // the downstream-error tests throw on purpose
    if (trustProxy) app.proxy = true;
    if (appOptions) app.use(koaRateLimit(appOptions as never));
    const router = new Router();
    for (const route of routes) {
      const handler = async (ctx: Koa.Context) => {
        if (route.throws) throw boom(route.throws);
        ctx.body = body(route.path, (ctx.state as { rateLimit?: DecisionLike }).rateLimit);
      };
      const method = route.method === 'GET' ? 'get' : 'post';
      if (route.options) router[method](route.path, koaRateLimit(route.options as never) as never, handler);
      else router[method](route.path, handler);
    }
    app.use(router.routes());
    app.use(router.allowedMethods());
    return listen(createServer(app.callback()));
  },
  async create(options) {
    koaRateLimit(options as never);
  },
};

/** Hono's stand-in for a trusted proxy: the first X-Forwarded-For address, as Express's `trust proxy` true reads it. */
const forwardedFor = (c: Context) => c.req.header('x-forwarded-for')?.split(',')[0]?.trim() ?? getConnInfo(c).remote.address;

const honoHarness: Harness = {
  name: 'hono',
  async start({ app: appOptions, routes, trustProxy }) {
    const app = new Hono();
    // The suite's functions read `req.headers` as Express, Fastify and Koa hand it over: a copy on the context.
    app.use(async (c, next) => {
      Object.assign(c, { headers: Object.fromEntries(c.req.raw.headers) });
      await next();
    });
    // c.body, not c.json: c.json walks its headers with for...in, which a polluted Object.prototype breaks (a test pollutes it).
    const json = (c: Context, value: unknown, status = 200) => {
      c.res.headers.set('Content-Type', 'application/json');
      return c.body(JSON.stringify(value), status as ContentfulStatusCode);
    };
    app.onError((error, c) => json(c, { error: error.message }, (error as { status?: number }).status ?? 500));
    const withProxy = (o: Options) => (trustProxy ? { getIP: forwardedFor, ...o } : o);
    if (appOptions) app.use(honoRateLimit(withProxy(appOptions) as never));
    for (const route of routes) {
      const handler = (c: Context) => {
        if (route.throws) throw boom(route.throws);
        return json(c, body(route.path, c.get('rateLimit' as never)));
      };
      const method = route.method === 'GET' ? 'get' : 'post';
      if (route.options) app[method](route.path, honoRateLimit(withProxy(route.options) as never), handler);
      else app[method](route.path, handler);
    }
    return listen(createAdaptorServer({ fetch: app.fetch }) as Server);
  },
  async create(options) {
    honoRateLimit(options as never);
  },
};

export const harnesses: Harness[] = [expressHarness, fastifyHarness, koaHarness, honoHarness];

// ---------------------------------------------------------------------------------------------------------------
// draft-ietf-httpapi-ratelimit-headers-10 fields are RFC 8941 structured-field lists:
//   RateLimit-Policy: "100-per-60s";q=100;w=60, "other";q=5;w=1
//   RateLimit: "100-per-60s";r=42;t=18
// A strict parser for the subset they use (and a little more): items are sf-strings, tokens, integers,
// decimals or booleans, each with parameters. Anything malformed throws, so a sloppy header fails a test.

export type BareItem = string | number | boolean | { token: string };

export interface ListMember {
  value: BareItem;
  params: Record<string, BareItem>;
}

export function parseSfList(input: string): ListMember[] {
  let i = 0;
  const s = input;
  const fail = (what: string): never => {
    throw new Error(`structured-field list: ${what} at ${i} in ${JSON.stringify(input)}`);
  };
  const skip = (chars: string) => {
    while (i < s.length && chars.includes(s[i]!)) i++;
  };
  const key = (): string => {
    const m = /^[a-z*][a-z0-9_\-.*]*/.exec(s.slice(i));
    if (!m) return fail('expected a key');
    i += m[0].length;
    return m[0];
  };
  const bare = (): BareItem => {
    const c = s[i];
    if (c === '"') {
      i++;
      let out = '';
      while (i < s.length) {
        const ch = s[i++]!;
        if (ch === '\\') {
          const next = s[i++];
          if (next !== '"' && next !== '\\') fail('bad escape in string');
          out += next;
        } else if (ch === '"') {
          return out;
        } else if (ch < ' ' || ch > '~') {
          fail('non-printable character in string');
        } else {
          out += ch;
        }
      }
      return fail('unterminated string');
    }
    if (c === '?') {
      i++;
      const b = s[i++];
      if (b === '1') return true;
      if (b === '0') return false;
      return fail('bad boolean');
    }
    const num = /^-?\d{1,15}(\.\d{1,3})?/.exec(s.slice(i));
    if (num) {
      i += num[0].length;
      return Number(num[0]);
    }
    const token = /^[A-Za-z*][!#$%&'*+\-.^_`|~0-9A-Za-z:/]*/.exec(s.slice(i));
    if (token) {
      i += token[0].length;
      return { token: token[0] };
    }
    return fail('expected an item');
  };
  const members: ListMember[] = [];
  skip(' ');
  if (i === s.length) return members;
  for (;;) {
    const value = bare();
    const params: Record<string, BareItem> = {};
    while (s[i] === ';') {
      i++;
      skip(' ');
      const k = key();
      if (s[i] === '=') {
        i++;
        params[k] = bare();
      } else {
        params[k] = true;
      }
    }
    members.push({ value, params });
    skip(' \t');
    if (i === s.length) return members;
    if (s[i] !== ',') fail("expected ','");
    i++;
    skip(' \t');
    if (i === s.length) fail('trailing comma');
  }
}

/** RateLimit-Policy members: `"name";q=<quota>;w=<window seconds>`. */
export interface PolicyField {
  name: string;
  q: number;
  w: number;
}

/** RateLimit members: `"name";r=<remaining>;t=<seconds>`. */
export interface LimitField {
  name: string;
  r: number;
  t: number;
}

function integerParam(m: ListMember, k: string): number {
  const v = m.params[k];
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new Error(`parameter ${k} is not an integer: ${JSON.stringify(v)}`);
  return v;
}

function stringValue(m: ListMember): string {
  if (typeof m.value !== 'string') throw new Error(`list member is not an sf-string: ${JSON.stringify(m.value)}`);
  return m.value;
}

/** `header` as supertest's `res.get()` (undefined when absent) or fetch's `headers.get()` (null) gives it. */
export function parseRateLimitPolicy(header: string | null | undefined): PolicyField[] {
  if (header === null || header === undefined) throw new Error('no RateLimit-Policy header');
  return parseSfList(header).map((m) => ({ name: stringValue(m), q: integerParam(m, 'q'), w: integerParam(m, 'w') }));
}

export function parseRateLimit(header: string | null | undefined): LimitField[] {
  if (header === null || header === undefined) throw new Error('no RateLimit header');
  return parseSfList(header).map((m) => ({ name: stringValue(m), r: integerParam(m, 'r'), t: integerParam(m, 't') }));
}
