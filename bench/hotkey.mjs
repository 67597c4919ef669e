// Hot-key benchmark: one process floods ONE key far above its limit, and we count what
// that costs Redis. It starts its own standalone redis-server and a real 3-master/3-replica Redis
// Cluster on free ports, and stops them at the end, also on error or Ctrl-C.
//
// Modes, side by side in one run:
//   standalone: plain (denyCache: false), deny cache (the default), prefilter (a local policy in front)
//   Cluster:    no shards and shards: 8, each without and with the deny cache
// Two floods per mode, for a token-bucket and a fixed-window policy of --limit per second:
//   paced:  open loop at --times (10) x the limit per second, so every mode sees the same offered load;
//           answers "what does a flood at 10x cost Redis" (script calls, decisions, CPU, per master).
//   closed: --inflight loops of `await consume()` as fast as this process can go;
//           answers "how many requests per second can one process answer under a flood".
// Per measurement: warm up (the key is then in its steady, limited state), CONFIG RESETSTAT on every
// server, flood for --seconds (and at most --max requests), read INFO commandstats. Rounds are
// interleaved (every measurement once, then again, ...); figures are median (min–max) over rounds.
//
// Usage: pnpm build && node bench/hotkey.mjs [--seconds 2 --rounds 5 --limit 1000 --times 10 --inflight 64]
import { createLimiter, redisStore } from '@sluice/core';
import Redis, { Cluster } from 'ioredis';
import { sleep, startCluster } from '../test/support/redis-harness.mjs';
import { arg } from './args.mjs';
import { startRedis } from './redis-server.mjs';

const SECONDS = Number(arg('seconds', 2));
const WARM_MS = Number(arg('warm', 300));
const ROUNDS = Number(arg('rounds', 5));
const MAX = Number(arg('max', 5_000_000)); // requests per measurement, whatever the time
const LIMIT = Number(arg('limit', 1000)); // per second
const TIMES = Number(arg('times', 10)); // the paced flood's rate, in multiples of the limit
const INFLIGHT = Number(arg('inflight', 64));
const ALGORITHMS = String(arg('algorithms', 'token-bucket,fixed-window')).split(',');
const SHARDS = 8;
const KEY = 'hot';

let redis;
let cluster;
const clients = [];
const stopAll = () => {
  for (const c of clients.splice(0)) c.disconnect();
  redis?.stop();
  redis = undefined;
  cluster?.stop();
  cluster = undefined;
};
process.on('exit', stopAll);
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(130));

const spread = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return { min: s[0], median: s[Math.floor(s.length / 2)], max: s.at(-1) };
};

/** Script calls (EVALSHA + EVAL) and their server time since the last CONFIG RESETSTAT. */
async function scriptStats(client) {
  const info = await client.info('commandstats');
  let calls = 0;
  let usec = 0;
  for (const m of info.matchAll(/cmdstat_(evalsha|eval):calls=(\d+),usec=(\d+)/g)) {
    calls += Number(m[2]);
    usec += Number(m[3]);
  }
  return { calls, usec };
}

/** A store that counts the decisions it passes on to Redis (one script call carries many). */
function counting(store) {
  const counter = { sent: 0 };
  return {
    counter,
    store: {
      local: store.local,
      decide(request) {
        counter.sent++;
        return store.decide(request);
      },
      reset: (keys) => store.reset(keys),
      close: () => store.close(),
    },
  };
}

function tally() {
  const t = { n: 0, admitted: 0, sources: {} };
  t.add = (d) => {
    if (d.allowed) t.admitted++;
    t.sources[d.source] = (t.sources[d.source] ?? 0) + 1;
  };
  return t;
}

/** Closed loop: `inflight` loops of `await consume`, until the time or the count runs out. */
async function closedFlood(limiter, ms) {
  const t = tally();
  const end = performance.now() + ms;
  const loop = async () => {
    while (t.n < MAX && performance.now() < end) {
      t.n++;
      t.add(await limiter.consume(KEY));
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: INFLIGHT }, loop));
  return { ...t, seconds: (performance.now() - start) / 1000 };
}

/** Open loop at `rate` per second: each ~1 ms tick fires the requests due by then, without waiting for answers. */
async function pacedFlood(limiter, rate, ms) {
  const t = tally();
  const pending = new Set();
  const start = performance.now();
  for (let now = start; now - start < ms && t.n < MAX; now = performance.now()) {
    const due = Math.min(MAX, Math.floor(((now - start) / 1000) * rate));
    while (t.n < due) {
      t.n++;
      const p = limiter.consume(KEY).then(t.add);
      pending.add(p);
      p.finally(() => pending.delete(p));
    }
    await sleep(1);
  }
  await Promise.all(pending);
  return { ...t, seconds: (performance.now() - start) / 1000 };
}

