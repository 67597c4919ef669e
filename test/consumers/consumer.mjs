// An ES module consumer of the built package.
import { createLimiter, rateLimitHeaders } from '@sluice/core';

const limiter = createLimiter({ policy: '2/1m' });
(async () => {
  const results = [];
  for (let i = 0; i < 3; i++) results.push((await limiter.consume('k')).allowed);
  const d = await limiter.consume('k');
  console.log(JSON.stringify({ results, headers: rateLimitHeaders(d) }));
})();
