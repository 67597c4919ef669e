// µs per consume() on the memory store, of builds each in its own process, per round in turn: 100,000
// consumes over 10,000 keys, awaited one at a time (each waits for its own turn of the event loop) and 64 in
// flight (the decisions asked in a turn are made together). Prints each build's wall and CPU µs per consume,
// median (min–max) over rounds.
// Usage: pnpm build && node bench/lab/memory-cpu.mjs --builds ../base,. [--rounds 5]
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { arg } from '../args.mjs';
import { stats } from '../stats.mjs';

const self = fileURLToPath(import.meta.url);
const N = 100_000;
const [, , childDir, childInFlight] = process.argv;
if (childInFlight !== undefined && !childDir.startsWith('--')) {
  // A child: one build, one run after one to warm up; prints wall and CPU µs per consume.
  const { createLimiter, memoryStore } = await import(pathToFileURL(`${childDir}/packages/core/dist/esm/index.js`).href);
  const limiter = createLimiter({ policy: { limit: 1e9, window: '1s' }, store: memoryStore() });
  const keys = Array.from({ length: 10_000 }, (_, i) => `key-${i}`);
  const run = async () => {
    let next = 0;
    const caller = async () => {
      while (next < N) await limiter.consume(keys[next++ % keys.length]);
    };
    await Promise.all(Array.from({ length: Number(childInFlight) }, caller));
  };
  await run();
  const cpu = process.cpuUsage();
  const start = performance.now();
  await run();
  const used = process.cpuUsage(cpu);
  console.log(JSON.stringify({ wall: ((performance.now() - start) * 1000) / N, cpu: (used.user + used.system) / N }));
} else {
  const builds = arg('builds', '.').split(',');
  const rounds = Number(arg('rounds', 5));
  const fmt = (xs) => {
    const s = stats(xs);
    return `${s.median.toFixed(2)} (${s.min.toFixed(2)}–${s.max.toFixed(2)})`;
  };
  for (const inFlight of [1, 64]) {
    const runs = builds.map(() => []);
    for (let r = 0; r < rounds; r++) {
      for (const [i, build] of builds.entries()) {
        runs[i].push(JSON.parse(execFileSync(process.execPath, [self, resolve(build), String(inFlight)], { encoding: 'utf8' })));
      }
    }
    for (const [i, build] of builds.entries()) {
      const mine = runs[i];
      console.log(
        `${build}, ${inFlight} in flight: wall µs per consume ${fmt(mine.map((m) => m.wall))}, CPU ${fmt(mine.map((m) => m.cpu))}`,
      );
    }
  }
}
