// A closed-loop flood on one key at a '1000/1s' token bucket: `inflight` callers, each calling consume again
// as soon as its previous call resolves, until `count` requests were made (or 15 s passed, on a machine too
// busy for that), with the deny cache on or off. A count rather than a time, so a slow machine floods as much.
// Reports requests, admitted, decisions handed to the store, and the span in ms from emptying the bucket.
const { createLimiter, redisStore } = require('@sluice/core');
const Redis = require('ioredis');

const [port, prefix, denyCache, inflight, count] = process.argv.slice(2);
const client = new Redis({ port: Number(port) });
// The store refuses calls made before the first connect: the flood starts once connected.
const connected = new Promise((r) => client.once('ready', r));
const inner = redisStore({ client });
let sent = 0;
// Decisions handed to the store (one script call carries many, so script calls would not tell).
const store = {
  local: inner.local,
  decide: (request) => {
    sent++;
    return inner.decide(request);
  },
  reset: (keys) => inner.reset(keys),
  close: () => inner.close(),
};
const limiter = createLimiter({ policy: '1000/1s', store, denyCache: denyCache === 'true', prefix, timeout: 1000 });

(async () => {
  await connected;
  const start = performance.now();
  // Empty the bucket first, so that the flood meets the limit from its first request.
  const first = await limiter.consume('hot', { cost: 1000 });
  const sentBefore = sent;
  let requests = 0;
  let admitted = 0;
  let offStore = 0;
  const end = performance.now() + 15_000;
  const caller = async () => {
    while (requests < Number(count) && performance.now() < end) {
      requests++;
      const d = await limiter.consume('hot');
      if (d.allowed) admitted++;
      if (d.source !== 'store' && d.source !== 'deny-cache') offStore++;
    }
  };
  await Promise.all(Array.from({ length: Number(inflight) }, caller));
  const span = performance.now() - start;
  console.log(JSON.stringify({ first: first.allowed, requests, admitted, offStore, sent: sent - sentBefore, span }));
  client.disconnect();
})();
