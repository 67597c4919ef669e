// One contender of the HTTP benchmark (bench/http.mjs), in its own process: a framework app (NestJS on
// platform-express or platform-fastify too) with one
// route, GET / -> {"hello":"world"} (handler 'json') or the text 'ok' (handler 'text'), behind one rate limiter (or none: 'bare'). Every limiter keys on the
// x-client-id header with its own key option, allows LIMIT per WINDOW_MS (high enough never to deny
// in a run), and talks to Redis through an ioredis client made with the same REDIS_OPTIONS.
// Usage (forked by bench/http.mjs): node server.mjs <framework> <contender> [redisPort] [json|text]
// sluice-redis-settle: cost 2 settled to 1 after each response (one refund, an adjust script call, per
// request); sluice-redis-skip-failed: skipFailedRequests (every response succeeds: the cost of watching).
// Sends { port } over IPC once it listens on 127.0.0.1 and its Redis client is ready; exits with its parent.
// Answers 'cpu' with its process.cpuUsage(), 'events' with sluice's event counts since the last 'events'.
import Redis from 'ioredis';

export const LIMIT = 1000;
export const WINDOW_MS = 3_600_000;
const HEADER = 'x-client-id';
// The same client settings for every contender: @fastify/rate-limit's recommended ones.
const REDIS_OPTIONS = { host: '127.0.0.1', maxRetriesPerRequest: 1, connectTimeout: 500 };
const BODY = { hello: 'world' };
const policy = { limit: LIMIT, window: WINDOW_MS };

const [framework, contender, redisPort, handler = 'json'] = process.argv.slice(2);
if (handler !== 'json' && handler !== 'text') throw new Error(`unknown handler ${handler} (json, text)`);
const TEXT = handler === 'text';

async function redisClient() {
  const client = new Redis({ ...REDIS_OPTIONS, port: Number(redisPort) });
  await new Promise((resolve, reject) => {
    client.once('ready', resolve);
    client.once('error', reject);
  });
  return client;
}

// sluice answers a store error or timeout by its fail mode instead of failing the request: count those
// answers (and denials), so that the parent can tell a run decided by Redis from one decided locally.
const events = {};
async function sluiceOptions(key) {
  const { memoryStore, redisStore } = await import('@sluice/core');
  const store = contender !== 'sluice-memory' ? redisStore({ client: await redisClient() }) : memoryStore();
  const onEvent = (event) => {
    events[event.type] = (events[event.type] ?? 0) + 1;
  };
  const extra =
    contender === 'sluice-redis-settle'
      ? { cost: 2, settle: () => 1 }
      : contender === 'sluice-redis-skip-failed'
        ? { skipFailedRequests: true }
        : {};
  const prefix = process.env.SLUICE_BENCH_PREFIX ? { prefix: process.env.SLUICE_BENCH_PREFIX } : {};
  return { policy, store, key, onEvent, ...prefix, ...extra };
}

async function express() {
  const { default: createApp } = await import('express');
  const app = createApp();
  app.set('etag', false);
  app.disable('x-powered-by');
  const key = (req) => req.headers[HEADER];
  if (contender.startsWith('sluice-')) {
    const { rateLimit } = await import('@sluice/express');
    app.use(rateLimit(await sluiceOptions(key)));
  } else if (contender === 'express-rate-limit') {
    const { rateLimit } = await import('express-rate-limit');
    const { RedisStore } = await import('rate-limit-redis');
    const client = await redisClient();
    const store = new RedisStore({ sendCommand: (...args) => client.call(...args) });
    app.use(rateLimit({ windowMs: WINDOW_MS, limit: LIMIT, keyGenerator: key, store }));
  } else if (contender === 'rate-limiter-flexible') {
    const { RateLimiterRedis } = await import('rate-limiter-flexible');
    const limiter = new RateLimiterRedis({ storeClient: await redisClient(), points: LIMIT, duration: WINDOW_MS / 1000 });
    // The middleware of rate-limiter-flexible's Express guide.
    app.use((req, res, next) => {
      limiter.consume(key(req)).then(
        () => next(),
        () => res.status(429).send('Too Many Requests'),
      );
    });
  } else if (contender !== 'bare') throw new Error(`unknown express contender ${contender}`);
  app.get('/', TEXT ? (_req, res) => res.send('ok') : (_req, res) => res.json(BODY));
  return new Promise((resolve) => {
    const server = app.listen(0, '127.0.0.1', () => resolve(server.address().port));
  });
}

async function fastify() {
  const { default: Fastify } = await import('fastify');
  const app = Fastify({ logger: false });
  const key = (request) => request.headers[HEADER];
  if (contender.startsWith('sluice-')) {
    const { rateLimit } = await import('@sluice/fastify');
    await app.register(rateLimit, await sluiceOptions(key));
  } else if (contender === '@fastify/rate-limit') {
    const { default: fastifyRateLimit } = await import('@fastify/rate-limit');
    await app.register(fastifyRateLimit, { max: LIMIT, timeWindow: WINDOW_MS, redis: await redisClient(), keyGenerator: key });
  } else if (contender !== 'bare') throw new Error(`unknown fastify contender ${contender}`);
  app.get('/', TEXT ? async () => 'ok' : async () => BODY);
  await app.listen({ port: 0, host: '127.0.0.1' });
  return app.server.address().port;
}

