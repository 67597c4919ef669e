// The floor under the CPU targets (Redis and Node CPU per decision, CPU added per HTTP request): what
// the least any exact Redis limiter can do costs this machine, measured beside sluice in one run on one
// redis-server. Every decision of an exact limiter on Redis reads and writes its key on the server,
// inside one script so that no other client comes between; so
// the floor is a script call that does only that: a GET and a SET ... KEEPTTL per key, answering three
// integers per key as sluice's does. Beside it, the same calls doing nothing (`return {}`: a script
// call's own cost) and sluice's token bucket (its script, one decision per key, as its store sends it).
// Each is sent as calls of B keys, two calls in flight (as the store keeps them), for B = 16 (what a
// call carries under the HTTP benchmark's load: 0.05-0.07 script calls per request) and 512 (the core
// benchmark's). Redis CPU per key is the server's used_cpu_user + used_cpu_sys (INFO cpu) over the
// round, as bench/core.mjs reads it; Node CPU per key is this process' (building the calls, parsing the
// replies), for the floor's calls at 512 against sluice's limiter.consume() at 512 in flight, and against
// the least a consume() can cost: the floor's calls with a promise per key (the API's Promise<Decision>).
// Rounds interleave the contenders; figures are median (min-max) over rounds.
// Usage: pnpm build && node bench/lab/floor.mjs [--rounds 5] [--keys-per-round 40000]
import { createHash } from 'node:crypto';
import { createLimiter, redisStore } from '@sluice/core';
import { DECIDE_SCRIPT } from '../../packages/core/dist/esm/lua.generated.js';
import { arg } from '../args.mjs';
import { startRedis } from '../redis-server.mjs';
import { stats } from '../stats.mjs';

const ROUNDS = Number(arg('rounds', 5));
const PER_ROUND = Number(arg('keys-per-round', 40_000));
const KEYS = 10_000;
const BATCHES = [16, 512];
// sluice's token bucket spec (packages/core/src/store/protocol.ts): limit, window (ms) and burst high enough never to deny, no period starts.
const TB = ['tb', '1000000', '3600000', '1000000', ''];

const redis = await startRedis();
const { client } = redis;
const scripts = {
  'a script call alone (return {})': 'return {}',
  'the floor: GET + SET KEEPTTL per key': `local r = {}
for i = 1, #KEYS do
  redis.call('GET', KEYS[i])
  redis.call('SET', KEYS[i], '1764806400000000', 'KEEPTTL')
  r[3 * i - 2] = 999999 r[3 * i - 1] = 3600000 r[3 * i] = 0
end
return r`,
};
const shas = {};
for (const [name, body] of Object.entries(scripts)) shas[name] = await client.script('LOAD', body);
const decideSha = createHash('sha1').update(DECIDE_SCRIPT).digest('hex');
await client.script('LOAD', DECIDE_SCRIPT);
const SLUICE = "sluice's token bucket (its script)";

// Every key exists with a TTL, as a limiter's do between decisions.
for (let k = 0; k < KEYS; k += 1000) {
  const batch = client.pipeline();
  for (let j = k; j < k + 1000; j++) batch.set(`floor:{k${j}}:t`, '1764806400000000', 'PX', 3_600_000);
  await batch.exec();
}

/** Redis' and this process' CPU µs per key of `work`, which resolves to how many keys it decided. */
async function perKey(work) {
  const redisBefore = await redis.cpuUs();
  const nodeBefore = process.cpuUsage();
  const keys = await work();
  const node = process.cpuUsage(nodeBefore);
  return { redis: ((await redis.cpuUs()) - redisBefore) / keys, node: (node.user + node.system) / keys };
}

/** The number of the last script call, for the script's call guard. */
let guarded = 0;

/** Sends `total` keys as calls of `batch`, two in flight. */
function calls(name, batch, total) {
  let next = 0;
  const lane = async () => {
    while (next < total) {
      const keys = [];
      // sluice's script on keys of its own, in the state it writes (packed), not the floor's text.
      const suffix = name === SLUICE ? 's' : 't';
      for (let i = 0; i < batch; i++) keys.push(`floor:{k${next++ % KEYS}}:${suffix}`);
      if (name === SLUICE) {
        // The call guard and one run of `batch` consumes of cost 1, no id, no slot, under one spec (protocol.ts's layout).
        const args = [String(++guarded), '', '1', ...TB, String(batch), 'c', '1', '0', '', '1', '1'];
        await client.evalshaBuffer(decideSha, keys.length + 1, ['floor:guard', ...keys], args);
      } else await client.evalshaBuffer(shas[name], keys.length, keys);
    }
  };
  return perKey(() => Promise.all([lane(), lane()]).then(() => next));
}

// sluice's keys written once by its script, as the floor's are above.
await calls(SLUICE, 512, KEYS);

