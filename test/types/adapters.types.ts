// Type test for the adapters: never run, only type-checked by `pnpm typecheck` (root tsconfig includes test/).
// Every `@ts-expect-error` marks a wrong use that must NOT type-check: if the adapters' types accept it, the directive
// is unused and tsc fails. Each wrong use sits alone on the line after its directive.
import Router from '@koa/router';
import { createLimiter, type Decision } from '@sluice/core';
import expressRateLimitDefault, { rateLimit as expressRateLimit, shed as expressShed } from '@sluice/express';
import fastifyRateLimit, { rateLimit as fastifyRateLimitNamed, shed as fastifyShed } from '@sluice/fastify';
import koaRateLimitDefault, { rateLimit as koaRateLimit, shed as koaShed } from '@sluice/koa';
import express from 'express';
import Fastify, { type FastifyContextConfig } from 'fastify';
import Koa from 'koa';

declare const decisionSink: (d: Decision | undefined) => void;

// ------------------------------------------------------------------ Express
{
  const app = express();
  app.set('trust proxy', true);
  app.use(expressRateLimit({ policy: '100/1m' }));
  app.use(expressRateLimitDefault({ policy: { limit: 100, window: '1m', algorithm: 'sliding-window' }, headers: 'both' }));
  app.post('/login', expressRateLimit({ policy: '5/15m', failMode: 'closed', scope: 'login' }), (req, res) => {
    const decision: Decision | undefined = req.rateLimit;
    decisionSink(decision);
    const remaining: number | undefined = req.rateLimit?.remaining;
    // @ts-expect-error req.rateLimit is a Decision, not any
    req.rateLimit?.nope;
    res.json({ remaining });
  });
  expressRateLimit({
    policy: ['10/s', '100/1m'],
    key: (req) => req.ip ?? 'unknown',
    cost: async (req) => (req.method === 'POST' ? 5 : 1),
    skip: (req) => req.path === '/health',
    headers: false,
    statusCode: 503,
    ipv6Subnet: 64,
    message: (decision) => ({ retryInMs: decision.retryAfterMs }),
    onLimited: (_req, res, _next, decision) => {
      res.status(429).json({ policy: decision.policy });
    },
  });
  expressRateLimit({ policy: '1/s', message: 'Slow down' });
  expressRateLimit({ policy: '1/s', message: { error: 'slow' } });
  expressRateLimit({ limiter: createLimiter({ policy: '1/s' }) });
  // express-rate-limit spellings
  expressRateLimit({ windowMs: 60_000, limit: 100 });
  expressRateLimit({ windowMs: 60_000, max: 100, keyGenerator: (req) => req.ip ?? '' });

  // @ts-expect-error headers must be 'draft' | 'legacy' | 'both' | false
  expressRateLimit({ policy: '1/s', headers: 'nope' });
  // @ts-expect-error failMode must be 'open' | 'closed'
  expressRateLimit({ policy: '1/s', failMode: 'sometimes' });
  expressRateLimit({ policy: '5/15m', failMode: 'closed', fallback: false });
  // @ts-expect-error fallback is policies or false (refuse while the store is down), not null
  expressRateLimit({ policy: '5/15m', fallback: null });
  // @ts-expect-error key must return a string
  expressRateLimit({ policy: '1/s', key: () => 42 });
  // @ts-expect-error cost must return a number
  expressRateLimit({ policy: '1/s', cost: () => 'one' });
  // @ts-expect-error skip must return a boolean
  expressRateLimit({ policy: '1/s', skip: () => 'yes' });
  // @ts-expect-error a misspelt option is caught
  expressRateLimit({ policy: '1/s', scopee: 'login' });
  // @ts-expect-error the key function gets an Express Request
  expressRateLimit({ policy: '1/s', key: (req) => req.nope });
  // @ts-expect-error onLimited gets a Decision
  expressRateLimit({ policy: '1/s', onLimited: (_req, _res, _next, decision) => decision.nope });
  // @ts-expect-error a policy is a string like '100/1m' or an object
  expressRateLimit({ policy: 100 });
  // @ts-expect-error a middleware without any policy
  expressRateLimit({ key: (req) => req.ip ?? '' });
  // @ts-expect-error timeWindow is @fastify/rate-limit's spelling, not express-rate-limit's
  expressRateLimit({ max: 5, timeWindow: '1 minute' });
  expressRateLimit({ policy: '10/1m', cost: 2 });
  // Plans: a policy per request, sync or async, also over a shared limiter; calendar quotas.
  const plans = { free: ['10/s', '1000/day'], pro: ['100/s', { limit: 50_000, window: 'month', timeZone: 'Europe/Berlin' }] } as const;
  expressRateLimit({ policy: (req) => [...plans[req.get('x-plan') === 'pro' ? 'pro' : 'free']] });
  expressRateLimit({ policy: async (req) => (req.ip === undefined ? '1/s' : '10/s') });
  expressRateLimit({ limiter: createLimiter({ store: undefined }), policy: () => '1000/day' });
  // @ts-expect-error the policy function gets an Express Request
  expressRateLimit({ policy: (req) => req.nope });
  // @ts-expect-error the policy function returns policies
  expressRateLimit({ policy: () => 100 });
  // @ts-expect-error a calendar window takes no algorithm
  expressRateLimit({ policy: { limit: 5, window: 'day', algorithm: 'fixed-window' } });
}

