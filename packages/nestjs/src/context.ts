// What the guard reads of an ExecutionContext, for each kind Nest hands it: an HTTP request on
// platform-express or platform-fastify, a GraphQL resolver's (the request found in its context), or a
// WebSocket message (the client's connection). Nothing here imports a platform, @nestjs/graphql or
// @nestjs/websockets: each is read by shape.
import type { ExecutionContext } from '@nestjs/common';
import { type ForwardedCheck, routeScope } from '@sluice/core/adapter';

/** What the kit reads of a response's end: Node's ServerResponse (Express's res, Fastify's reply.raw). */
export interface RawEnd {
  readonly statusCode: number;
  readonly writableFinished: boolean;
  readonly destroyed: boolean;
  once(event: 'close', listener: () => void): unknown;
}

/** The parts of one context the guard uses; each absent where the context has none (a subscription, a message). */
export interface Target {
  /** The HTTP request: `request.rateLimit` is set on it. */
  req: Record<string, unknown> | undefined;
  /** Sets a header on the response. */
  header: ((name: string, value: string) => void) | undefined;
  /** The response's end, for settle and concurrent slots. */
  raw: RawEnd | undefined;
  /** The client's address. */
  ip: () => string | undefined;
  /** The counter of a handler with a limit of its own: 'GET /items', 'Query items', 'WS events'. */
  scope: () => string;
  /** A WebSocket client, when the context is a message. */
  client?: Record<string, unknown>;
}

type Bag = Record<string, unknown> & {
  ip?: string;
  method?: string;
  headers?: Record<string, unknown>;
  socket?: { remoteAddress?: string };
};
type Res = Bag & { raw?: RawEnd; header?: (n: string, v: string) => unknown; setHeader?: (n: string, v: string) => unknown };

const headerOf =
  (res: Res | undefined): Target['header'] =>
  (name, value) => {
    // Fastify's reply.header; Express's res.setHeader (Node's, and what Express's res.set ends in).
    if (typeof res?.setHeader === 'function') res.setHeader(name, value);
    else if (typeof res?.header === 'function') res.header(name, value);
  };

/** The route pattern of an HTTP request: Express's req.route (under its baseUrl), Fastify's routeOptions.url. */
function httpScope(req: Bag): string {
  const route = req.route as { path?: unknown } | undefined;
  if (typeof route?.path === 'string') return routeScope(req.method, `${String(req.baseUrl ?? '')}${route.path}`);
  const url = (req.routeOptions as { url?: unknown } | undefined)?.url;
  return routeScope(req.method, typeof url === 'string' ? url : String(req.url ?? ''));
}

function http(req: Bag, res: Res): Target {
  const raw = (res.raw ?? res) as RawEnd;
  return {
    req,
    header: headerOf(res),
    raw: typeof raw.once === 'function' ? raw : undefined,
    ip: () => req.ip ?? req.socket?.remoteAddress,
    scope: () => httpScope(req),
  };
}

/** The upgrade request of a graphql-ws context (`extra.request`). */
const upgradeOf = (b: unknown): unknown => ((Object(b) as Bag).extra as Bag | undefined)?.request;

/**
 * A resolver's request, from the GraphQL context: Apollo's `req` (its driver sets it), Mercurius's `reply.request`;
 * a subscription over graphql-ws has only its upgrade request (`extra.request`, under `req` on Apollo's driver).
 */
function graphql(ctx: ExecutionContext): Target {
  const gql = Object(ctx.getArgByIndex(2)) as Bag;
  const info = ctx.getArgByIndex(3) as { parentType?: { name?: string }; fieldName?: string } | undefined;
  const reply = gql.reply as Res | undefined;
  // The first that is an HTTP request (it has headers): Apollo's driver puts a subscription's whole context under `req`.
  const candidates = [gql.req, reply?.request, gql.request, upgradeOf(gql), upgradeOf(gql.req)];
  const req = candidates.find((c) => typeof (c as Bag | undefined)?.headers === 'object') as Bag | undefined;
  const res = (gql.res ?? reply ?? req?.res) as Res | undefined;
  const raw = (res?.raw ?? res) as RawEnd | undefined;
  return {
    req,
    header: res === undefined ? undefined : headerOf(res),
    raw: typeof raw?.once === 'function' ? raw : undefined,
    ip: () => req?.ip ?? req?.socket?.remoteAddress,
    scope: () => routeScope(info?.parentType?.name ?? 'GraphQL', info?.fieldName),
  };
}

/**
 * A WebSocket message's client: socket.io's socket (its handshake's address), or ws's WebSocket, whose
 * address Nest's WsAdapter does not keep: read from its `_socket` (a private field of ws, read on 8.21;
 * without it the default key refuses the message, and `key(ctx)` is the way).
 */
function ws(ctx: ExecutionContext): Target {
  const client = Object(ctx.switchToWs().getClient()) as Bag;
  const handshake = client.handshake as { address?: string } | undefined;
  const pattern = (ctx.switchToWs() as { getPattern?: () => string }).getPattern?.() ?? ctx.getHandler().name;
  return {
    req: undefined,
    header: undefined,
    raw: undefined,
    client,
    ip: () => handshake?.address ?? (client._socket as Bag['socket'] | undefined)?.remoteAddress,
    scope: () => routeScope('WS', pattern),
  };
}

/** The parts of `ctx` the guard uses. */
export function targetOf(ctx: ExecutionContext): Target {
  const type = ctx.getType<string>();
  if (type === 'graphql') return graphql(ctx);
  if (type === 'ws') return ws(ctx);
  const h = ctx.switchToHttp();
  return http(h.getRequest<Bag>(), h.getResponse<Res>());
}

/** Whether the HTTP request carries X-Forwarded-For and its platform trusts no proxy (Express's 'trust proxy', Fastify's trustProxy). */
function untrusted(ctx: ExecutionContext): boolean {
  if (ctx.getType() !== 'http') return false;
  const req = ctx.switchToHttp().getRequest<Bag>();
  if (req.headers?.['x-forwarded-for'] === undefined) return false;
  const app = req.app as { get?: (name: string) => unknown } | undefined;
  if (typeof app?.get === 'function') return !app.get('trust proxy');
  return !(req.server as { initialConfig?: { trustProxy?: unknown } } | undefined)?.initialConfig?.trustProxy;
}

/** The X-Forwarded-For warning's check and fix, in Nest's words for each platform. */
export const FORWARDED: ForwardedCheck<ExecutionContext> = {
  untrusted,
  fix: "app.set('trust proxy', 1) on platform-express, new FastifyAdapter({ trustProxy: 1 }) on platform-fastify",
  docs: 'https://github.com/sluice-js/sluice/blob/main/docs/nestjs.md#behind-a-proxy',
};