// sluice whole: its limiter on its store, 512 consumes in flight.
const limiter = createLimiter({
  policy: { limit: 1_000_000, window: '1h' },
  store: redisStore({ client }),
  prefix: 'floor-sluice',
  timeout: 10_000,
});
function consumes(total) {
  let next = 0;
  const lane = async () => {
    while (next < total) await limiter.consume(`k${next++ % KEYS}`);
  };
  return perKey(() => Promise.all(Array.from({ length: 512 }, lane)).then(() => next));
}
const WHOLE = 'sluice limiter.consume() at 512 in flight';
await consumes(KEYS);

// The least any consume() that answers each key with its own promise can cost this process, whatever
// it does inside: the floor's script, each key's caller awaiting a promise of a Decision-shaped object,
// the keys asked in one turn sent together (as sluice's store does), 512 in flight. What `Promise<Decision>`
// per call costs over the raw calls before any limiter work.
let asked = [];
const sendAsked = () => {
  const batch = asked;
  asked = [];
  const keys = batch.map((p) => p.key);
  client.evalshaBuffer(shas['the floor: GET + SET KEEPTTL per key'], keys.length, keys).then((v) => {
    for (let i = 0; i < batch.length; i++) {
      const remaining = v[3 * i];
      batch[i].resolve({
        allowed: true,
        limit: 1_000_000,
        remaining,
        resetMs: v[3 * i + 1],
        retryAfterMs: 0,
        policy: 'p',
        policies: [],
        source: 'store',
      });
    }
  });
};
const leastConsume = (key) =>
  new Promise((resolve) => {
    if (asked.push({ key: `floor:{${key}}:t`, resolve }) === 1) setImmediate(sendAsked);
  });
function leastConsumes(total) {
  let next = 0;
  const lane = async () => {
    while (next < total) await leastConsume(`k${next++ % KEYS}`);
  };
  return perKey(() => Promise.all(Array.from({ length: 512 }, lane)).then(() => next));
}
const LEAST = 'a promise per key on the floor (the least a consume() can cost) at 512 in flight';
await leastConsumes(KEYS);

const names = [...Object.keys(scripts), SLUICE];
const figures = {};
const put = (key, f) => {
  figures[key] ??= { redis: [], node: [] };
  figures[key].redis.push(f.redis);
  figures[key].node.push(f.node);
};
for (let round = 0; round < ROUNDS; round++) {
  for (const batch of BATCHES) {
    const order = round % 2 === 0 ? names : [...names].reverse();
    for (const name of order) put(`${name} @${batch}`, await calls(name, batch, PER_ROUND));
  }
  for (const [name, run] of round % 2 === 0
    ? [
        [WHOLE, consumes],
        [LEAST, leastConsumes],
      ]
    : [
        [LEAST, leastConsumes],
        [WHOLE, consumes],
      ])
    put(name, await run(PER_ROUND));
  console.log(`round ${round + 1}/${ROUNDS} done`);
}

const cell = (xs) => {
  const { min, median, max } = stats(xs);
  return `${median.toFixed(2)} (${min.toFixed(2)}–${max.toFixed(2)})`;
};
console.log(`\n| what | keys per call | Redis CPU µs per key | Node CPU µs per key |`);
console.log('| --- | ---: | ---: | ---: |');
const rows = {};
const row = (key, name, batch) => {
  const f = figures[key];
  rows[key] = { redis: stats(f.redis), node: stats(f.node) };
  console.log(`| ${name} | ${batch} | ${cell(f.redis)} | ${cell(f.node)} |`);
};
for (const batch of BATCHES) for (const name of names) row(`${name} @${batch}`, name, batch);
row(LEAST, LEAST, '(per turn)');
row(WHOLE, WHOLE, "(the store's)");

const floor = (batch) => stats(figures[`the floor: GET + SET KEEPTTL per key @${batch}`].redis).median;
const alone = (batch) => stats(figures[`a script call alone (return {}) @${batch}`].redis).median;
console.log(`
Against the CPU targets (medians):
- Redis CPU per decision at 512 in flight, target at most 1.5 µs: the floor is ${floor(512).toFixed(2)} µs per key; sluice's script ${stats(figures[`${SLUICE} @512`].redis).median.toFixed(2)}.
- CPU added per HTTP request, target at most 3 µs (server + Redis) on Fastify and Koa: at ${BATCHES[0]} keys per call, Redis alone spends ${floor(BATCHES[0]).toFixed(2)} µs per key on the floor (${alone(BATCHES[0]).toFixed(2)} of it the call's own cost), before the server's share.
- Node CPU per decision at 512 in flight, target at most 1.2 µs: sluice's consume() ${stats(figures[WHOLE].node).median.toFixed(2)} µs, the floor's raw calls ${stats(figures[`the floor: GET + SET KEEPTTL per key @512`].node).median.toFixed(2)} µs, a promise per key on them ${stats(figures[LEAST].node).median.toFixed(2)} µs.`);

const { writeResults } = await import('../results.mjs');
writeResults('floor', { rounds: ROUNDS, keysPerRound: PER_ROUND, rows });
await limiter.close();
await redis.stop();
process.exit(0);
