// Express with @sluice/express: GET / is limited per client and fails open, POST /login is strict and fails
// closed (503 while the store is down), GET /api is limited by the caller's plan, GET /health is never limited.
// Counts in the embedded memory store, or in Redis when REDIS_URL is set (e.g. redis://localhost:6379).
// SLUICE_METRICS=1 serves the limiter's Prometheus metrics on GET /metrics (@sluice/metrics); TRUST_PROXY=1
// takes the client from X-Forwarded-For.
import { memoryStore, redisStore } from '@sluice/core';
import { rateLimit } from '@sluice/express';
import express from 'express';
import { Redis } from 'ioredis';
import { left, logBreaker, quietErrors } from '../outage-log.mjs';

const redis = process.env.REDIS_URL ? new Redis(process.env.REDIS_URL) : undefined;
if (redis) quietErrors(redis); // while it is down, the fail modes decide
// One store for every middleware; without it, each would have its own memory store.
const store = redis ? redisStore({ client: redis }) : memoryStore();

const app = express();
// Behind a proxy, so that the default key (req.ip) is the client's address and not the proxy's.
if (process.env.TRUST_PROXY) app.set('trust proxy', Number(process.env.TRUST_PROXY) || process.env.TRUST_PROXY);

app.get('/health', (_req, res) => {
  res.send('ok\n');
});

if (process.env.SLUICE_METRICS === '1') {
  // Loaded only when asked: the metrics package and prom-client stay out of an app that does not scrape.
  const [{ prometheusMetrics }, { register }] = await Promise.all([import('@sluice/metrics'), import('prom-client')]);
  prometheusMetrics({ register }); // every limiter in this process, through the sluice:* diagnostics channels
  // Before the limiters, like /health: a scraper is never limited.
  app.get('/metrics', async (_req, res) => {
    res.type(register.contentType).send(await register.metrics());
  });
}

app.get('/', rateLimit({ policy: '10/1m', store, failMode: 'open', onEvent: logBreaker }), (req, res) => {
  res.send(`hello, ${left(req.rateLimit)} this minute\n`);
});

app.post('/login', rateLimit({ policy: '5/15m', store, failMode: 'closed', fallback: false, onEvent: logBreaker }), (_req, res) => {
  res.send('logged in\n');
});

// Plans: each API key's plan picks its limits, a rate and a calendar quota (the day in New York). A real
// app looks the key up in its own store after authenticating it; never trust a plan the client names.
const accounts = { 'key-free': 'free', 'key-pro': 'pro' };
const plans = {
  free: ['2/s', { limit: 100, window: 'day', timeZone: 'America/New_York' }],
  pro: ['20/s', { limit: 10_000, window: 'day', timeZone: 'America/New_York' }],
};
const apiKey = (req) => req.get('x-api-key') ?? '';
app.get(
  '/api',
  (req, res, next) => (accounts[apiKey(req)] ? next() : res.status(401).send('unknown x-api-key\n')),
  rateLimit({ store, key: apiKey, policy: (req) => plans[accounts[apiKey(req)]] }),
  (req, res) => {
    res.send(`${accounts[apiKey(req)]} plan: ${req.rateLimit.policies.map((p) => `${p.remaining} left of ${p.name}`).join(', ')}\n`);
  },
);

const server = app.listen(Number(process.env.PORT ?? 3000), (error) => {
  if (error) throw error;
  console.log(`listening on http://localhost:${server.address().port} (${process.env.REDIS_URL ? 'Redis' : 'memory store'})`);
});