redis = await startRedis();
clients.push(redis.client);
cluster = await startCluster();
const masterPorts = await cluster.masters();
const masters = masterPorts.map((port) => new Redis({ port }));
clients.push(...masters);
const clusterClient = new Cluster(cluster.startupNodes());
clients.push(clusterClient);

function modes(algorithm) {
  const policy = { limit: LIMIT, window: '1s', algorithm };
  const make = (name, where, options) => {
    const { counter, store } = counting(redisStore({ client: where === 'cluster' ? clusterClient : redis.client }));
    // A generous store timeout: this measures load on a noisy 2-core machine, not faults.
    const limiter = createLimiter({ policy, store, prefix: `hk${Math.random().toString(36).slice(2, 8)}`, timeout: 1000, ...options });
    return { name, where, counter, limiter, algorithm };
  };
  return [
    make('plain (denyCache: false)', 'standalone', { denyCache: false }),
    make('deny cache (default)', 'standalone', {}),
    make(`prefilter '${LIMIT}/1s' + deny cache`, 'standalone', { prefilter: policy }),
    make('Cluster, no shards, denyCache: false', 'cluster', { denyCache: false }),
    make('Cluster, no shards, deny cache', 'cluster', {}),
    make(`Cluster, shards: ${SHARDS}, denyCache: false`, 'cluster', { shards: SHARDS, denyCache: false }),
    make(`Cluster, shards: ${SHARDS}, deny cache`, 'cluster', { shards: SHARDS }),
  ];
}

const all = ALGORITHMS.flatMap(modes);
const FLOODS = ['paced', 'closed'];
const results = new Map(); // `${flood}|${algorithm}|${name}` -> one entry per round
const notFromRedis = {}; // decisions from the fallback or fail-open: the store did not answer in time

async function measure(flood, m) {
  const servers = m.where === 'cluster' ? masters : [redis.client];
  const run = (ms) => (flood === 'paced' ? pacedFlood(m.limiter, LIMIT * TIMES, ms) : closedFlood(m.limiter, ms));
  await run(WARM_MS);
  await Promise.all(servers.map((c) => c.config('RESETSTAT')));
  const sentBefore = m.counter.sent;
  const f = await run(SECONDS * 1000);
  const sent = m.counter.sent - sentBefore;
  const stats = await Promise.all(servers.map(scriptStats));
  for (const [source, count] of Object.entries(f.sources)) {
    if (source === 'fallback' || source === 'fail-open') notFromRedis[source] = (notFromRedis[source] ?? 0) + count;
  }
  const id = `${flood}|${m.algorithm}|${m.name}`;
  if (!results.has(id)) results.set(id, []);
  results.get(id).push({
    rps: f.n / f.seconds,
    admittedPerSecond: f.admitted / f.seconds,
    scriptsPerRequest: stats.reduce((a, s) => a + s.calls, 0) / f.n,
    sentPerRequest: sent / f.n,
    usecPerRequest: stats.reduce((a, s) => a + s.usec, 0) / f.n,
    perMaster: m.where === 'cluster' ? stats.map((s) => ({ calls: s.calls / f.seconds, usec: s.usec / f.seconds })) : undefined,
  });
}

/** Which master holds each of the hot key's shards (and the unsharded key). */
async function homes() {
  const slots = await masters[0].cluster('SLOTS');
  const masterOf = async (hashTag) => {
    const slot = await masters[0].cluster('KEYSLOT', `{${hashTag}}`);
    const range = slots.find(([a, b]) => slot >= a && slot <= b);
    return masterPorts.indexOf(range[2][1]) + 1;
  };
  const shards = [];
  for (let s = 0; s < SHARDS; s++) shards.push(await masterOf(`${KEY}~${s}`));
  return { unsharded: await masterOf(KEY), shards };
}

