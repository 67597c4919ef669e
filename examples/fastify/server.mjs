// Fastify with @sluice/fastify: GET / is limited per client and fails open, POST /login is strict and fails
// closed (503 while the store is down), GET /health is never limited. Counts in the embedded memory store, or
// in Redis when REDIS_URL is set (e.g. redis://localhost:6379).
import { memoryStore, redisStore } from '@sluice/core';
import { rateLimit } from '@sluice/fastify';
import Fastify from 'fastify';
import { Redis } from 'ioredis';
import { left, logBreaker, quietErrors } from '../outage-log.mjs';

const redis = process.env.REDIS_URL ? new Redis(process.env.REDIS_URL) : undefined;
if (redis) quietErrors(redis); // while it is down, the fail modes decide
const store = redis ? redisStore({ client: redis }) : memoryStore();

// trustProxy: true behind a proxy, so that the default key (request.ip) is the client's address.
const app = Fastify();

// Every route registered after the plugin is limited, each on its own counter, unless its config says otherwise.
await app.register(rateLimit, { policy: '10/1m', store, failMode: 'open', onEvent: logBreaker });

app.get('/health', { config: { rateLimit: false } }, async () => 'ok\n');

app.get('/', async (request) => `hello, ${left(request.rateLimit)} this minute\n`);

// Route options are merged over the plugin's: this route's policy and fail mode win, the store is shared.
app.post('/login', { config: { rateLimit: { policy: '5/15m', failMode: 'closed', fallback: false } } }, async () => 'logged in\n');

await app.listen({ port: Number(process.env.PORT ?? 3000) });
console.log(`listening on http://localhost:${app.server.address().port} (${process.env.REDIS_URL ? 'Redis' : 'memory store'})`);
