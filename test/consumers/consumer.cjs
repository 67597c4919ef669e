// A CommonJS consumer of the built packages.
const { createLimiter, rateLimitHeaders } = require('@sluice/core');
const express = require('@sluice/express');
const fastify = require('@sluice/fastify');
const koa = require('@sluice/koa');

const limiter = createLimiter({ policy: '2/1m' });
(async () => {
  const results = [];
  for (let i = 0; i < 3; i++) results.push((await limiter.consume('k')).allowed);
  const d = await limiter.consume('k');
  const adapters = [express.rateLimit, express.default, fastify.rateLimit, fastify.default, koa.rateLimit, koa.default].map(
    (f) => typeof f,
  );
  const middleware = [typeof express.rateLimit({ policy: '1/1m' }), typeof koa.rateLimit({ policy: '1/1m' })];
  console.log(JSON.stringify({ results, headers: rateLimitHeaders(d), adapters, middleware }));
})();
