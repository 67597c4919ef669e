// Overload benchmark (issue 29): a server per framework whose handler burns 2 ms of CPU, offered an open-loop
// rate (requests sent on a schedule, whatever the answers: a request's latency counts from when it was due,
// so a slow server cannot slow the load down) of 0.5x, 1x, 2x and 4x its measured capacity. Contenders side by
// side in each round: no protection, @fastify/under-pressure (Fastify; maxEventLoopDelay 100 ms sampled every
// 100 ms, the same signal and threshold as sluice's default targetDelay) and sluice's shed() with its defaults.
// Each (contender, load) gets a fresh server process on 127.0.0.1, so no backlog carries over. Capacity: the
// unprotected server's req/s under 16 closed-loop connections (autocannon), once per framework.
// Per load: goodput (2xx answered within 250 ms of being due, per second), p50/p99 of admitted (2xx) requests,
// share shed (503), share lost (no answer within the drain); then 4x with every fifth request critical
// (x-priority: critical), and the share of those that got a 2xx within 250 ms.
// Usage: pnpm build && node bench/overload.mjs [--seconds 2 --rounds 3 --frameworks express,fastify,koa]
import { fork } from 'node:child_process';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { arg } from './args.mjs';
import { openLoop } from './open-loop.mjs';
import { writeResults } from './results.mjs';
import { stats } from './stats.mjs';

const require = createRequire(import.meta.url);
const SECONDS = Number(arg('seconds', 2));
const ROUNDS = Number(arg('rounds', 3));
const FRAMEWORKS = arg('frameworks', 'express,fastify,koa').split(',');
const LOADS = ['0.5', '1', '2', '4'];
const GOOD_MS = 250;
const DRAIN_MS = 1000;
const CONTENDERS = { express: ['none', 'sluice'], fastify: ['none', 'under-pressure', 'sluice'], koa: ['none', 'sluice'] };

// ---------------------------------------------------------------- the server (a child process)

function burn(ms) {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // the handler's CPU work
  }
  return { ok: true };
}
const priority = (header) => (header === 'critical' ? 'critical' : 'normal');

