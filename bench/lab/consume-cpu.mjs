// Node CPU µs per consume() of builds each alone in its own process (pair.mjs runs two builds in one
// process, where builds far apart disturb each other's JIT through the bench's shared call sites): per
// round, each build in turn runs 512 consumes in flight over 10,000 keys for --seconds after a 1 s warm-up,
// on one redis-server started here. Prints each build's µs per consume, median (min–max) over rounds.
// Usage: pnpm build && node bench/lab/consume-cpu.mjs --builds ../base,. [--rounds 4] [--seconds 3]
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { arg } from '../args.mjs';
import { startRedis } from '../redis-server.mjs';
import { stats } from '../stats.mjs';

const self = fileURLToPath(import.meta.url);
const [, , childDir, childPort, childSeconds] = process.argv;
if (childPort !== undefined && !childDir.startsWith('--')) {
  // A child: one build's run.
  const { createLimiter, redisStore } = await import(pathToFileURL(`${childDir}/packages/core/dist/esm/index.js`).href);
  const { default: Redis } = await import('ioredis');
  const client = new Redis({ port: Number(childPort) });
  await new Promise((ready) => client.once('ready', ready));
  const limiter = createLimiter({
    policy: { limit: 1_000_000, window: '1h' },
    store: redisStore({ client }),
    prefix: `cpu${process.pid}`,
    timeout: 10_000,
  });
  let n = 0;
  let off = 0;
  const loop = async (ms) => {
    const end = performance.now() + ms;
    await Promise.all(
      Array.from({ length: 512 }, async () => {
        while (performance.now() < end) if ((await limiter.consume(`k${n++ % 10_000}`)).source !== 'store') off++;
      }),
    );
  };
  await loop(1000);
  n = 0;
  const cpu = process.cpuUsage();
  await loop(Number(childSeconds) * 1000);
  const used = process.cpuUsage(cpu);
  if (off > 0) throw new Error(`${off} decisions did not come from Redis: the figure is void`);
  console.log(((used.user + used.system) / n).toFixed(3));
  client.disconnect();
} else {
  const builds = String(arg('builds', '.'))
    .split(',')
    .map((b) => resolve(b));
  const rounds = Number(arg('rounds', 4));
  const seconds = Number(arg('seconds', 3));
  const redis = await startRedis();
  const runs = new Map(builds.map((b) => [b, []]));
  for (let r = 0; r < rounds; r++) {
    for (const b of builds) {
      const out = execFileSync(process.execPath, [self, b, String(redis.port), String(seconds)], { encoding: 'utf8' });
      runs.get(b).push(Number(out.trim()));
    }
  }
  redis.stop();
  for (const [b, xs] of runs) {
    const { min, median, max } = stats(xs);
    console.log(`${b}: ${median.toFixed(3)} µs per consume (${min.toFixed(3)}–${max.toFixed(3)}) over ${rounds} rounds`);
  }
}
