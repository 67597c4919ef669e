// Fires 1,000 concurrent consumes at one hot key split over 8 shards; prints how many were admitted.
const { createLimiter, redisStore } = require('@sluice/core');
const { Cluster } = require('ioredis');

const client = new Cluster(JSON.parse(process.argv[2]));
const limiter = createLimiter({ policy: '1000/1h', shards: 8, store: redisStore({ client }), prefix: process.argv[3], timeout: 2000 });
(async () => {
  const decisions = await Promise.all(Array.from({ length: 1000 }, () => limiter.consume('hot')));
  const bad = decisions.filter((d) => d.source !== 'store' && d.source !== 'deny-cache');
  if (bad.length > 0) throw new Error(`decisions not from the store: ${bad.length}`);
  console.log(decisions.filter((d) => d.allowed).length);
  client.disconnect();
})();
