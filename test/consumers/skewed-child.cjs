// A process whose own clock runs two hours ahead consumes once from the bucket named on the command line.
const realNow = Date.now;
Date.now = () => realNow() + 2 * 3_600_000;
const { performance } = require('node:perf_hooks');
const realPerf = performance.now.bind(performance);
performance.now = () => realPerf() + 2 * 3_600_000;
const { createLimiter, redisStore } = require('@sluice/core');
const Redis = require('ioredis');

const [port, prefix] = process.argv.slice(2);
const client = new Redis({ port: Number(port) });
const limiter = createLimiter({ policy: '10/1h', store: redisStore({ client }), prefix, timeout: 2000 });
// The store refuses calls made before the first connect.
client.once('ready', () =>
  limiter.consume('shared').then((d) => {
    console.log(JSON.stringify({ allowed: d.allowed, source: d.source }));
    client.disconnect();
  }),
);