try {
  for (let r = 0; r < ROUNDS; r++) {
    for (const flood of FLOODS) {
      for (const m of all) {
        await measure(flood, m);
        process.stderr.write('.');
      }
    }
  }
  process.stderr.write('\n');
  const home = await homes();

  const fmt = (n, digits = 0) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
  const cell = (xs, digits = 0) => {
    const s = spread(xs);
    return `${fmt(s.median, digits)} (${fmt(s.min, digits)}–${fmt(s.max, digits)})`;
  };
  console.log(
    `\nOne key, one process. Policy ${LIMIT}/1s. ${SECONDS} s per measurement after ${WARM_MS} ms of warm-up; ${ROUNDS} rounds; median (min–max).`,
  );
  console.log(
    `Paced: open loop at ${fmt(LIMIT * TIMES)} requests/s (${TIMES}x the limit). Closed: ${INFLIGHT} loops of await consume(), as fast as they go.`,
  );
  console.log(`Hot key's home: unsharded on master ${home.unsharded}; shards 0–${SHARDS - 1} on masters ${home.shards.join(', ')}.`);
  for (const flood of FLOODS) {
    for (const algorithm of ALGORITHMS) {
      const title = flood === 'paced' ? `paced at ${TIMES}x the limit` : `closed loop, ${INFLIGHT} in flight`;
      console.log(`\n### ${algorithm} '${LIMIT}/1s', ${title}\n`);
      console.log(
        '| mode | requests/s | flood ÷ limit | admitted/s | script calls per request | decisions sent to Redis per request | Redis µs per request |',
      );
      console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
      for (const m of all.filter((x) => x.algorithm === algorithm)) {
        const rs = results.get(`${flood}|${algorithm}|${m.name}`);
        const col = (f, d) => cell(rs.map(f), d);
        console.log(
          `| ${m.name} | ${col((x) => x.rps)} | ${fmt(spread(rs.map((x) => x.rps)).median / LIMIT)}x | ${col((x) => x.admittedPerSecond)} | ${col((x) => x.scriptsPerRequest, 3)} | ${col((x) => x.sentPerRequest, 3)} | ${col((x) => x.usecPerRequest, 2)} |`,
        );
      }
      console.log('\nPer master: script calls per second, median (Redis µs of script time per second, median)\n');
      console.log(`| mode | ${masterPorts.map((_, i) => `master ${i + 1}`).join(' | ')} | busiest master's share of calls |`);
      console.log(`| --- | ${masterPorts.map(() => '---:').join(' | ')} | ---: |`);
      for (const m of all.filter((x) => x.algorithm === algorithm && x.where === 'cluster')) {
        const rs = results.get(`${flood}|${algorithm}|${m.name}`);
        const perMaster = masterPorts.map((_, i) => {
          const calls = spread(rs.map((x) => x.perMaster[i].calls)).median;
          const usec = spread(rs.map((x) => x.perMaster[i].usec)).median;
          return `${fmt(calls)} (${fmt(usec)})`;
        });
        const share = spread(
          rs.map((x) => {
            const calls = x.perMaster.map((p) => p.calls);
            const total = calls.reduce((a, b) => a + b, 0);
            return total === 0 ? 0 : Math.max(...calls) / total;
          }),
        ).median;
        console.log(`| ${m.name} | ${perMaster.join(' | ')} | ${fmt(share * 100)}% |`);
      }
    }
  }
  const lost = Object.keys(notFromRedis).length > 0 ? JSON.stringify(notFromRedis) : 'none';
  console.log(`\nDecisions not from Redis (the store timed out, fallback or fail-open): ${lost}`);

  const { writeResults } = await import('./results.mjs');
  const withRounds = (xs) => ({ ...spread(xs), rounds: xs });
  writeResults('hotkey', {
    settings: {
      seconds: SECONDS,
      warmMs: WARM_MS,
      rounds: ROUNDS,
      max: MAX,
      limit: LIMIT,
      times: TIMES,
      inflight: INFLIGHT,
      shards: SHARDS,
    },
    home,
    decisionsNotFromRedis: notFromRedis,
    floods: FLOODS.flatMap((flood) =>
      ALGORITHMS.map((algorithm) => ({
        flood,
        algorithm,
        modes: all
          .filter((m) => m.algorithm === algorithm)
          .map((m) => {
            const rs = results.get(`${flood}|${algorithm}|${m.name}`);
            const field = (f) => withRounds(rs.map(f));
            return {
              mode: m.name,
              where: m.where,
              requestsPerSecond: field((x) => x.rps),
              admittedPerSecond: field((x) => x.admittedPerSecond),
              scriptCallsPerRequest: field((x) => x.scriptsPerRequest),
              decisionsSentPerRequest: field((x) => x.sentPerRequest),
              redisUsPerRequest: field((x) => x.usecPerRequest),
              perMaster: m.where === 'cluster' ? rs.map((x) => x.perMaster) : undefined,
            };
          }),
      })),
    ),
  });
} finally {
  stopAll();
}
