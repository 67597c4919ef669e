// Express with @sluice/express: GET / is limited per client and fails open, POST /login is strict and fails
// closed to a small per-process limit, GET /health is never limited. Counts in the embedded memory store, or
// in Redis when REDIS_URL is set (e.g. redis://localhost:6379).
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
// app.set('trust proxy', 1) behind a proxy, so that the default key (req.ip) is the client's address.

app.get('/health', (_req, res) => {
  res.send('ok\n');
});

app.get('/', rateLimit({ policy: '10/1m', store, failMode: 'open', onEvent: logBreaker }), (req, res) => {
  res.send(`hello, ${left(req.rateLimit)} this minute\n`);
});

app.post('/login', rateLimit({ policy: '5/15m', store, failMode: 'closed', fallback: '2/15m', onEvent: logBreaker }), (_req, res) => {
  res.send('logged in\n');
});

const server = app.listen(Number(process.env.PORT ?? 3000), (error) => {
  if (error) throw error;
  console.log(`listening on http://localhost:${server.address().port} (${process.env.REDIS_URL ? 'Redis' : 'memory store'})`);
});
