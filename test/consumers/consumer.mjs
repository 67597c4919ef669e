// An ES module consumer of the built packages.
import { createLimiter, rateLimitHeaders } from '@sluice/core';
import expressDefault, { rateLimit as expressRateLimit } from '@sluice/express';
import fastifyDefault, { rateLimit as fastifyRateLimit } from '@sluice/fastify';
import koaDefault, { rateLimit as koaRateLimit } from '@sluice/koa';

const limiter = createLimiter({ policy: '2/1m' });
(async () => {
  const results = [];
  for (let i = 0; i < 3; i++) results.push((await limiter.consume('k')).allowed);
  const d = await limiter.consume('k');
  const adapters = [expressRateLimit, expressDefault, fastifyRateLimit, fastifyDefault, koaRateLimit, koaDefault].map((f) => typeof f);
  const middleware = [typeof expressRateLimit({ policy: '1/1m' }), typeof koaRateLimit({ policy: '1/1m' })];
  console.log(JSON.stringify({ results, headers: rateLimitHeaders(d), adapters, middleware }));
})();
