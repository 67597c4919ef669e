// Takes `count` concurrent slots at one key (lease `lease` ms), reports how many it holds, then waits,
// releasing nothing, until the test kills it (SIGKILL): a crashed process's slots.
const { createLimiter, redisStore } = require('@sluice/core');
const Redis = require('ioredis');

const [port, prefix, slots, lease, count] = process.argv.slice(2);
const client = new Redis({ port: Number(port) });
const limiter = createLimiter({
  policy: { concurrent: Number(slots), lease: Number(lease) },
  store: redisStore({ client }),
  prefix,
  timeout: 10_000,
});
client.once('ready', async () => {
  const decisions = await Promise.all(Array.from({ length: Number(count) }, () => limiter.consume('jobs')));
  process.send({ held: decisions.filter((d) => d.allowed && d.source === 'store').length });
  setInterval(() => {}, 60_000);
});
