// The peers' options type-check as the peers type them (a drop-in switches by its import, in
// TypeScript too): express-rate-limit's functions of (req, res), handler; @fastify/rate-limit's allowList,
// ban, errorResponseBuilder, max as a function of (request, key); hono-rate-limiter's functions of the context.
import { rateLimit } from '@sluice/express';
import fastifyRateLimit from '@sluice/fastify';
import { rateLimit as honoRateLimit } from '@sluice/hono';
import Fastify from 'fastify';
import { Hono } from 'hono';

export const express: unknown[] = [
  rateLimit({
    windowMs: 60_000,
    limit: (req) => (req.ip === '10.0.0.1' ? 1 : 2),
    message: (req, res) => `${req.path} ${res.statusCode}`,
    handler: (_req, res, _next, options) => {
      res.status(Number(options.statusCode)).send('slow down');
    },
  }),
  rateLimit({ windowMs: 60_000, max: 5, standardHeaders: 'draft-8', legacyHeaders: false, keyGenerator: (req) => req.ip ?? 'anon' }),
  rateLimit({ windowMs: 60_000, limit: 5, skip: (req) => req.path === '/health', identifier: 'api' }),
  rateLimit({ policy: '10/1m', message: (decision) => ({ left: decision.remaining }) }),
];

export async function fastify(): Promise<void> {
  const app = Fastify();
  await app.register(fastifyRateLimit, {
    max: async (_request, key) => (key === 'pro' ? 100 : 10),
    timeWindow: '1 minute',
    allowList: (_request, key) => key === '127.0.0.1',
    ban: 3,
    errorResponseBuilder: (_request, context) => ({ statusCode: context.statusCode, message: `retry in ${context.after}` }),
    addHeaders: { 'retry-after': false },
  });
}

export function hono(): unknown {
  const app = new Hono<{ Variables: { user?: string } }>();
  app.use(
    honoRateLimit({ windowMs: 15 * 60_000, limit: 100, standardHeaders: 'draft-7', keyGenerator: (c) => c.req.header('x-api-key') ?? '' }),
  );
  app.use(
    honoRateLimit({
      limit: async (c) => (c.req.header('x-plan') === 'pro' ? 1000 : 100),
      message: async (c) => ({ error: `slow down on ${c.req.path}` }),
      statusCode: 503,
      handler: (c, _next, options) => c.text(String(options.message), 429),
      skip: (c) => c.req.path === '/health',
      skipFailedRequests: true,
      requestWasSuccessful: (c) => c.res.status < 400,
      requestPropertyName: 'limits',
      failMode: 'open',
    }),
  );
  app.get('/', honoRateLimit({ windowMs: 60_000, limit: 5, requestPropertyName: 'limits' }), (c) =>
    c.json({ left: c.var.limits?.remaining }),
  );
  // @ts-expect-error standardHeaders is a boolean, 'draft-6' or 'draft-7' in hono-rate-limiter
  honoRateLimit({ windowMs: 60_000, limit: 5, standardHeaders: 'draft-8' });
  return app;
}
