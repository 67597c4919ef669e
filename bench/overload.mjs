// Overload benchmark: a server per framework whose handler burns 2 ms of CPU, offered an open-loop
// rate (requests sent on a schedule, whatever the answers: a request's latency counts from when it was due,
// so a slow server cannot slow the load down) of 0.5x, 1x, 2x and 4x its capacity. Contenders side by side:
// no protection, @fastify/under-pressure (Fastify; maxEventLoopDelay 100 ms sampled every 100 ms, the same
// signal and threshold as sluice's default targetDelay) and sluice's shed() (its defaults, or --shed JSON;
// mounted in front of the app on node:http unless --mount app: each adapter's shedGuard, Fastify's
// through its serverFactory).
// The load generator is this process; each (contender, load) gets a fresh server in a child process on
// 127.0.0.1, so no backlog carries over. Each round measures capacity again (the unprotected server's req/s
// under 16 closed-loop connections, autocannon: on a shared machine what the server gets of a core moves),
// then runs each load with the contenders in turn, so that the contenders of one load meet the same machine.
// Per load: goodput (2xx answered within 250 ms of being due, per second), as a ratio within the round to the
// contender's own goodput at 1x and to the unprotected server's at that load; p50/p99 of admitted (2xx)
// requests; share shed (503) and lost (no answer within the drain); the cores each side used; then 4x with
// every fifth request critical (x-priority: critical), and the share of those that got a 2xx within 250 ms.
// --nice N runs both sides at that priority (root only), --verbose prints every run (with the shedder's limit,
// the time each 2xx waited before its handler, and whether failed critical requests were shed, late or lost),
// --contenders and --loads narrow the run, --mount app puts sluice's shedding in the app (Express's and Koa's
// shed() as middleware, Fastify's shed plugin) instead of in front of it.
// Usage: pnpm build && node bench/overload.mjs [--seconds 3 --rounds 3 --frameworks express,fastify,koa]
//        [--shed '{"reserve":{"critical":0.8}}'] [--mount front|app] [--nice -10] [--verbose]
import { fork } from 'node:child_process';
import { createRequire } from 'node:module';
import { loadavg, setPriority } from 'node:os';
import { performance } from 'node:perf_hooks';
import { arg } from './args.mjs';
import { openLoop } from './open-loop.mjs';
import { writeResults } from './results.mjs';
import { stats } from './stats.mjs';

const require = createRequire(import.meta.url);
const SECONDS = Number(arg('seconds', 2));
const ROUNDS = Number(arg('rounds', 3));
const FRAMEWORKS = arg('frameworks', 'express,fastify,koa').split(',');
const LOADS = arg('loads', '0.5,1,2,4').split(',');
const VERBOSE = process.argv.includes('--verbose');
// sluice's shed() options, as JSON (default: its defaults), e.g. --shed '{"reserve":{"critical":0.5}}'
const SHED = arg('shed', '{}');
// --nice -5: both sides at a higher priority than the other work on a shared machine (root only); default 0.
const NICE = Number(arg('nice', 0));
if (NICE !== 0) setPriority(NICE);
// --mount front (default): shedding in front of the app, on node:http's request and response (a shed request
// costs node:http's parsing and the 503, not the framework's work: bench/lab/shed-cost.mjs); --mount app: as
// the app's first middleware (Fastify: the shed plugin's onRequest hook).
const MOUNT = arg('mount', 'front');
if (MOUNT !== 'front' && MOUNT !== 'app') throw new Error(`--mount must be front or app, not ${MOUNT}`);
const GOOD_MS = 250;
const DRAIN_MS = 1000;
const ONLY = arg('contenders');
const CONTENDERS_ALL = { express: ['none', 'sluice'], fastify: ['none', 'under-pressure', 'sluice'], koa: ['none', 'sluice'] };
const CONTENDERS = Object.fromEntries(
  Object.entries(CONTENDERS_ALL).map(([f, cs]) => [f, ONLY === undefined ? cs : cs.filter((c) => ONLY.split(',').includes(c))]),
);

