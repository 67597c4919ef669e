// settle, skipFailedRequests / skipSuccessfulRequests and concurrent slots through real HTTP servers
// (Express, Fastify, Koa, Hono) on a real Redis: a streamed response, aborted clients (AbortController), a
// handler that throws, and express-rate-limit's refund-on-close bug.
import type { IncomingMessage } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { createAdaptorServer } from '@hono/node-server';
import { createLimiter, type Limiter, type LimiterEvent, redisStore } from '@sluice/core';
import { rateLimit as expressRateLimit } from '@sluice/express';
import fastifyRateLimit from '@sluice/fastify';
import { rateLimit as honoRateLimit } from '@sluice/hono';
import { rateLimit as koaRateLimit } from '@sluice/koa';
import express from 'express';
import Fastify from 'fastify';
import { type Context, Hono } from 'hono';
import { stream } from 'hono/streaming';
import type Redis from 'ioredis';
import Koa from 'koa';
import { sleep, type startRedis, uniquePrefix } from './support/redis';
import { startRedisWithClient, stopRedisWithClient } from './support/redis-client';
import { until } from './support/until';

type Name = 'express' | 'fastify' | 'koa' | 'hono';
type Options = Record<string, unknown>;

// The adapters count the client 'client' in the scope 'api'.
const COUNTER = { scope: 'api' };
/** Tokens each streamed chunk "used", by raw request: what a settle function reads. */
const used = new WeakMap<IncomingMessage, number>();
let gate: Promise<void> = Promise.resolve();
let openGate: () => void = () => {};
let entered: Array<() => void> = [];

function closeGate(): void {
  gate = new Promise((resolve) => {
    openGate = resolve;
  });
}

/** Resolves once `n` requests are inside the /wait handler. */
function inside(n: number): Promise<void> {
  return new Promise((resolve) => {
    let seen = 0;
    entered.push(() => {
      if (++seen === n) resolve();
    });
  });
}

async function* chunks(req: IncomingMessage): AsyncGenerator<string> {
  for (let i = 1; i <= 5; i++) {
    await sleep(5);
    used.set(req, 7 * i);
    yield `chunk ${i}\n`;
  }
}

function boom(): Error {
  return Object.assign(new Error('handler failed'), { status: 500, statusCode: 500, expose: false });
}

/** The raw request and the status, from each framework's settle arguments. */
const rawOf: Record<Name, (a: never) => IncomingMessage> = {
  express: (req: express.Request) => req,
  fastify: (request: { raw: IncomingMessage }) => request.raw,
  koa: (ctx: Koa.Context) => ctx.req,
  hono: (c: Context<{ Bindings: { incoming: IncomingMessage } }>) => c.env.incoming,
};
const statusOf: Record<Name, (a: never, b: never) => number> = {
  express: (_req: unknown, res: express.Response) => res.statusCode,
  fastify: (_request: unknown, reply: { statusCode: number }) => reply.statusCode,
  koa: (ctx: Koa.Context) => ctx.status,
  hono: (c: Context) => c.res.status,
};

interface Running {
  url: string;
  close(): Promise<void>;
}

