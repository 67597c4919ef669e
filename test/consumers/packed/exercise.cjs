// What an app does with the installed tarballs, the same from ESM and CJS: esm.mjs and cjs.cjs load the
// five packages their own way and pass them in; the frameworks are the consumer project's own.
const { once } = require('node:events');
const http = require('node:http');

/** Two requests on a '1/1m' route: what a first-time user checks (200, then a 429 with the headers). */
async function twice(server) {
  await once(server.listen(0, '127.0.0.1'), 'listening');
  const url = `http://127.0.0.1:${server.address().port}/`;
  try {
    const statuses = [];
    let policy;
    for (let i = 0; i < 2; i++) {
      const res = await fetch(url);
      await res.text();
      statuses.push(res.status);
      policy = res.headers.get('ratelimit-policy');
    }
    return { statuses, policy };
  } finally {
    server.close();
  }
}

function viaExpress(rateLimit) {
  const app = require('express')();
  app.use(rateLimit({ policy: '1/1m' }));
  app.get('/', (_req, res) => res.send('ok'));
  return twice(http.createServer(app));
}

async function viaFastify(plugin) {
  const app = require('fastify')();
  await app.register(plugin, { policy: '1/1m' });
  app.get('/', async () => 'ok');
  await app.ready();
  return twice(app.server).finally(() => app.close());
}

function viaKoa(rateLimit) {
  const Koa = require('koa');
  const app = new Koa();
  app.use(rateLimit({ policy: '1/1m' }));
  app.use((ctx) => {
    ctx.body = 'ok';
  });
  return twice(http.createServer(app.callback()));
}

function viaHono(rateLimit) {
  const { Hono } = require('hono');
  const { createAdaptorServer } = require('@hono/node-server');
  const app = new Hono();
  app.use(rateLimit({ policy: '1/1m' }));
  app.get('/', (c) => c.text('ok'));
  return twice(createAdaptorServer({ fetch: app.fetch }));
}

/** A NestJS app on platform-express, its controller's decorators applied by hand (a plain CommonJS app has no decorator syntax). */
async function viaNest(nestjs) {
  require('reflect-metadata');
  const { Controller, Get, Module } = require('@nestjs/common');
  const { NestFactory } = require('@nestjs/core');
  class Hello {
    get() {
      return 'ok';
    }
  }
  Controller()(Hello);
  Get()(Hello.prototype, 'get', Object.getOwnPropertyDescriptor(Hello.prototype, 'get'));
  class App {}
  Module({ imports: [nestjs.SluiceModule.forRoot({ policy: '1/1m' })], controllers: [Hello] })(App);
  const app = await NestFactory.create(App, { logger: false });
  await app.init();
  try {
    return await twice(app.getHttpServer());
  } finally {
    await app.close();
  }
}

/** A real decision in Redis through the consumer's own ioredis (REDIS_URL is set for the projects that have one). */
async function viaRedis(core) {
  const { Redis } = require('ioredis');
  const client = new Redis(process.env.REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await client.connect();
  try {
    const prefix = `packed${Math.random().toString(36).slice(2, 10)}`;
    // A wide timeout: the machine may be busy, and a timeout here would be a fail-mode decision, not the store's.
    const limiter = core.createLimiter({ policy: '1/1m', store: core.redisStore({ client }), prefix, timeout: 10_000 });
    const decisions = [await limiter.consume('k'), await limiter.consume('k')];
    await limiter.close();
    return { allowed: decisions.map((d) => d.allowed), sources: decisions.map((d) => d.source) };
  } finally {
    await client.quit();
  }
}

/** The GraphQL plugins build from a limiter, and a bad option is refused (graphql itself is the project's, a peer). */
function viaGraphql(core, graphql) {
  const limit = graphql.costLimit({ limiter: core.createLimiter({ policy: '1000/1m' }), key: () => 'k', maxCost: 100 });
  let refused;
  try {
    graphql.costLimit({ limiter: 'nope', key: () => 'k' });
  } catch (error) {
    refused = error.code;
  }
  return {
    plugins: [limit.envelop().onExecute, limit.apollo().requestDidStart, limit.mercurius()].map((f) => typeof f),
    directives: graphql.costDirectives.includes('directive @listSize'),
    refused,
  };
}

module.exports = async function exercise({ core, express, fastify, koa, hono, graphql, nestjs, resolved }) {
  const limiter = core.createLimiter({ policy: '2/1m' });
  const memory = [];
  for (let i = 0; i < 3; i++) memory.push((await limiter.consume('k')).allowed);
  let refused;
  try {
    core.createLimiter({ policy: { limit: -1, window: '1m' } });
  } catch (error) {
    refused = { sluiceError: error instanceof core.SluiceError, code: error.code };
  }
  return {
    resolved,
    memory,
    refused,
    exports: [
      express.rateLimit,
      express.default,
      fastify.rateLimit,
      fastify.default,
      koa.rateLimit,
      koa.default,
      hono.rateLimit,
      hono.default,
      nestjs.sluiceThrottlerStorage,
      nestjs.RateLimit,
    ].map((f) => typeof f),
    express: await viaExpress(express.rateLimit),
    fastify: await viaFastify(fastify.default),
    koa: await viaKoa(koa.rateLimit),
    graphql: viaGraphql(core, graphql),
    hono: await viaHono(hono.rateLimit),
    nestjs: await viaNest(nestjs),
    redis: process.env.REDIS_URL ? await viaRedis(core) : undefined,
  };
};
