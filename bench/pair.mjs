// Node CPU per decision of two builds (or two modes) side by side: runs alternate, A then B, each a
// fresh process on a fresh redis-server, and the ratio B / A is taken per pair. On this shared VM one
// run's Node CPU per decision moves by a quarter from one minute to the next; pairs a few seconds apart
// see the same machine. A run: 512 calls of consume() in flight over 10,000 keys, 1 s of warm-up, then
// --seconds measured; it prints Node CPU µs per decision (this process, the loop included).
//   --a DIR, --b DIR    checkouts whose packages/core is built (default: this one); DIR may be a git
//                       worktree of an older commit (git worktree add ../old <commit>; pnpm i; pnpm build)
//   --mode-a, --mode-b  tb (the limiter's own token bucket, the default), call (the same policy given
//                       per call, as a plan object built per request) or day (a calendar quota)
// Usage: pnpm build && node bench/pair.mjs [--a DIR] [--b DIR] [--mode-a tb] [--mode-b tb] [--pairs 8] [--seconds 2]
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { arg } from './args.mjs';
import { startRedis } from './redis-server.mjs';

const here = fileURLToPath(new URL('..', import.meta.url));
const SECONDS = Number(arg('seconds', 2));
const MODES = { tb: { limit: 1_000_000, window: '1h' }, call: { limit: 1_000_000, window: '1h' }, day: '1000000000/day' };

if (process.argv[2] === '--run') await run(process.argv[3], process.argv[4]);
else driver();

async function run(dir, mode) {
  const { createLimiter, redisStore } = await import(pathToFileURL(resolve(dir, 'packages/core/dist/esm/index.js')).href);
  const redis = await startRedis();
  const perCall = mode === 'call';
  const limiter = createLimiter({
    ...(perCall ? {} : { policy: MODES[mode] }),
    store: redisStore({ client: redis.client }),
    prefix: 'pair',
    timeout: 10_000,
  });
  let n = 0;
  let offStore = 0;
  const loop = async (ms) => {
    const end = performance.now() + ms;
    await Promise.all(
      Array.from({ length: 512 }, async () => {
        while (performance.now() < end) {
          const key = `k${n++ % 10_000}`;
          const d = await (perCall ? limiter.consume(key, { policy: { limit: 1_000_000, window: '1h' } }) : limiter.consume(key));
          if (d.source !== 'store') offStore++;
        }
      }),
    );
  };
  await loop(1000);
  n = 0;
  const cpu = process.cpuUsage();
  await loop(SECONDS * 1000);
  const used = process.cpuUsage(cpu);
  await limiter.close();
  redis.stop();
  if (offStore > 0) throw new Error(`${offStore} decisions did not come from Redis: the figure is void`);
  console.log(((used.user + used.system) / n).toFixed(3));
  process.exit(0);
}

function driver() {
  const a = { dir: resolve(arg('a', here)), mode: arg('mode-a', 'tb') };
  const b = { dir: resolve(arg('b', here)), mode: arg('mode-b', 'tb') };
  for (const m of [a.mode, b.mode]) if (!(m in MODES)) throw new Error(`a mode is tb, call or day, got ${JSON.stringify(m)}`);
  const pairs = Number(arg('pairs', 8));
  const once = (side) =>
    Number(
      execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--run', side.dir, side.mode, '--seconds', String(SECONDS)], {
        encoding: 'utf8',
      }),
    );
  console.log(`A: ${a.dir} (${a.mode}); B: ${b.dir} (${b.mode}); ${pairs} pairs of ${SECONDS} s runs`);
  console.log('| pair | A µs | B µs | B / A |\n| ---: | ---: | ---: | ---: |');
  const ratios = [];
  for (let i = 1; i <= pairs; i++) {
    const x = once(a);
    const y = once(b);
    ratios.push(y / x);
    console.log(`| ${i} | ${x.toFixed(2)} | ${y.toFixed(2)} | ${(y / x).toFixed(3)} |`);
  }
  ratios.sort((p, q) => p - q);
  const median = ratios[Math.floor(ratios.length / 2)];
  console.log(`\nB / A, Node CPU per decision: median ${median.toFixed(3)} (${ratios[0].toFixed(3)}–${ratios.at(-1).toFixed(3)})`);
}
