// Core benchmark on one redis-server this script starts: Redis memory per key, Redis CPU per decision,
// and decisions per second from one process at 1, 64 and 512 calls in flight over 10,000 keys, for each
// sluice algorithm beside rate-limiter-flexible and rate-limit-redis. (Not redis-benchmark: every call
// must carry a higher number than the last for lua/decide.lua's call guard, which its fixed arguments
// cannot; bench/lab/floor.mjs measures the script's Redis CPU instead.)
// Rounds are interleaved; figures are min/median/max over rounds, and
// each round's ratio of sluice token-bucket to the faster library is taken within that round.
// 'sluice consume+release' is one pair per decision: a consume on a concurrent policy, then its
// release() (two script calls); its ratio to the token bucket is taken within each round too (target 0.5).
// Every sluice decision must come from Redis: a timeout would turn it into a local fallback decision,
// so the limiters get a generous timeout and the run fails if any decision came from elsewhere.
// --client picks the client of sluice's Redis store (the other libraries keep ioredis): ioredis (the
// default), node-redis (the `redis` package) or iovalkey. --clients node-redis,iovalkey adds, beside
// them, a token-bucket contender on each of those clients, and each one's decisions/s at 512 in flight
// over the token bucket's on --client, within each round (target: at least 0.8).
// --builds .,../other-checkout runs this whole benchmark once per round for each build (its
// packages/core/dist, built), each in a process and on a redis-server of its own, rounds interleaved, at
// 512 in flight only, and prints each build's token bucket beside the faster library within each run,
// and its Node CPU per decision (bench/builds.mjs). --build DIR is one such run.
// Usage: pnpm bench:core [-- --seconds 2 --rounds 3 --client ioredis|node-redis|iovalkey --clients node-redis,iovalkey]
//        pnpm build && node bench/core.mjs --builds .,../main-checkout [--rounds 5 --seconds 2]
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { RedisStore } from 'rate-limit-redis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { arg } from './args.mjs';
import { compareBuilds } from './builds.mjs';
import { startRedis } from './redis-server.mjs';
import { stats } from './stats.mjs';

if (arg('builds') !== undefined) {
  await compareBuilds(arg('builds').split(','), { rounds: Number(arg('rounds', 5)), seconds: Number(arg('seconds', 2)) });
  process.exit(0);
}
const BUILD = arg('build');
const { createLimiter, redisStore } = await import(
  BUILD === undefined ? '@sluice/core' : pathToFileURL(`${resolve(BUILD)}/packages/core/dist/esm/index.js`).href
);

const SECONDS = Number(arg('seconds', 2));
const ROUNDS = Number(arg('rounds', 3));
const KEYS = 10_000;
const ALGORITHMS = ['token-bucket', 'fixed-window', 'sliding-window', 'sliding-log'];
const CLIENT = arg('client', 'ioredis');
const OTHER_CLIENTS = arg('clients', '').split(',').filter(Boolean);
const INFLIGHT = BUILD === undefined ? [1, 64, 512] : [512];

/** The client sluice's store runs on, connected to `port`; the one `redis` made when it is ioredis. */
async function storeClientFor(name, port, ioredis) {
  if (name === 'ioredis') return { storeClient: ioredis, close: () => {} };
  if (name === 'node-redis') {
    const { createClient } = await import('redis');
    const nodeRedis = createClient({ socket: { host: '127.0.0.1', port } });
    await nodeRedis.connect();
    return { storeClient: nodeRedis, close: () => nodeRedis.disconnect() };
  }
  if (name === 'iovalkey') {
    const { default: Valkey } = await import('iovalkey');
    const valkey = new Valkey({ host: '127.0.0.1', port });
    await new Promise((resolve, reject) => valkey.once('ready', resolve).once('error', reject));
    return { storeClient: valkey, close: () => valkey.disconnect() };
  }
  throw new Error(`--client must be ioredis, node-redis or iovalkey, got ${JSON.stringify(name)}`);
}

const redis = await startRedis();
let offStore = 0;
const { client } = redis;
const { storeClient, close: closeStoreClient } = await storeClientFor(CLIENT, redis.port, client);
const otherClients = [];
for (const name of OTHER_CLIENTS) otherClients.push({ name, ...(await storeClientFor(name, redis.port, client)) });
console.log(`sluice's store on ${CLIENT}`);

