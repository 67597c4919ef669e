// The peers' options type-check as the peers type them (a drop-in switches by its import, in
// TypeScript too): express-rate-limit's functions of (req, res), handler; @fastify/rate-limit's allowList,
// ban, errorResponseBuilder, max as a function of (request, key).
import { rateLimit } from '@sluice/express';
import fastifyRateLimit from '@sluice/fastify';
import Fastify from 'fastify';

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