async function serve(framework, contender) {
  let server;
  if (framework === 'fastify') {
    const app = (await import('fastify')).default();
    if (contender === 'sluice')
      await app.register((await import('@sluice/fastify')).shed, { priority: (r) => priority(r.headers['x-priority']) });
    if (contender === 'under-pressure') {
      await app.register((await import('@fastify/under-pressure')).default, { maxEventLoopDelay: 100, sampleInterval: 100 });
    }
    app.get('/', async () => burn(2));
    await app.listen({ port: 0, host: '127.0.0.1' });
    server = app.server;
  } else if (framework === 'express') {
    const app = (await import('express')).default();
    if (contender === 'sluice') app.use((await import('@sluice/express')).shed({ priority: (req) => priority(req.headers['x-priority']) }));
    app.get('/', (_req, res) => res.json(burn(2)));
    server = await new Promise((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
  } else {
    const app = new (await import('koa')).default();
    if (contender === 'sluice') app.use((await import('@sluice/koa')).shed({ priority: (ctx) => priority(ctx.get('x-priority')) }));
    app.use((ctx) => {
      ctx.body = burn(2);
    });
    server = await new Promise((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
  }
  process.send({ port: server.address().port });
  process.on('disconnect', () => process.exit(0));
}

// ---------------------------------------------------------------- the load (this process)

function start(framework, contender) {
  const child = fork(new URL(import.meta.url), ['--serve', framework, contender], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('message', ({ port }) => resolve({ port, stop: () => child.kill('SIGKILL') }));
    child.once('exit', (code) => reject(new Error(`${framework}/${contender} server exited with ${code}`)));
  });
}

const percentile = (sorted, p) => (sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]);

function summarize(results, seconds) {
  const ok = results.filter((r) => r.status >= 200 && r.status < 300);
  const admitted = ok.map((r) => r.ms).sort((a, b) => a - b);
  const critical = results.filter((r) => r.critical);
  const good = (r) => r.status >= 200 && r.status < 300 && r.ms <= GOOD_MS;
  return {
    goodput: results.filter(good).length / seconds,
    p50: percentile(admitted, 0.5),
    p99: percentile(admitted, 0.99),
    shed: results.filter((r) => r.status === 503).length / results.length,
    lost: results.filter((r) => r.status === 0).length / results.length,
    critical: critical.length === 0 ? undefined : critical.filter(good).length / critical.length,
  };
}

async function capacity(framework) {
  const autocannon = require('autocannon');
  const server = await start(framework, 'none');
  const run = (duration) => autocannon({ url: `http://127.0.0.1:${server.port}/`, connections: 16, duration });
  await run(1);
  const result = await run(3);
  server.stop();
  return result.requests.average;
}

async function measure(framework, contender, rate, criticalEvery) {
  const server = await start(framework, contender);
  await openLoop({ port: server.port, rate: 100, seconds: 0.3 }); // warm-up, well below capacity
  const results = await openLoop({ port: server.port, rate, seconds: SECONDS, criticalEvery, drainMs: DRAIN_MS });
  server.stop();
  return summarize(results, SECONDS);
}

const fmt = (s, digits = 0) => `${s.median.toFixed(digits)} (${s.min.toFixed(digits)}–${s.max.toFixed(digits)})`;
const pct = (s) => `${(s.median * 100).toFixed(1)}% (${(s.min * 100).toFixed(1)}–${(s.max * 100).toFixed(1)})`;

async function main() {
  const figures = { seconds: SECONDS, rounds: ROUNDS, goodMs: GOOD_MS, frameworks: {} };
  const began = performance.now();
  for (const framework of FRAMEWORKS) {
    const cap = await capacity(framework);
    console.log(`\n${framework}: capacity ${cap.toFixed(0)} req/s (2 ms handler, 16 closed-loop connections)`);
    const runs = {}; // contender -> load label -> [summary per round]
    for (let round = 0; round < ROUNDS; round++) {
      for (const contender of CONTENDERS[framework]) {
        runs[contender] ??= {};
        for (const load of [...LOADS, 'critical']) {
          const rate = cap * (load === 'critical' ? 4 : Number(load));
          const summary = await measure(framework, contender, rate, load === 'critical' ? 5 : 0);
          runs[contender][load] ??= [];
          runs[contender][load].push(summary);
        }
      }
    }
    figures.frameworks[framework] = { capacity: cap, contenders: {} };
    console.log('| contender | load | goodput req/s | p50 ms | p99 ms | shed | lost |');
    console.log('|---|---|---|---|---|---|---|');
    for (const [contender, byLoad] of Object.entries(runs)) {
      const out = {};
      figures.frameworks[framework].contenders[contender] = out;
      for (const load of [...LOADS, 'critical']) {
        const rs = byLoad[load];
        const s = Object.fromEntries(
          ['goodput', 'p50', 'p99', 'shed', 'lost', 'critical'].map((k) => [k, stats(rs.map((r) => r[k] ?? 0))]),
        );
        out[load] = s;
        const label = load === 'critical' ? '4x, 20% critical' : `${load}x`;
        const crit = load === 'critical' ? `; critical 2xx in ${GOOD_MS} ms: ${pct(s.critical)}` : '';
        console.log(
          `| ${contender} | ${label} | ${fmt(s.goodput)} | ${fmt(s.p50, 1)} | ${fmt(s.p99, 1)} | ${pct(s.shed)} | ${pct(s.lost)}${crit} |`,
        );
      }
      const at1 = out[1].goodput.median;
      console.log(
        `| ${contender} | goodput at 2x / 1x, 4x / 1x | ${(out[2].goodput.median / at1).toFixed(2)}, ${(out[4].goodput.median / at1).toFixed(2)} |`,
      );
    }
  }
  console.log(`\n(${((performance.now() - began) / 1000).toFixed(0)} s; median (min–max) over ${ROUNDS} rounds of ${SECONDS} s)`);
  writeResults('overload', figures);
}

if (process.argv[2] === '--serve') await serve(process.argv[3], process.argv[4]);
else await main();