async function koa() {
  const { default: Koa } = await import('koa');
  const { default: Router } = await import('@koa/router');
  const app = new Koa();
  const key = (ctx) => ctx.get(HEADER);
  if (contender.startsWith('sluice-')) {
    const { rateLimit } = await import('@sluice/koa');
    app.use(rateLimit(await sluiceOptions(key)));
  } else if (contender === 'koa-ratelimit') {
    const { default: ratelimit } = await import('koa-ratelimit');
    app.use(ratelimit({ driver: 'redis', db: await redisClient(), duration: WINDOW_MS, max: LIMIT, id: key }));
  } else if (contender !== 'bare') throw new Error(`unknown koa contender ${contender}`);
  const router = new Router();
  router.get('/', (ctx) => {
    ctx.body = TEXT ? 'ok' : BODY;
  });
  app.use(router.routes());
  return new Promise((resolve) => {
    const server = app.listen(0, '127.0.0.1', () => resolve(server.address().port));
  });
}

async function hono() {
  const { Hono } = await import('hono');
  const { serve } = await import('@hono/node-server');
  const app = new Hono();
  const key = (c) => c.req.header(HEADER);
  if (contender.startsWith('sluice-')) {
    const { rateLimit } = await import('@sluice/hono');
    app.use(rateLimit(await sluiceOptions(key)));
  } else if (contender === 'hono-rate-limiter') {
    const { rateLimiter } = await import('hono-rate-limiter');
    const { RedisStore } = await import('@hono-rate-limiter/redis');
    const redis = await redisClient();
    // @hono-rate-limiter/redis speaks to an @upstash/redis-shaped client: ioredis's commands under those names.
    const client = {
      scriptLoad: (script) => redis.script('LOAD', script),
      evalsha: (sha, keys, args) => redis.evalsha(sha, keys.length, ...keys, ...args),
      decr: (k) => redis.decr(k),
      del: (k) => redis.del(k),
    };
    app.use(rateLimiter({ windowMs: WINDOW_MS, limit: LIMIT, keyGenerator: key, store: new RedisStore({ client }) }));
  } else if (contender !== 'bare') throw new Error(`unknown hono contender ${contender}`);
  app.get('/', TEXT ? (c) => c.text('ok') : (c) => c.json(BODY));
  return new Promise((resolve) => {
    serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => resolve(info.port));
  });
}

// NestJS on either platform: a controller with GET / (its decorators applied by hand: this file is plain
// JavaScript), behind SluiceModule's global guard, or @nestjs/throttler's (its guard global, on Redis by
// @nest-lab/throttler-storage-redis, or by sluiceThrottlerStorage: 'sluice-throttler-storage').
async function nest(platform) {
  await import('reflect-metadata');
  const { Controller, Get, Module } = await import('@nestjs/common');
  const { APP_GUARD, NestFactory } = await import('@nestjs/core');
  class Hello {
    get() {
      return TEXT ? 'ok' : BODY;
    }
  }
  Controller()(Hello);
  Get()(Hello.prototype, 'get', Object.getOwnPropertyDescriptor(Hello.prototype, 'get'));
  const imports = [];
  const providers = [];
  if (contender.startsWith('sluice-') && contender !== 'sluice-throttler-storage') {
    const { SluiceModule } = await import('@sluice/nestjs');
    imports.push(SluiceModule.forRoot(await sluiceOptions((ctx) => ctx.switchToHttp().getRequest().headers[HEADER])));
  } else if (contender === '@nestjs/throttler' || contender === 'sluice-throttler-storage') {
    const { ThrottlerGuard, ThrottlerModule } = await import('@nestjs/throttler');
    let storage;
    if (contender === '@nestjs/throttler') {
      const { ThrottlerStorageRedisService } = await import('@nest-lab/throttler-storage-redis');
      storage = new ThrottlerStorageRedisService(await redisClient());
    } else {
      const { redisStore } = await import('@sluice/core');
      const { sluiceThrottlerStorage } = await import('@sluice/nestjs');
      storage = sluiceThrottlerStorage({ store: redisStore({ client: await redisClient() }) });
    }
    const getTracker = (req) => req.headers[HEADER];
    imports.push(ThrottlerModule.forRoot({ throttlers: [{ ttl: WINDOW_MS, limit: LIMIT }], storage, getTracker }));
    providers.push({ provide: APP_GUARD, useClass: ThrottlerGuard });
  } else if (contender !== 'bare') throw new Error(`unknown nestjs contender ${contender}`);
  class App {}
  Module({ imports, controllers: [Hello], providers })(App);
  const { ExpressAdapter } = platform === 'express' ? await import('@nestjs/platform-express') : {};
  const { FastifyAdapter } = platform === 'fastify' ? await import('@nestjs/platform-fastify') : {};
  const adapter = platform === 'express' ? new ExpressAdapter() : new FastifyAdapter();
  const app = await NestFactory.create(App, adapter, { logger: false });
  await app.listen(0, '127.0.0.1');
  return app.getHttpServer().address().port;
}

const start = { express, fastify, koa, hono, 'nestjs-express': () => nest('express'), 'nestjs-fastify': () => nest('fastify') }[framework];
if (start === undefined) throw new Error(`unknown framework ${framework}`);
// Nothing outlives the benchmark: when the parent goes, so does this process. SIGTERM exits normally,
// so that a --cpu-prof profile gets written.
process.on('disconnect', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0));
const port = await start();
process.on('message', (message) => {
  if (message === 'events') {
    // The counts since the last ask.
    process.send({ events: { ...events } });
    for (const type of Object.keys(events)) delete events[type];
  } else if (message === 'cpu') process.send({ cpu: process.cpuUsage() });
});
if (process.send) process.send({ port });
else console.log(`${framework} ${contender} listening on 127.0.0.1:${port}`);
