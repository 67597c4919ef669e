// Several limiters in one process, as an app has them (app-wide, login, plans), each with its own store on
// one ioredis client: Node CPU per decision with ten limiters against one. Per round, each build runs, in
// a process of its own for each, 512 consumes in flight over 10,000 keys for --seconds after a 1 s
// warm-up: on one limiter; on ten in turn (each for a tenth of the run, as bench/core.mjs runs its
// contenders); and on ten mixed (the n-th consume on limiter n mod 10, so each store batches a tenth of
// the decisions: ten times the script calls, each with its fixed cost). Node CPU per decision is
// process.cpuUsage() over the run / decisions, the benchmark's loop included. Prints each build's µs per
// decision, median (min–max) over rounds, and ten over one within each round (in turn: at most 1.10).
// Usage: pnpm build && node bench/limiters.mjs [--rounds 5] [--seconds 2] [--builds .,../other-checkout]
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { arg } from './args.mjs';
import { commitOf } from './builds.mjs';
import { startRedis } from './redis-server.mjs';
import { stats } from './stats.mjs';

/** Each run: how many limiters, and how consumes go to them. */
const RUNS = [
  { name: '1', count: 1, mode: 'turn' },
  { name: '10 in turn', count: 10, mode: 'turn' },
  { name: '10 mixed', count: 10, mode: 'mixed' },
];
const KEYS = 10_000;
const self = fileURLToPath(import.meta.url);
const [, , childDir, childPort, childSeconds, childCount, childMode] = process.argv;

if (childMode !== undefined && !childDir.startsWith('--')) {
  // A child: one build with `childCount` limiters, used in turn or mixed.
  const { createLimiter, redisStore } = await import(pathToFileURL(`${childDir}/packages/core/dist/esm/index.js`).href);
  const { default: Redis } = await import('ioredis');
  const client = new Redis({ port: Number(childPort) });
  await new Promise((ready) => client.once('ready', ready));
  const limiters = Array.from({ length: Number(childCount) }, (_, i) =>
    createLimiter({
      policy: { limit: 1_000_000 + i, window: '1h' },
      store: redisStore({ client }),
      prefix: `lim${process.pid}-${i}`,
      timeout: 10_000,
    }),
  );
  let n = 0;
  let off = 0;
  const loop = async (ms) => {
    const start = performance.now();
    const slice = ms / limiters.length;
    await Promise.all(
      Array.from({ length: 512 }, async () => {
        for (let t = performance.now(); t < start + ms; t = performance.now()) {
          const i = n++;
          const limiter = limiters[childMode === 'mixed' ? i % limiters.length : Math.floor((t - start) / slice)];
          if ((await limiter.consume(`k${i % KEYS}`)).source !== 'store') off++;
        }
      }),
    );
  };
  await loop(1000);
  n = 0;
  const cpu = process.cpuUsage();
  await loop(Number(childSeconds) * 1000);
  const used = process.cpuUsage(cpu);
  if (off > 0) throw new Error(`${off} decisions did not come from Redis: the figure is void`);
  console.log(JSON.stringify({ cpuUs: (used.user + used.system) / n, decisions: n }));
  client.disconnect();
} else {
  const builds = String(arg('builds', '.'))
    .split(',')
    .map((b) => resolve(b));
  const rounds = Number(arg('rounds', 5));
  const seconds = Number(arg('seconds', 2));
  const redis = await startRedis();
  const cpu = new Map(builds.flatMap((b) => RUNS.map((run) => [`${b} ${run.name}`, []])));
  for (let r = 0; r < rounds; r++) {
    for (const b of builds) {
      for (const { name, count, mode } of RUNS) {
        const args = [self, b, String(redis.port), String(seconds), String(count), mode];
        cpu.get(`${b} ${name}`).push(JSON.parse(execFileSync(process.execPath, args, { encoding: 'utf8' })).cpuUs);
      }
    }
  }
  redis.stop();
  const cell = (xs, digits = 2) => {
    const s = stats(xs);
    return `${s.median.toFixed(digits)} (${s.min.toFixed(digits)}–${s.max.toFixed(digits)})`;
  };
  console.log(
    '\n| build | Node CPU µs per decision: 1 limiter | 10 in turn | 10 mixed | 10 in turn / 1, per round (target ≤ 1.10) | 10 mixed / 1 |',
  );
  console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
  const withRounds = (xs) => ({ ...stats(xs), rounds: xs });
  const figures = [];
  for (const b of builds) {
    const [one, turn, mixed] = RUNS.map((run) => cpu.get(`${b} ${run.name}`));
    const over = (xs) => xs.map((us, r) => us / one[r]);
    const commit = commitOf(b);
    console.log(`| ${b} (${commit}) | ${cell(one)} | ${cell(turn)} | ${cell(mixed)} | ${cell(over(turn))}x | ${cell(over(mixed))}x |`);
    figures.push({
      build: b,
      commit,
      cpuUsPerDecision: { one: withRounds(one), tenInTurn: withRounds(turn), tenMixed: withRounds(mixed) },
      overOne: { tenInTurn: withRounds(over(turn)), tenMixed: withRounds(over(mixed)) },
    });
  }
  const { writeResults } = await import('./results.mjs');
  writeResults('limiters', { settings: { seconds, rounds, keys: KEYS, inflight: 512 }, builds: figures });
}