// ---------------------------------------------------------------- the server (a child process)

// --verbose: each 2xx says when its handler began (x-start, ms since the epoch on the shared clock), so that
// the time a request waited before its handler ran (in the kernel, behind the other requests of its turn)
// shows apart from the handler's own.
const stamp = (set) => VERBOSE && set('x-start', (performance.timeOrigin + performance.now()).toFixed(3));
function burn(ms) {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // the handler's CPU work
  }
  return { ok: true };
}
const priority = (header) => (header === 'critical' ? 'critical' : 'normal');

async function serve(framework, contender, shedOptions) {
  let server;
  if (framework === 'fastify') {
    // In front (--mount front): shedGuard on node:http, through Fastify's serverFactory; in the app: the plugin.
    const sluice = contender === 'sluice' ? await import('@sluice/fastify') : undefined;
    const guard =
      sluice && MOUNT === 'front'
        ? sluice.shedGuard({ ...shedOptions, priority: (req) => priority(req.headers['x-priority']) })
        : undefined;
    const http = await import('node:http');
    const app = (await import('fastify')).default(
      guard ? { serverFactory: (handler) => http.createServer((req, res) => guard(req, res, () => handler(req, res))) } : {},
    );
    if (sluice && !guard) await app.register(sluice.shed, { ...shedOptions, priority: (r) => priority(r.headers['x-priority']) });
    if (contender === 'under-pressure') {
      await app.register((await import('@fastify/under-pressure')).default, { maxEventLoopDelay: 100, sampleInterval: 100 });
    }
    app.get('/', async (_req, reply) => {
      stamp((k, v) => reply.header(k, v));
      return burn(2);
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    server = app.server;
  } else {
    // Express and Koa: shed() in the app, or shedGuard() in front of it (--mount front), where priority() gets node:http's
    // IncomingMessage (req.headers reads the same on Express's req, Koa's ctx and node:http's req).
    let guard;
    let handle;
    if (framework === 'express') {
      const app = (await import('express')).default();
      if (contender === 'sluice')
        guard = (await import('@sluice/express'))[MOUNT === 'app' ? 'shed' : 'shedGuard']({
          ...shedOptions,
          priority: (req) => priority(req.headers['x-priority']),
        });
      if (guard !== undefined && MOUNT === 'app') app.use(guard);
      app.get('/', (_req, res) => {
        stamp((k, v) => res.set(k, v));
        res.json(burn(2));
      });
      handle = app;
    } else {
      const app = new (await import('koa')).default();
      if (contender === 'sluice')
        guard = (await import('@sluice/koa'))[MOUNT === 'app' ? 'shed' : 'shedGuard']({
          ...shedOptions,
          priority: (ctx) => priority(ctx.headers['x-priority']),
        });
      if (guard !== undefined && MOUNT === 'app') app.use(guard);
      app.use((ctx) => {
        stamp((k, v) => ctx.set(k, v));
        ctx.body = burn(2);
      });
      handle = app.callback();
    }
    const front = guard !== undefined && MOUNT === 'front';
    server = (await import('node:http')).createServer(front ? (req, res) => guard(req, res, () => handle(req, res)) : handle);
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  }
  // What the load cost this side, and what the shedder did: asked for by the load process around each run.
  // criticalSheds: when in the run (ms from its start) each critical request was shed, at what limit and in flight.
  const trace = { limits: [], shed: 0, criticalSheds: [] };
  (await import('node:diagnostics_channel')).subscribe('sluice:event', (e) => {
    if (e.type === 'concurrency') trace.limits.push(e.limit);
    else if (e.type === 'shed') {
      trace.shed++;
      if (e.priority === 'critical') trace.criticalSheds.push([Math.round(performance.now() - t), e.limit, e.inFlight]);
    }
  });
  let cpu = process.cpuUsage();
  let elu = performance.eventLoopUtilization();
  let t = performance.now();
  process.on('message', (m) => {
    if (m === 'mark') {
      cpu = process.cpuUsage();
      elu = performance.eventLoopUtilization();
      t = performance.now();
      trace.limits = [];
      trace.shed = 0;
      trace.criticalSheds = [];
      return;
    }
    const used = process.cpuUsage(cpu);
    const limits = [...trace.limits].sort((a, b) => a - b);
    process.send({
      cpu: (used.user + used.system) / 1000 / (performance.now() - t), // cores used by the server over the run
      elu: performance.eventLoopUtilization(elu).utilization,
      limit: limits.length === 0 ? undefined : { min: limits[0], median: limits[limits.length >> 1], max: limits.at(-1) },
      criticalSheds: trace.criticalSheds.length === 0 ? undefined : criticalShedTrace(trace.criticalSheds),
    });
  });
  process.send({ port: server.address().port });
  process.on('disconnect', () => process.exit(0));
}

/** The critical requests shed in a run (--verbose): how many per half second, and at which limit and in flight. */
function criticalShedTrace(sheds) {
  const count = (xs) => Object.fromEntries([...new Set(xs)].sort((a, b) => a - b).map((x) => [x, xs.filter((y) => y === x).length]));
  const halves = [];
  for (const [t] of sheds) halves[Math.floor(t / 500)] = (halves[Math.floor(t / 500)] ?? 0) + 1;
  return {
    n: sheds.length,
    perHalfSecond: Array.from(halves, (n) => n ?? 0),
    atLimit: count(sheds.map((s) => s[1])),
    atInFlight: count(sheds.map((s) => s[2])),
  };
}

// ---------------------------------------------------------------- the load (this process)

function start(framework, contender) {
  const child = fork(new URL(import.meta.url), ['--serve', framework, contender, SHED, ...(VERBOSE ? ['--verbose'] : [])], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    const ask = (m) =>
      new Promise((answer) => {
        child.once('message', answer);
        child.send(m);
      });
    child.once('message', ({ port }) => resolve({ port, ask, mark: () => child.send('mark'), stop: () => child.kill('SIGKILL') }));
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
    // Why critical requests failed: shed (503), late (2xx after GOOD_MS) or lost, as shares of critical requests.
    ...(critical.length === 0
      ? {}
      : {
          criticalShed: critical.filter((r) => r.status === 503).length / critical.length,
          criticalLate: critical.filter((r) => r.status >= 200 && r.status < 300 && r.ms > GOOD_MS).length / critical.length,
          criticalLost: critical.filter((r) => r.status === 0).length / critical.length,
        }),
    ...(ok[0]?.start === undefined ? {} : waited(ok)),
  };
}

/** p50/p99 of the time 2xx requests waited from when they were due to their handler's start (--verbose). */
function waited(ok) {
  const w = ok.map((r) => r.start - r.dueEpoch).sort((a, b) => a - b);
  return { waitP50: percentile(w, 0.5), waitP99: percentile(w, 0.99) };
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
  server.mark();
  const cpu = process.cpuUsage();
  const t = performance.now();
  const results = await openLoop({ port: server.port, rate, seconds: SECONDS, criticalEvery, drainMs: DRAIN_MS });
  const used = process.cpuUsage(cpu);
  const clientCpu = (used.user + used.system) / 1000 / (performance.now() - t);
  const side = await server.ask('stats');
  server.stop();
  return {
    ...summarize(results, SECONDS),
    serverCpu: side.cpu,
    clientCpu,
    elu: side.elu,
    limit: side.limit,
    criticalSheds: side.criticalSheds,
  };
}

const fmt = (s, digits = 0) => `${s.median.toFixed(digits)} (${s.min.toFixed(digits)}–${s.max.toFixed(digits)})`;
const pct = (s) => `${(s.median * 100).toFixed(1)}% (${(s.min * 100).toFixed(1)}–${(s.max * 100).toFixed(1)})`;

async function main() {
  const figures = {
    seconds: SECONDS,
    rounds: ROUNDS,
    goodMs: GOOD_MS,
    nice: NICE,
    shedOptions: JSON.parse(SHED),
    mount: MOUNT,
    frameworks: {},
  };
  const began = performance.now();
  const loads = [...LOADS, 'critical'];
  for (const framework of FRAMEWORKS) {
    const runs = {}; // contender -> load label -> [summary per round]
    const caps = [];
    for (let round = 0; round < ROUNDS; round++) {
      // Capacity again each round (the machine is shared: what the server gets of a core moves), then each load
      // with the contenders in turn, so that the contenders of one load meet the same conditions.
      const cap = await capacity(framework);
      caps.push(cap);
      if (VERBOSE) console.log(`${framework} round ${round + 1}: capacity ${cap.toFixed(0)} req/s, load ${loadavg()[0].toFixed(2)}`);
      for (const load of loads) {
        const rate = cap * (load === 'critical' ? 4 : Number(load));
        for (const contender of CONTENDERS[framework]) {
          const summary = await measure(framework, contender, rate, load === 'critical' ? 5 : 0);
          summary.share = summary.goodput / cap; // goodput as a share of this round's capacity
          runs[contender] ??= {};
          runs[contender][load] ??= [];
          runs[contender][load].push(summary);
          if (VERBOSE)
            console.log(
              `  ${contender} ${load}: ${JSON.stringify(summary, (_k, v) => (typeof v === 'number' ? Number(v.toFixed(3)) : v))}`,
            );
        }
      }
    }
    const capS = stats(caps);
    figures.frameworks[framework] = { capacity: capS.median, capacities: caps, contenders: {} };
    const mount = MOUNT === 'front' ? 'in front of the app, on node:http' : 'in the app';
    console.log(
      `\n${framework}: capacity ${fmt(capS)} req/s per round (2 ms handler, 16 closed-loop connections); sluice's shed() ${mount}`,
    );
    console.log('| contender | load | goodput req/s | / own 1x | / none | p50 ms | p99 ms | shed | lost | server, client CPU |');
    console.log('|---|---|---|---|---|---|---|---|---|---|');
    for (const [contender, byLoad] of Object.entries(runs)) {
      const out = {};
      figures.frameworks[framework].contenders[contender] = out;
      for (const load of loads) {
        const rs = byLoad[load];
        // Ratios within a round: to the contender's own goodput at 1x, and to the unprotected server's at this load.
        const own = rs.map((r, i) => r.goodput / (byLoad[1]?.[i]?.goodput ?? Number.NaN));
        const none = rs.map((r, i) => r.goodput / (runs.none?.[load]?.[i]?.goodput ?? Number.NaN));
        const keys = ['goodput', 'share', 'p50', 'p99', 'shed', 'lost', 'critical', 'serverCpu', 'clientCpu', 'waitP99'];
        const s = Object.fromEntries(keys.map((k) => [k, stats(rs.map((r) => r[k] ?? 0))]));
        s.ownRatio = stats(own);
        s.noneRatio = stats(none);
        out[load] = s;
        const label = load === 'critical' ? '4x, 20% critical' : `${load}x`;
        const crit = load === 'critical' ? `; critical 2xx in ${GOOD_MS} ms: ${pct(s.critical)}` : '';
        console.log(
          `| ${contender} | ${label} | ${fmt(s.goodput)} | ${fmt(s.ownRatio, 2)} | ${fmt(s.noneRatio, 2)} | ${fmt(s.p50, 1)} | ${fmt(s.p99, 1)} | ${pct(s.shed)} | ${pct(s.lost)}${crit} | ${s.serverCpu.median.toFixed(2)}, ${s.clientCpu.median.toFixed(2)} |`,
        );
      }
    }
  }
  console.log(
    `\n(${((performance.now() - began) / 1000).toFixed(0)} s; median (min–max) over ${ROUNDS} rounds of ${SECONDS} s; load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')})`,
  );
  writeResults('overload', figures);
}

if (process.argv[2] === '--serve') await serve(process.argv[3], process.argv[4], JSON.parse(process.argv[5]));
else await main();