// ------------------------------------------------------------------ Fastify
async function fastifyTypes() {
  const app = Fastify({ trustProxy: true });
  await app.register(fastifyRateLimit, { policy: '100/1m' });
  await app.register(fastifyRateLimitNamed, { policy: '100/1m', hook: 'preHandler', global: false });
  await app.register(fastifyRateLimit, { max: 100, timeWindow: '1 minute' });
  await app.register(fastifyRateLimit, { max: 100, timeWindow: 60_000 });
  await app.register(fastifyRateLimit, {
    policy: '100/1m',
    key: (request) => request.ip,
    cost: async () => 2,
    skip: (request) => request.url === '/health',
    onLimited: async (_request, reply, decision) => {
      reply.code(429).send({ policy: decision.policy });
    },
  });

  app.post('/login', { config: { rateLimit: { policy: '5/15m', failMode: 'closed' } } }, async (request) => {
    const decision: Decision | undefined = request.rateLimit;
    decisionSink(decision);
    // @ts-expect-error request.rateLimit is a Decision, not any
    request.rateLimit?.nope;
    return { remaining: request.rateLimit?.remaining };
  });
  app.get('/health', { config: { rateLimit: false } }, async () => 'ok');
  await app.register(fastifyRateLimit, { policy: (request) => (request.headers['x-plan'] === 'pro' ? '100/s' : '10/s') });
  app.get(
    '/plan',
    { config: { rateLimit: { policy: async (request) => [request.ip === '' ? '1/s' : '2/s', '1000/day'] } } },
    async () => 'ok',
  );
  app.get('/spelled', { config: { rateLimit: { max: 5, timeWindow: '1 minute' } } }, async () => 'ok');

  // Fastify infers a route's ContextConfig generic from the literal, so `app.get(path, { config: { rateLimit: true } })`
  // type-checks whatever the plugin declares; the declaration merging itself is checked on FastifyContextConfig.
  const config: FastifyContextConfig = { rateLimit: { policy: '1/s' } };
  void config;
  // @ts-expect-error config.rateLimit is options or false, not true
  const wrong: FastifyContextConfig = { rateLimit: true };
  void wrong;
  // @ts-expect-error route options are checked too
  app.get('/b', { config: { rateLimit: { headers: 'nope' } } }, async () => 'ok');
  // @ts-expect-error hook is the plugin's option, not a route's
  app.get('/c', { config: { rateLimit: { policy: '1/s', hook: 'preHandler' } } }, async () => 'ok');
  // @ts-expect-error global is the plugin's option, not a route's
  app.get('/d', { config: { rateLimit: { policy: '1/s', global: false } } }, async () => 'ok');
  // @ts-expect-error hook is 'onRequest' | 'preHandler'
  await app.register(fastifyRateLimit, { policy: '1/s', hook: 'onSend' });
  // @ts-expect-error headers must be 'draft' | 'legacy' | 'both' | false
  await app.register(fastifyRateLimit, { policy: '1/s', headers: 'nope' });
  // @ts-expect-error key must return a string
  await app.register(fastifyRateLimit, { policy: '1/s', key: () => 42 });
  // @ts-expect-error onLimited gets a Decision
  await app.register(fastifyRateLimit, { policy: '1/s', onLimited: (_request, _reply, decision) => decision.nope });
  // @ts-expect-error a plugin that limits every route needs a policy
  await app.register(fastifyRateLimit, { headers: 'both' });
  await app.register(fastifyRateLimit, { global: false, headers: 'both' });
  // @ts-expect-error windowMs is express-rate-limit's spelling
  await app.register(fastifyRateLimit, { windowMs: 1000, max: 5 });
}
void fastifyTypes;