/** A sluice contender: a limiter on `onClient`, whose every decision must come from the store. */
function sluice(name, options, onClient = storeClient, consume = (limiter, key) => limiter.consume(key)) {
  const limiter = createLimiter({ ...options, store: redisStore({ client: onClient }), timeout: 10_000 });
  const run = async (key) => {
    const d = await consume(limiter, key);
    if (d.source !== 'store') offStore++;
  };
  return { name, command: 'evalsha', run };
}

function contenders() {
  const list = ALGORITHMS.map((algorithm) =>
    // A sliding log counts at most 10,000 units (SLIDING_LOG_MAX); a run sends each key far fewer.
    sluice(`sluice ${algorithm}`, {
      policy: { limit: algorithm === 'sliding-log' ? 10_000 : 1_000_000, window: '1h', algorithm },
      prefix: `b-${algorithm}`,
    }),
  );
  // A plan per call (the token bucket above, as a policy object built per request, as an app
  // would from its user's plan) and a calendar quota, each against the fixed token bucket.
  const planLimit = 1_000_000;
  list.push(
    sluice('sluice per-call policy', { prefix: 'b-per-call' }, storeClient, (limiter, key) =>
      limiter.consume(key, { policy: { limit: planLimit, window: '1h' } }),
    ),
  );
  list.push(sluice('sluice calendar day', { policy: '1000000000/day', prefix: 'b-calendar' }));
  const slots = createLimiter({
    policy: { concurrent: 100_000, lease: '30s' },
    store: redisStore({ client }),
    prefix: 'b-concurrent',
    timeout: 10_000,
  });
  list.push({
    name: 'sluice consume+release',
    command: 'evalsha',
    run: async (key) => {
      const d = await slots.consume(key);
      if (d.source !== 'store' || !d.allowed) offStore++;
      await d.release?.();
    },
  });
  for (const other of otherClients) {
    list.push(
      sluice(
        `sluice token-bucket on ${other.name}`,
        { policy: { limit: 1_000_000, window: '1h' }, prefix: `b-tb-${other.name}` },
        other.storeClient,
      ),
    );
  }
  const rlf = new RateLimiterRedis({ storeClient: client, points: 1_000_000, duration: 3600, keyPrefix: 'rlf' });
  list.push({ name: 'rate-limiter-flexible', command: 'evalsha', run: (key) => rlf.consume(key).catch(() => {}) });
  const rlr = new RedisStore({ sendCommand: (...args) => client.call(...args), prefix: 'rlr:' });
  rlr.init({ windowMs: 3_600_000 });
  list.push({ name: 'rate-limit-redis', command: 'evalsha', run: (key) => rlr.increment(key) });
  return list;
}

async function throughput(run, inflight) {
  let done = 0;
  let i = 0;
  const end = performance.now() + SECONDS * 1000;
  const worker = async () => {
    while (performance.now() < end) {
      await run(`k${i++ % KEYS}`);
      done++;
    }
  };
  const start = performance.now();
  const cpu = process.cpuUsage();
  await Promise.all(Array.from({ length: inflight }, worker));
  const used = process.cpuUsage(cpu);
  return { rate: done / ((performance.now() - start) / 1000), cpuUs: (used.user + used.system) / done, done };
}

async function commandStats() {
  const info = await client.info('commandstats');
  const out = {};
  for (const m of info.matchAll(/cmdstat_(\w+):calls=(\d+),usec=(\d+)/g)) out[m[1]] = { calls: Number(m[2]), usec: Number(m[3]) };
  return out;
}

const list = contenders();
// Warm up, load scripts, and fill 10,000 keys each.
for (const c of list) for (let k = 0; k < KEYS; k += 500) await Promise.all(Array.from({ length: 500 }, (_, j) => c.run(`k${k + j}`)));

