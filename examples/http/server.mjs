// A plain node:http app on @sluice/core: '/' is limited per client IP, POST /login strictly and fail-closed,
// /health not at all. Runs on the embedded memory store; set REDIS_URL to count in Redis instead.
import { createServer } from 'node:http';
import { createLimiter, memoryStore, rateLimitHeaders, redisStore } from '@sluice/core';

const store = process.env.REDIS_URL ? redisStore({ client: new (await import('ioredis')).Redis(process.env.REDIS_URL) }) : memoryStore();
const publicLimit = createLimiter({ policy: '10/1m', store, prefix: 'example-public', failMode: 'open' });
const loginLimit = createLimiter({ policy: '5/15m', store, prefix: 'example-login', failMode: 'closed' });

const server = createServer(async (req, res) => {
  const url = new URL(req.url ?? '/', 'http://localhost');
  if (url.pathname === '/health') return res.end('ok\n');
  const limiter = req.method === 'POST' && url.pathname === '/login' ? loginLimit : publicLimit;
  const decision = await limiter.consume(req.socket.remoteAddress ?? 'unknown');
  for (const [name, value] of Object.entries(rateLimitHeaders(decision))) res.setHeader(name, value);
  if (!decision.allowed) {
    res.writeHead(429, { 'content-type': 'application/problem+json' });
    return res.end(JSON.stringify({ title: 'Too Many Requests', status: 429, 'violated-policies': [decision.policy] }));
  }
  res.end(`hello (${decision.remaining} left)\n`);
});

server.listen(Number(process.env.PORT ?? 3000), () => console.log(`listening on http://localhost:${server.address().port}`));