// ------------------------------------------------------------------ Koa
{
  const app = new Koa();
  app.proxy = true;
  app.use(koaRateLimit({ policy: '100/1m' }));
  app.use(koaRateLimitDefault({ policy: '100/1m', headers: 'legacy' }));
  app.use(koaRateLimit({ policy: (ctx) => (ctx.get('x-plan') === 'pro' ? '100/s' : { limit: 1000, window: 'week' }) }));
  // @ts-expect-error the policy function returns policies, not a Koa status
  app.use(koaRateLimit({ policy: (ctx) => ctx.status }));
  const router = new Router();
  router.post('/login', koaRateLimit({ policy: '5/15m', failMode: 'closed' }), (ctx) => {
    const decision: Decision | undefined = ctx.state.rateLimit;
    decisionSink(decision);
    // @ts-expect-error ctx.state.rateLimit is a Decision, not any
    ctx.state.rateLimit?.nope;
    ctx.body = { remaining: ctx.state.rateLimit?.remaining };
  });
  app.use(router.routes());
  koaRateLimit({
    policy: '1/s',
    key: (ctx) => ctx.ip,
    onLimited: (ctx, decision) => {
      ctx.status = 429;
      ctx.body = { policy: decision.policy };
    },
  });

  // @ts-expect-error headers must be 'draft' | 'legacy' | 'both' | false
  koaRateLimit({ policy: '1/s', headers: 'nope' });
  // @ts-expect-error key must return a string
  koaRateLimit({ policy: '1/s', key: () => 42 });
  // @ts-expect-error onLimited gets a Decision
  koaRateLimit({ policy: '1/s', onLimited: (_ctx, decision) => decision.nope });
  // @ts-expect-error a middleware without any policy
  koaRateLimit({ headers: 'both' });
  // @ts-expect-error Koa takes no express-rate-limit spellings
  koaRateLimit({ windowMs: 1000, max: 5 });
}

// ------------------------------------------------------------------ settle, skip options, concurrent policies
{
  expressRateLimit({
    policy: ['1000/1d', { concurrent: 5, lease: '30s' }],
    cost: 100,
    settle: (req, res) => (res.locals.tokens as number | undefined) ?? (req.method === 'GET' ? 1 : undefined),
    skipFailedRequests: true,
    requestWasSuccessful: (_req, res) => res.statusCode < 500,
  });
  expressRateLimit({ policy: '10/1m', skipSuccessfulRequests: true, settle: async () => 3 });
  // @ts-expect-error settle returns a number or undefined
  expressRateLimit({ policy: '1/s', settle: () => 'all' });
  // @ts-expect-error skipFailedRequests is a boolean
  expressRateLimit({ policy: '1/s', skipFailedRequests: 'yes' });

  const app = Fastify();
  app.register(fastifyRateLimit, {
    policy: '100/1m',
    settle: (request, reply) => (reply.statusCode === 200 ? Number(request.headers['x-used'] ?? 1) : 0),
    requestWasSuccessful: (_request, reply) => reply.statusCode < 400,
  });
  // @ts-expect-error requestWasSuccessful returns a boolean
  app.register(fastifyRateLimit, { policy: '1/s', requestWasSuccessful: () => 1 });

  koaRateLimit({ policy: '100/1m', settle: (ctx) => (ctx.status === 200 ? 2 : undefined), skipFailedRequests: true });
  koaRateLimit({ policy: '100/1m', requestWasSuccessful: (ctx) => ctx.status < 400 });

  const limiter = createLimiter({ policy: ['100/1m', { concurrent: 2 }] });
  limiter.consume('k').then(async (d) => {
    await d.release?.();
  });
  limiter.consume('k', { id: 'job-1', cost: 2 });
  limiter.adjust('k', -1, { policy: '100/1m' });
  // @ts-expect-error concurrent is a number of slots
  createLimiter({ policy: { concurrent: '2' } });
  // @ts-expect-error 'concurrent' is not a rate algorithm
  createLimiter({ policy: { limit: 2, window: '1m', algorithm: 'concurrent' } });
}

// ------------------------------------------------------------------ shed(): maxWait for every class, or per class
{
  express().use(expressShed({ maxWait: '20ms', priority: (req) => (req.path === '/pay' ? 'critical' : 'normal') }));
  Fastify().register(fastifyShed, {
    maxWait: { critical: '50ms' },
    priority: (request) => (request.url === '/pay' ? 'critical' : 'normal'),
  });
  new Koa().use(koaShed({ maxWait: { critical: 50, normal: '10ms' } }));
  // @ts-expect-error a class is 'critical', 'normal' or 'sheddable'
  koaShed({ maxWait: { urgent: '50ms' } });
  // @ts-expect-error priority answers a class, not any string
  expressShed({ priority: () => 'urgent' });
}