async function serve(name: Name, options: Options): Promise<Running> {
  const wait = async () => {
    for (const f of entered) f();
    await gate;
  };
  if (name === 'express') {
    const app = express();
    app.use(expressRateLimit(options as never));
    app.get('/ok', (_req, res) => res.json({ ok: true }));
    app.get('/404', (_req, res) => res.status(404).json({ ok: false }));
    app.get('/throw', () => {
      throw boom();
    });
    app.get('/wait', async (_req, res) => {
      await wait();
      res.json({ ok: true });
    });
    app.get('/stream', (req, res) => {
      res.type('text/plain');
      Readable.from(chunks(req)).pipe(res);
    });
    const server = createServer(app);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      close: () =>
        new Promise((r) => {
          server.close(() => r());
          server.closeAllConnections();
        }),
    };
  }
  if (name === 'fastify') {
    const app = Fastify({ forceCloseConnections: true });
    await app.register(fastifyRateLimit, options as never);
    app.get('/ok', async () => ({ ok: true }));
    app.get('/404', async (_request, reply) => reply.code(404).send({ ok: false }));
    app.get('/throw', async () => {
      throw boom();
    });
    app.get('/wait', async () => {
      await wait();
      return { ok: true };
    });
    app.get('/stream', async (request, reply) => reply.type('text/plain').send(Readable.from(chunks(request.raw))));
    await app.listen({ port: 0, host: '127.0.0.1' });
    return { url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, close: () => app.close() };
  }
  if (name === 'hono') {
    const app = new Hono<{ Bindings: { incoming: IncomingMessage } }>();
    app.onError((_error, c) => c.json({ ok: false }, 500));
    app.use(honoRateLimit(options as never));
    app.get('/ok', (c) => c.json({ ok: true }));
    app.get('/404', (c) => c.json({ ok: false }, 404));
    app.get('/throw', () => {
      throw boom();
    });
    app.get('/wait', async (c) => {
      await wait();
      return c.json({ ok: true });
    });
    app.get('/stream', (c) => {
      c.header('Content-Type', 'text/plain');
      return stream(c, async (s) => {
        for await (const chunk of chunks(c.env.incoming)) await s.write(chunk);
      });
    });
    const server = createAdaptorServer({ fetch: app.fetch });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      close: () =>
        new Promise((r) => {
          server.close(() => r());
          (server as ReturnType<typeof createServer>).closeAllConnections();
        }),
    };
  }
  const app = new Koa();
  app.silent = true;
  app.use(koaRateLimit(options as never));
  app.use(async (ctx) => {
    if (ctx.path === '/ok') ctx.body = { ok: true };
    else if (ctx.path === '/404') {
      ctx.status = 404;
      ctx.body = { ok: false };
    } else if (ctx.path === '/throw') throw boom();
    else if (ctx.path === '/wait') {
      await wait();
      ctx.body = { ok: true };
    } else if (ctx.path === '/stream') {
      ctx.type = 'text/plain';
      ctx.body = Readable.from(chunks(ctx.req));
    }
  });
  const server = createServer(app.callback());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

let server: Awaited<ReturnType<typeof startRedis>>;
let client: Redis;
beforeAll(async () => {
  ({ server, client } = await startRedisWithClient());
});
afterAll(() => stopRedisWithClient({ server, client }));