// Redis memory per key, averaged over 200 keys, with a limit low enough that keys do not expire at once
// (a token bucket's key lives only until the bucket is full again).
const memory = {};
const fill = async (prefix, consume) => {
  await Promise.all(Array.from({ length: 200 }, (_, i) => consume(`user-${i}`)));
  const keys = (await client.keys(`${prefix}*`)).slice(0, 200);
  const sizes = await Promise.all(keys.map((k) => client.memory('USAGE', k)));
  memory[prefix] = Math.round(sizes.reduce((a, b) => a + b, 0) / sizes.length);
};
for (const algorithm of ALGORITHMS) {
  const limiter = createLimiter({
    policy: { limit: 100, window: '1h', algorithm },
    store: redisStore({ client: storeClient }),
    prefix: `m-${algorithm}`,
    timeout: 10_000,
  });
  await fill(`m-${algorithm}`, (key) => limiter.consume(key));
}
const rlfMemory = new RateLimiterRedis({ storeClient: client, points: 100, duration: 3600, keyPrefix: 'm-rlf' });
await fill('m-rlf', (key) => rlfMemory.consume(key));
const rlrMemory = new RedisStore({ sendCommand: (...args) => client.call(...args), prefix: 'm-rlr:' });
rlrMemory.init({ windowMs: 3_600_000 });
await fill('m-rlr:', (key) => rlrMemory.increment(key));

// Redis CPU per decision over 20,000 decisions at 512 in flight, two ways: the server's `INFO
// commandstats` usec of the script calls (time inside the scripts; wall-clock, so it grows when the
// machine is busy), and the server process' CPU time from `INFO cpu` (everything the server spent,
// reading and parsing requests, writing replies and expiring keys included).
const cpu = {};
const processCpu = {};
for (const c of list) {
  await client.config('RESETSTAT');
  const before = await redis.cpuUs();
  let n = 0;
  await Promise.all(
    Array.from({ length: 512 }, async () => {
      while (n < 20_000) await c.run(`k${n++ % KEYS}`);
    }),
  );
  const after = await redis.cpuUs();
  const s = await commandStats();
  const usec = Object.entries(s)
    .filter(([cmd]) => cmd === 'evalsha' || cmd === 'eval')
    .reduce((a, [, v]) => a + v.usec, 0);
  cpu[c.name] = usec / n;
  processCpu[c.name] = (after - before) / n;
}

const rates = {};
const nodeCpu = {}; // this process' CPU µs per decision at 512 in flight (the benchmark loop included)
const serverCpu = {}; // the redis-server's CPU µs per decision at 512 in flight
for (let r = 0; r < ROUNDS; r++) {
  for (const inflight of INFLIGHT) {
    for (const c of list) {
      const key = `${c.name} @${inflight}`;
      rates[key] ??= [];
      const before = inflight === 512 ? await redis.cpuUs() : 0;
      const { rate, cpuUs, done } = await throughput(c.run, inflight);
      rates[key].push(rate);
      if (inflight === 512) {
        nodeCpu[c.name] ??= [];
        nodeCpu[c.name].push(cpuUs);
        serverCpu[c.name] ??= [];
        serverCpu[c.name].push(((await redis.cpuUs()) - before) / done);
      }
    }
  }
}

await closeStoreClient();
for (const other of otherClients) await other.close();
redis.stop();
if (offStore > 0) throw new Error(`${offStore} sluice decisions did not come from Redis (timeouts?): figures are void`);
if (BUILD !== undefined) {
  // One run of --builds: its figures at 512 in flight, as JSON on the last line.
  const of = (name) => ({
    rate: stats(rates[`${name} @512`]).median,
    cpuUs: stats(nodeCpu[name]).median,
    serverCpuUs: stats(serverCpu[name]).median,
  });
  console.log(JSON.stringify(Object.fromEntries(list.map((c) => [c.name, of(c.name)]))));
  process.exit(0);
}

