// Express with @sluice/express: GET / is limited per client and fails open, POST /login is strict and fails
// closed to a small per-process limit, GET /api is limited by the caller's plan, GET /health is never limited. Counts in the embedded memory store, or
// in Redis when REDIS_URL is set (e.g. redis://localhost:6379).
import { memoryStore, redisStore } from '@sluice/core';
import { rateLimit } from '@sluice/express';
import express from 'express';
import { Redis } from 'ioredis';

const redis = process.env.REDIS_URL ? new Redis(process.env.REDIS_URL) : undefined;
redis?.on('error', (error) => console.error(`redis: ${error.message}`)); // while it is down, the fail modes decide
// One store for every middleware; without it, each would have its own memory store.
const store = redis ? redisStore({ client: redis }) : memoryStore();

const app = express();
// app.set('trust proxy', 1) behind a proxy, so that the default key (req.ip) is the client's address.

app.get('/health', (_req, res) => {
  res.send('ok\n');
});

app.get('/', rateLimit({ policy: '10/1m', store, failMode: 'open' }), (req, res) => {
  res.send(`hello, ${req.rateLimit.remaining} left this minute\n`);
});

app.post('/login', rateLimit({ policy: '5/15m', store, failMode: 'closed', fallback: '2/15m' }), (_req, res) => {
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
