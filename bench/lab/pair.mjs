// Node CPU per decision of two builds (or two modes) side by side, in one process: both builds'
// @sluice/core are loaded (each a module of its own, with a client of its own on one redis-server), and
// short slices of A and B alternate, so that both see the same machine, the same Redis and a warm JIT.
// On this shared VM one run's Node CPU per decision moves by a quarter from one minute to the next;
// slices a second apart do not. A slice: 512 calls of consume() in flight over 10,000 keys for --slice
// ms; its figure is this process' CPU µs per decision (the loop included). The ratio B / A is taken
// per round (one slice of each, in an order that alternates).
//   --a DIR, --b DIR    checkouts whose packages/core is built (default: this one); DIR may be a git
//                       worktree of an older commit (git worktree add ../old <commit>; pnpm i; pnpm build)
//   --mode-a, --mode-b  tb (the limiter's own token bucket, the default), call (the same policy given
//                       per call, as a plan object built per request), day (a calendar quota) or slot
//                       (a consume on a concurrent policy, then its release(): figures per pair)
// Usage: pnpm build && node bench/lab/pair.mjs [--a DIR] [--b DIR] [--mode-a tb] [--mode-b tb] [--rounds 20] [--slice 500]
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import Redis from 'ioredis';
import { arg } from '../args.mjs';
import { startRedis } from '../redis-server.mjs';

const here = fileURLToPath(new URL('../..', import.meta.url));
const ROUNDS = Number(arg('rounds', 20));
const SLICE_MS = Number(arg('slice', 500));
const PLAN = { limit: 1_000_000, window: '1h' };
const MODES = ['tb', 'call', 'day', 'slot'];
const POLICIES = { tb: PLAN, day: '1000000000/day', slot: { concurrent: 100_000, lease: '30s' } };

const redis = await startRedis();
let offStore = 0;

/** One side: a build's limiter in a mode, and a loop that runs it for a slice. */
async function side(name, dir, mode, prefix) {
  if (!MODES.includes(mode)) throw new Error(`--mode-${name} is tb, call, day or slot, got ${JSON.stringify(mode)}`);
  const { createLimiter, redisStore } = await import(pathToFileURL(resolve(dir, 'packages/core/dist/esm/index.js')).href);
  const client = new Redis({ port: redis.port });
  // The store refuses calls before its client's first connect.
  await new Promise((ready, fail) => client.once('ready', ready).once('error', fail));
  const limiter = createLimiter({
    ...(mode === 'call' ? {} : { policy: POLICIES[mode] }),
    store: redisStore({ client }),
    prefix,
    timeout: 10_000,
  });
  // A plan object built per request, as an app builds it from its user's plan.
  const consume = mode === 'call' ? (key) => limiter.consume(key, { policy: { ...PLAN } }) : (key) => limiter.consume(key);
  const release = mode === 'slot';
  return {
    label: `${dir} (${mode})`,
    async slice(ms) {
      let n = 0;
      const end = performance.now() + ms;
      const cpu = process.cpuUsage();
      await Promise.all(
        Array.from({ length: 512 }, async () => {
          while (performance.now() < end) {
            const d = await consume(`k${n++ % 10_000}`);
            if (d.source !== 'store') offStore++;
            if (release) await d.release();
          }
        }),
      );
      const used = process.cpuUsage(cpu);
      return (used.user + used.system) / n;
    },
    async close() {
      await limiter.close();
      client.disconnect();
    },
  };
}

const a = await side('a', resolve(arg('a', here)), arg('mode-a', 'tb'), 'pair-a');
const b = await side('b', resolve(arg('b', here)), arg('mode-b', 'tb'), 'pair-b');
console.log(`A: ${a.label}\nB: ${b.label}\n${ROUNDS} rounds of one ${SLICE_MS} ms slice each, the order alternating`);
await a.slice(1000);
await b.slice(1000);
const rows = [];
for (let r = 0; r < ROUNDS; r++) {
  const [first, second] = r % 2 === 0 ? [a, b] : [b, a];
  const one = await first.slice(SLICE_MS);
  const other = await second.slice(SLICE_MS);
  const [x, y] = first === a ? [one, other] : [other, one];
  rows.push({ a: x, b: y, ratio: y / x });
}
await a.close();
await b.close();
redis.stop();
if (offStore > 0) throw new Error(`${offStore} decisions did not come from Redis: the figures are void`);
const sorted = (xs) => [...xs].sort((p, q) => p - q);
const mid = (xs) => sorted(xs)[Math.floor(xs.length / 2)];
const span = (xs) => `${mid(xs).toFixed(3)} (${sorted(xs)[0].toFixed(3)}–${sorted(xs).at(-1).toFixed(3)})`;
console.log(`A µs per decision (per pair in slot mode): ${span(rows.map((r) => r.a))}`);
console.log(`B µs per decision (per pair in slot mode): ${span(rows.map((r) => r.b))}`);
console.log(`B / A per round: median ${span(rows.map((r) => r.ratio))}`);
