// Hono on @hono/node-server with @sluice/hono: GET / is limited per client and fails open, POST /login is
// strict and fails closed to a small per-process limit, GET /health is never limited, and each WebSocket on
// /ws may send 5 messages a second (a sixth closes it with 1008). Counts in the embedded memory store, or in
// Redis when REDIS_URL is set (e.g. redis://localhost:6379).
import { serve } from '@hono/node-server';
import { createNodeWebSocket } from '@hono/node-ws';
import { memoryStore, redisStore } from '@sluice/core';
import { rateLimit, webSocketLimit } from '@sluice/hono';
import { Hono } from 'hono';
import { Redis } from 'ioredis';
import { left, logBreaker, quietErrors } from '../outage-log.mjs';

const redis = process.env.REDIS_URL ? new Redis(process.env.REDIS_URL) : undefined;
if (redis) quietErrors(redis); // while it is down, the fail modes decide
// One store for every middleware; without it, each would have its own memory store.
const store = redis ? redisStore({ client: redis }) : memoryStore();

const app = new Hono();
const { upgradeWebSocket, injectWebSocket } = createNodeWebSocket({ app });

app.get('/health', (c) => c.text('ok\n'));

app.get('/', rateLimit({ policy: '10/1m', store, failMode: 'open', onEvent: logBreaker }), (c) =>
  c.text(`hello, ${left(c.var.rateLimit)} this minute\n`),
);

app.post('/login', rateLimit({ policy: '5/15m', store, failMode: 'closed', fallback: '2/15m', onEvent: logBreaker }), (c) =>
  c.text('logged in\n'),
);

// Behind a proxy, give rateLimit and webSocketLimit getIP: (c) => the address the proxy sets (docs/hono.md).
const messages = webSocketLimit({ policy: '5/1s', store, failMode: 'open', onEvent: logBreaker });
app.get(
  '/ws',
  upgradeWebSocket(
    messages(() => ({
      onMessage(event, ws) {
        ws.send(`echo: ${event.data}`);
      },
    })),
  ),
);

const server = serve({ fetch: app.fetch, port: Number(process.env.PORT ?? 3000) }, (info) => {
  console.log(`listening on http://localhost:${info.port} (${process.env.REDIS_URL ? 'Redis' : 'memory store'})`);
});
injectWebSocket(server);