const fmt = (n) => Math.round(n).toLocaleString('en-US');
console.log(
  `\nRedis memory per key (MEMORY USAGE, bytes): ${Object.entries(memory)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ')}`,
);
console.log(
  '\n| contender | script µs per decision | server CPU µs per decision | Node CPU µs per decision @512 | @1 decisions/s | @64 | @512 |',
);
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const c of list) {
  const cell = (n) => {
    const s = stats(rates[`${c.name} @${n}`]);
    return `${fmt(s.median)} (${fmt(s.min)}–${fmt(s.max)})`;
  };
  const node = stats(nodeCpu[c.name]).median.toFixed(2);
  console.log(
    `| ${c.name} | ${cpu[c.name].toFixed(2)} | ${processCpu[c.name].toFixed(2)} | ${node} | ${cell(1)} | ${cell(64)} | ${cell(512)} |`,
  );
}
// Ratios within each round: sluice token-bucket over the faster of the two libraries in that round.
const ratios = {};
for (const n of [64, 512]) {
  ratios[n] = rates[`sluice token-bucket @${n}`].map(
    (tb, r) => tb / Math.max(rates[`rate-limiter-flexible @${n}`][r], rates[`rate-limit-redis @${n}`][r]),
  );
  const q = stats(ratios[n]);
  console.log(
    `\ntoken-bucket / faster library @${n}, per round: median ${q.median.toFixed(2)}x (${q.min.toFixed(2)}–${q.max.toFixed(2)}x)`,
  );
}
for (const n of [64, 512]) {
  const ratio = rates[`sluice consume+release @${n}`].map((pairs, r) => pairs / rates[`sluice token-bucket @${n}`][r]);
  const q = stats(ratio);
  const verdict = q.median >= 0.5 ? 'met' : 'MISSED';
  console.log(
    `consume+release pairs / token-bucket consumes @${n}, per round: median ${q.median.toFixed(2)}x (${q.min.toFixed(2)}–${q.max.toFixed(2)}x), target 0.5: ${verdict}`,
  );
}
// A per-call policy and a calendar quota beside the fixed token bucket, within each round: Node CPU per
// decision at 512 in flight (target: at most 1.10x) and throughput over the faster library.
for (const name of ['sluice per-call policy', 'sluice calendar day']) {
  const cpuRatio = stats(nodeCpu[name].map((us, r) => us / nodeCpu['sluice token-bucket'][r]));
  const lead = stats(
    rates[`${name} @512`].map((x, r) => x / Math.max(rates['rate-limiter-flexible @512'][r], rates['rate-limit-redis @512'][r])),
  );
  console.log(
    `${name}: Node CPU / token-bucket @512 median ${cpuRatio.median.toFixed(2)}x (${cpuRatio.min.toFixed(2)}–${cpuRatio.max.toFixed(2)}x); ` +
      `/ faster library @512 median ${lead.median.toFixed(2)}x (${lead.min.toFixed(2)}–${lead.max.toFixed(2)}x)`,
  );
}

// The token bucket on each other client over the one on --client, decisions/s @512 within each round.
for (const other of otherClients) {
  const q = stats(rates[`sluice token-bucket on ${other.name} @512`].map((x, r) => x / rates['sluice token-bucket @512'][r]));
  console.log(
    `token-bucket on ${other.name} / on ${CLIENT} @512, per round: median ${q.median.toFixed(2)}x (${q.min.toFixed(2)}–${q.max.toFixed(2)}x), target 0.8: ${q.median >= 0.8 ? 'met' : 'MISSED'}`,
  );
}

const { writeResults } = await import('./results.mjs');
const memoryOf = { 'rate-limiter-flexible': 'm-rlf', 'rate-limit-redis': 'm-rlr:' };
const withRounds = (xs) => ({ ...stats(xs), rounds: xs });
writeResults('core', {
  settings: { seconds: SECONDS, rounds: ROUNDS, keys: KEYS },
  inflight: [1, 64, 512],
  contenders: list.map((c) => ({
    name: c.name,
    scriptUsPerDecision: cpu[c.name],
    serverCpuUsPerDecision: processCpu[c.name],
    nodeCpuUsPerDecision: withRounds(nodeCpu[c.name]),
    memoryBytesPerKey: memory[memoryOf[c.name] ?? `m-${c.name.replace('sluice ', '')}`],
    decisionsPerSecond: Object.fromEntries([1, 64, 512].map((n) => [n, withRounds(rates[`${c.name} @${n}`])])),
  })),
  tokenBucketOverFasterLibrary: { 64: withRounds(ratios[64]), 512: withRounds(ratios[512]) },
});