describe.each<Name>(['express', 'fastify', 'koa', 'hono'])('%s: settle, refunds and slots after the response', (name) => {
  let app: Running | undefined;
  let limiter: Limiter;
  let events: LimiterEvent[];
  const start = async (policy: unknown, options: Options) => {
    events = [];
    limiter = createLimiter({
      policy: policy as never,
      store: redisStore({ client }),
      prefix: uniquePrefix(),
      timeout: 5000,
      onEvent: (e) => events.push(e),
    });
    app = await serve(name, { limiter, scope: 'api', key: () => 'client', ...options });
  };
  const get = (path: string, init?: RequestInit) => fetch(`${app!.url}${path}`, init);
  const remaining = (i = 0) => limiter.peek('client', COUNTER).then((d) => d.policies[i]!.remaining);
  beforeEach(() => {
    closeGate();
    entered = [];
  });
  afterEach(async () => {
    openGate();
    await app?.close();
    app = undefined;
  });

  it('settle on a streamed response charges what the stream used, once, after it ended', async () => {
    const seen: number[] = [];
    await start(
      { limit: 100, window: '1h' },
      {
        cost: 10,
        settle: (req: never) => {
          const n = used.get(rawOf[name](req)) ?? 0;
          seen.push(n);
          return n;
        },
      },
    );
    const res = await get('/stream');
    expect(await res.text()).toBe('chunk 1\nchunk 2\nchunk 3\nchunk 4\nchunk 5\n');
    await until(remaining, 65);
    expect(seen).toEqual([35]);
  });

  it('skipFailedRequests: failed and aborted requests are refunded, successful ones never (regression: express-rate-limit refunded on close, which always fires)', async () => {
    await start({ limit: 10, window: '1h' }, { skipFailedRequests: true });
    for (const path of ['/ok', '/ok', '/ok', '/throw', '/404']) await (await get(path)).text();
    await until(remaining, 7);
    // An aborted request is refunded as soon as the client is gone, while its handler still waits.
    const abort = new AbortController();
    const there = inside(1);
    const pending = get('/wait', { signal: abort.signal }).catch((e: Error) => e.name);
    await there;
    expect(await remaining()).toBe(6);
    abort.abort();
    expect(await pending).toBe('AbortError');
    await until(remaining, 7);
    openGate();
    // Nothing more comes: 'close' after 'finish' refunds nothing, and no request is refunded twice.
    await sleep(300);
    expect(await remaining()).toBe(7);
    expect(events.filter((e) => e.type === 'settle-error')).toEqual([]);
  });

  it('skipSuccessfulRequests with requestWasSuccessful: what it calls a success is refunded', async () => {
    await start(
      { limit: 10, window: '1h' },
      { skipSuccessfulRequests: true, requestWasSuccessful: (a: never, b: never) => statusOf[name](a, b) < 500 },
    );
    for (const path of ['/ok', '/404', '/throw', '/ok']) await (await get(path)).text();
    await until(remaining, 9);
    await sleep(200);
    expect(await remaining()).toBe(9);
  });

  it('an error in settle is a settle-error event; the response and the charge are untouched', async () => {
    let calls = 0;
    await start(
      { limit: 10, window: '1h' },
      {
        settle: async () => {
          calls++;
          if (calls === 1) throw new Error('billing lookup failed');
          return -1;
        },
      },
    );
    const first = await get('/ok');
    expect([first.status, await first.json()]).toEqual([200, { ok: true }]);
    const second = await get('/ok');
    expect(second.status).toBe(200);
    await second.text();
    await until(() => events.filter((e) => e.type === 'settle-error').length, 2);
    const [a, b] = events.filter((e) => e.type === 'settle-error');
    expect([a!.key, a!.error?.message]).toEqual(['client', 'billing lookup failed']);
    expect(b!.error?.message).toMatch(/settle\(req, res\) must return a finite number >= 0 or undefined, got -1/);
    expect(await remaining()).toBe(8);
  });

  it('concurrent: a slot is held until the response finishes, and given back on abort and on a thrown handler', async () => {
    await start(['100/1h', { concurrent: 2 }], {});
    const free = () => remaining(1);
    const abort = new AbortController();
    const there = inside(2);
    const kept = get('/wait');
    const dropped = get('/wait', { signal: abort.signal }).catch((e: Error) => e.name);
    await there;
    expect(await free()).toBe(0);
    const limited = await get('/ok');
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('1');
    expect(limited.headers.get('ratelimit-policy')).toBe('"100-per-3600s";q=100;w=3600, "2-in-flight";q=2');
    expect(limited.headers.get('ratelimit')).toMatch(/"2-in-flight";r=0;t=1$/);
    await limited.text();
    abort.abort();
    expect(await dropped).toBe('AbortError');
    await until(free, 1);
    const thrown = await get('/throw');
    expect(thrown.status).toBe(500);
    await thrown.text();
    await until(free, 1);
    openGate();
    expect((await kept).status).toBe(200);
    await until(free, 2);
    // Nothing is released twice: two more in flight fill the two slots again.
    closeGate();
    const again = inside(2);
    const both = [get('/wait'), get('/wait')];
    await again;
    expect(await free()).toBe(0);
    openGate();
    await Promise.all(both.map(async (r) => (await r).text()));
    await until(free, 2);
  });
});
