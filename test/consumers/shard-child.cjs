// Fires 1,000 concurrent consumes at one hot key split over `shards` (default 8); prints how many
// were admitted. argv: startup nodes (JSON), prefix, [startAt epoch ms], [shards]. With startAt, it
// connects first and fires only at startAt, so that sibling processes really fire at once; it says
// on stderr when it was late.
const { createLimiter, redisStore } = require('@sluice/core');
const { Cluster } = require('ioredis');

const [nodes, prefix, startAt, shards] = process.argv.slice(2);
const client = new Cluster(JSON.parse(nodes));
// The count is what is tested, not the latency: four of these firing 1,000 calls each on a busy machine
// can keep a call from the cluster for seconds, and a timed-out call is a fallback that fails the run.
const limiter = createLimiter({ policy: '1000/1h', shards: Number(shards ?? 8), store: redisStore({ client }), prefix, timeout: 15_000 });
(async () => {
  await client.ping(); // connected, slots known
  if (startAt !== undefined) {
    const wait = Number(startAt) - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    else process.stderr.write(`late by ${-wait} ms\n`);
  }
  const decisions = await Promise.all(Array.from({ length: 1000 }, () => limiter.consume('hot')));
  const bad = decisions.filter((d) => d.source !== 'store' && d.source !== 'deny-cache');
  if (bad.length > 0) throw new Error(`decisions not from the store: ${bad.length} (${[...new Set(bad.map((d) => d.source))]})`);
  console.log(decisions.filter((d) => d.allowed).length);
  client.disconnect();
})();
