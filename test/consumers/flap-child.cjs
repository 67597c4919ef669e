// Consumes for 3 s against a Redis that the parent test kills and restarts, then closes everything.
// Exiting by itself proves no timer, listener or promise was left behind.
const { createLimiter, redisStore } = require('@sluice/core');
const Redis = require('ioredis');

const client = new Redis({ port: Number(process.argv[2]), retryStrategy: () => 20 });
client.on('error', () => {});
const limiter = createLimiter({
  policy: '100000/1h',
  store: redisStore({ client }),
  prefix: process.argv[3],
  timeout: 50,
  breaker: { failures: 3, cooldown: 100 },
});
const sources = {};
let errors = 0;
const end = Date.now() + 3000;
(async () => {
  while (Date.now() < end) {
    await Promise.all(
      Array.from({ length: 20 }, () =>
        limiter.consume(`k${Math.floor(Math.random() * 50)}`).then(
          (d) => {
            sources[d.source] = (sources[d.source] ?? 0) + 1;
          },
          () => errors++,
        ),
      ),
    );
    await new Promise((r) => setTimeout(r, 5));
  }
  await limiter.close();
  client.disconnect();
  console.log(JSON.stringify({ errors, sources }));
})();
