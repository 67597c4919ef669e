// Node CPU per consume() of the limiter's own stages, without Redis or a client: the store answers every
// call in the next turn of the event loop (a `decideWith` that queues, as the Redis store's dispatcher
// does), so what is measured is the limiter, its store call, its deadline and its Decision alone, and no
// batching that Redis' speed would change. Each build runs alone in its own process, alternating per
// round: 300,000 consumes to warm up, then --consumes at 512 in flight. Prints ns per consume, median
// (min–max) over rounds. Usage: pnpm build && node bench/lab/stage-cpu.mjs --builds ../base,. [--rounds 6]
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { arg } from '../args.mjs';
import { stats } from '../stats.mjs';

const self = fileURLToPath(import.meta.url);
const [, , childDir, childCount] = process.argv;
if (childCount !== undefined && !childDir.startsWith('--')) {
  const { createLimiter } = await import(pathToFileURL(`${childDir}/packages/core/dist/esm/index.js`).href);
  const reply = () => ({ allowed: true, states: [{ remaining: 5, resetMs: 1000, retryAfterMs: 0 }] });
  let queue = [];
  const flush = () => {
    const q = queue;
    queue = [];
    for (const [, done] of q) done(undefined, reply());
  };
  const store = {
    local: false,
    decide: () => Promise.reject(new Error('decideWith only')),
    decideWith(request, done) {
      if (queue.push([request, done]) === 1) setImmediate(flush);
    },
    reset: async () => {},
    close: async () => {},
  };
  const limiter = createLimiter({ policy: { limit: 1_000_000, window: '1h' }, store, timeout: 60_000 });
  const keys = Array.from({ length: 10_000 }, (_, i) => `k${i}`);
  let n = 0;
  const loop = (count) =>
    Promise.all(
      Array.from({ length: 512 }, async () => {
        while (n < count) {
          n++;
          if ((await limiter.consume(keys[n % 10_000])).source !== 'store') throw new Error('not the store');
        }
      }),
    );
  await loop(300_000);
  n = 0;
  const count = Number(childCount);
  const cpu = process.cpuUsage();
  await loop(count);
  const used = process.cpuUsage(cpu);
  console.log(((1000 * (used.user + used.system)) / count).toFixed(0));
} else {
  const builds = String(arg('builds', '.'))
    .split(',')
    .map((b) => resolve(b));
  const rounds = Number(arg('rounds', 6));
  const consumes = String(arg('consumes', 1_000_000));
  const runs = new Map(builds.map((b) => [b, []]));
  for (let r = 0; r < rounds; r++) {
    for (const b of builds) runs.get(b).push(Number(execFileSync(process.execPath, [self, b, consumes], { encoding: 'utf8' }).trim()));
  }
  for (const [b, xs] of runs) {
    const { min, median, max } = stats(xs);
    console.log(`${b}: ${median} ns per consume (${min}–${max}) over ${rounds} rounds`);
  }
}
