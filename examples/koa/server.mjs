// Koa and @koa/router with @sluice/koa: GET / is limited per client and fails open, POST /login is strict and
// fails closed (503 while the store is down), GET /health is never limited. Counts in the embedded memory store,
// or in Redis when REDIS_URL is set (e.g. redis://localhost:6379).
import { Router } from '@koa/router';
import { memoryStore, redisStore } from '@sluice/core';
import { rateLimit } from '@sluice/koa';
import { Redis } from 'ioredis';
import Koa from 'koa';
import { left, logBreaker, quietErrors } from '../outage-log.mjs';

const redis = process.env.REDIS_URL ? new Redis(process.env.REDIS_URL) : undefined;
if (redis) quietErrors(redis); // while it is down, the fail modes decide
// One store for every middleware; without it, each would have its own memory store.
const store = redis ? redisStore({ client: redis }) : memoryStore();

const router = new Router();

router.get('/health', (ctx) => {
  ctx.body = 'ok\n';
});

router.get('/', rateLimit({ policy: '10/1m', store, failMode: 'open', onEvent: logBreaker }), (ctx) => {
  ctx.body = `hello, ${left(ctx.state.rateLimit)} this minute\n`;
});

router.post('/login', rateLimit({ policy: '5/15m', store, failMode: 'closed', fallback: false, onEvent: logBreaker }), (ctx) => {
  ctx.body = 'logged in\n';
});

// app.proxy = true behind a proxy, so that the default key (ctx.ip) is the client's address.
const app = new Koa();
app.use(router.routes()).use(router.allowedMethods());

const server = app.listen(Number(process.env.PORT ?? 3000), () => {
  console.log(`listening on http://localhost:${server.address().port} (${process.env.REDIS_URL ? 'Redis' : 'memory store'})`);
});
