// Connects, says it is ready, then on 'go' fires `count` concurrent consumes at one key and reports how many were admitted.
const { createLimiter, redisStore } = require('@sluice/core');
const Redis = require('ioredis');

const [port, prefix, algorithm, count] = process.argv.slice(2);
const client = new Redis({ port: Number(port) });
const limiter = createLimiter({ policy: { limit: 100, window: '1h', algorithm }, store: redisStore({ client }), prefix, timeout: 10_000 });
client.once('ready', () => process.send('ready'));
process.once('message', async () => {
  const decisions = await Promise.all(Array.from({ length: Number(count) }, () => limiter.consume('hot')));
  const offStore = decisions.filter((d) => d.source !== 'store' && d.source !== 'deny-cache').length;
  process.send({ admitted: decisions.filter((d) => d.allowed).length, offStore });
  client.disconnect();
  process.disconnect();
});
