// Soak: minutes of HTTP load at a fixed rate over 100,000 keys on one Redis, which is killed and started
// again (empty) every two minutes. The server (Express + @sluice/express on an ioredis client, fail mode
// 'closed') runs in a child process with --expose-gc; autocannon loads it from this one at --rate
// requests/s. Each minute prints the server's RSS, heap used (after a forced GC, so that it is what is
// live, not what the GC has not yet collected), event-loop delay p99 (perf_hooks, 10 ms resolution),
// the requests it answered and by what source (the sluice:decision channel), and what the client saw.
// 2% of the requests go to one hot key, so that denials and the deny cache are in the mix.
// It also prints a bound on how much of the heap's growth is the fallback's memory store taking on keys
// (it drops each once expired, as it takes new ones), from the keys the fail mode answered and the heap
// one key costs a memory store (measured at start on a throwaway limiter).
// Checks at the end, each printed as PASS/FAIL (the exit code is 1 if one fails): the heap after
// warm-up grows less than 10%; no request hangs (no autocannon timeout, no request in flight on the
// server longer than 2 s at any sample, none in flight at the end); no unhandled rejection; every
// response a 200 or a 429.
// Not in CI. Usage: pnpm build && node bench/lab/soak.mjs [--minutes 10] [--rate 300] [--restart-every 2]
//   [--down 1] [--warmup 1] [--connections 32]
import { fork } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { startServer } from '../../test/support/redis-harness.mjs';
import { arg } from '../args.mjs';

const KEYS = 100_000;
const HEADER = 'x-client-id';

if (process.argv[2] === '--server') await server(Number(process.argv[3]));
else await driver();

/** The child: one Express app behind sluice on Redis; answers 'sample' over IPC. */
async function server(redisPort) {
  const { monitorEventLoopDelay } = await import('node:perf_hooks');
  const { subscribe } = await import('node:diagnostics_channel');
  const { default: Redis } = await import('ioredis');
  const { default: express } = await import('express');
  const { createLimiter, redisStore } = await import('@sluice/core');
  const { rateLimit } = await import('@sluice/express');

  let unhandled = 0;
  process.on('unhandledRejection', (error) => {
    unhandled++;
    console.error('unhandled rejection:', error);
  });
  const client = new Redis({ host: '127.0.0.1', port: redisPort, maxRetriesPerRequest: 1, connectTimeout: 500 });
  client.on('error', () => {}); // refused while Redis restarts: the limiter's fail mode answers
  await new Promise((resolve) => client.once('ready', resolve));

  // What one key costs the fail mode's local store (closed mode: a memory store of up to 100,000 keys,
  // which keeps a key, expired or not, until it needs the room): measured on a throwaway limiter.
  const probe = createLimiter({ policy: '100/1m' });
  await probe.consume('warm');
  global.gc();
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < 2000; i++) await probe.consume(`client-${i}`);
  global.gc();
  const bytesPerLocalKey = (process.memoryUsage().heapUsed - before) / 2000;
  await probe.close();

  let sources = {};
  let denied = 0;
  // The keys the fail mode has answered, ever: a bitmap, so that counting them does not grow the heap.
  const seenLocally = new Uint8Array(KEYS + 1);
  let localKeys = 0;
  subscribe('sluice:decision', ({ key, decision }) => {
    sources[decision.source] = (sources[decision.source] ?? 0) + 1;
    if (!decision.allowed) denied++;
    if (decision.source === 'fallback') {
      // The adapter's key is scoped ('<n>:<scope>|client-<i>'): the client key follows the last '|'.
      const client = key.slice(key.lastIndexOf('|') + 1);
      const i = client === 'hot' ? KEYS : Number(client.slice(7));
      if (seenLocally[i] === 0) {
        seenLocally[i] = 1;
        localKeys++;
      }
    }
  });
  const inFlight = new Map();
  let nextId = 0;
  let answered = 0;
  const app = express();
  app.set('etag', false);
  app.disable('x-powered-by');
  app.use((_req, res, next) => {
    const id = nextId++;
    inFlight.set(id, performance.now());
    res.once('close', () => {
      inFlight.delete(id);
      answered++;
    });
    next();
  });
  app.use(rateLimit({ policy: '100/1m', store: redisStore({ client }), key: (req) => req.headers[HEADER] }));
  app.get('/', (_req, res) => res.json({ hello: 'world' }));
  const http = app.listen(0, '127.0.0.1', () => process.send({ port: http.address().port }));

  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  process.on('message', (message) => {
    if (message !== 'sample') return;
    const p99 = delay.percentile(99) / 1e6;
    delay.reset();
    global.gc();
    const { rss, heapUsed } = process.memoryUsage();
    const now = performance.now();
    let oldest = 0;
    for (const at of inFlight.values()) oldest = Math.max(oldest, now - at);
    process.send({
      rss,
      heapUsed,
      p99,
      answered,
      sources,
      denied,
      unhandled,
      inFlight: inFlight.size,
      oldestMs: oldest,
      localKeys,
      bytesPerLocalKey,
    });
    answered = 0;
    sources = {};
    denied = 0;
  });
  process.on('disconnect', () => process.exit(0));
}

function p99Of(xs) {
  return xs.sort((a, b) => a - b)[Math.floor(xs.length * 0.99)] ?? 0;
}

async function driver() {
  const require = createRequire(import.meta.url);
  const autocannon = require('autocannon');
  const MINUTES = Number(arg('minutes', 10));
  const RATE = Number(arg('rate', 300));
  const RESTART_EVERY = Number(arg('restart-every', 2));
  const DOWN_S = Number(arg('down', 1));
  const WARMUP = Number(arg('warmup', 1));
  const CONNECTIONS = Number(arg('connections', 32));

  // The shared harness' server: kill() and restart() on the same port; it goes with this process.
  const redis = await startServer();
  const redisPort = redis.port;

  const child = fork(fileURLToPath(import.meta.url), ['--server', String(redisPort)], { execArgv: ['--expose-gc'] });
  const { port } = await new Promise((resolve) => child.once('message', resolve));
  const sample = () =>
    new Promise((resolve) => {
      child.once('message', resolve);
      child.send('sample');
    });

  console.log(
    `soak: ${MINUTES} min at ${RATE} req/s, ${CONNECTIONS} connections, ${KEYS.toLocaleString('en-US')} keys (+2% on one hot key), ` +
      `policy 100/1m; Redis killed every ${RESTART_EVERY} min and started again ${DOWN_S} s later`,
  );
  let perMinute = { responses: 0, byStatus: {}, maxLatency: 0, latencies: [] };
  const instance = autocannon({
    url: `http://127.0.0.1:${port}/`,
    connections: CONNECTIONS,
    overallRate: RATE,
    duration: MINUTES * 60,
    timeout: 5,
    requests: [
      {
        setupRequest(req) {
          const key = Math.random() < 0.02 ? 'hot' : `client-${Math.floor(Math.random() * KEYS)}`;
          return { ...req, headers: { ...req.headers, [HEADER]: key } };
        },
      },
    ],
  });
  instance.on('response', (_client, statusCode, _bytes, responseTime) => {
    perMinute.responses++;
    perMinute.byStatus[statusCode] = (perMinute.byStatus[statusCode] ?? 0) + 1;
    perMinute.maxLatency = Math.max(perMinute.maxLatency, responseTime);
    perMinute.latencies.push(responseTime);
  });
  const done = new Promise((resolve) => instance.once('done', resolve));

  const samples = [];
  let restarts = 0;
  const started = Date.now();
  const timers = [];
  for (let m = 1; m <= MINUTES; m++) {
    timers.push(
      setTimeout(async () => {
        const s = await sample();
        const client = perMinute;
        perMinute = { responses: 0, byStatus: {}, maxLatency: 0, latencies: [] };
        samples.push({ minute: m, ...s, client });
        const mb = (b) => (b / 2 ** 20).toFixed(1);
        console.log(
          `min ${String(m).padStart(2)}: rss ${mb(s.rss)} MB, heap ${mb(s.heapUsed)} MB, loop p99 ${s.p99.toFixed(1)} ms, ` +
            `answered ${s.answered} (${Object.entries(s.sources)
              .map(([k, v]) => `${k} ${v}`)
              .join(', ')}; denied ${s.denied}), in flight ${s.inFlight} (oldest ${Math.round(s.oldestMs)} ms), ` +
            `client: ${JSON.stringify(client.byStatus)} p99 ${Math.round(p99Of(client.latencies))} max ${Math.round(client.maxLatency)} ms, unhandled ${s.unhandled}, ` +
            `keys the fallback has answered, ever ${s.localKeys}`,
        );
      }, m * 60_000),
    );
  }
  for (let r = RESTART_EVERY; r < MINUTES; r += RESTART_EVERY) {
    timers.push(
      setTimeout(
        async () => {
          await redis.kill();
          await new Promise((res) => setTimeout(res, DOWN_S * 1000));
          await redis.restart();
          restarts++;
          console.log(`  Redis restarted at ${((Date.now() - started) / 1000).toFixed(0)} s`);
        },
        r * 60_000 - 30_000,
      ),
    );
  }
  const result = await done;
  // The last sample is due at MINUTES * 60 s, about when autocannon stops: wait for it.
  while (samples.length < MINUTES) await new Promise((r) => setTimeout(r, 200));
  const final = await sample();
  for (const t of timers) clearTimeout(t);

  const base = samples[WARMUP - 1].heapUsed;
  const last = samples.at(-1).heapUsed;
  const growth = (last - base) / base;
  const statuses = {};
  for (const s of samples) for (const [k, v] of Object.entries(s.client.byStatus)) statuses[k] = (statuses[k] ?? 0) + v;
  const sources = {};
  for (const s of samples) for (const [k, v] of Object.entries(s.sources)) sources[k] = (sources[k] ?? 0) + v;
  const checks = [
    [`heap after warm-up (min ${WARMUP}) to the end grows < 10%: ${(growth * 100).toFixed(1)}%`, growth < 0.1],
    [
      `no request hangs: ${result.timeouts} timeouts, oldest in flight ${Math.round(Math.max(...samples.map((s) => s.oldestMs)))} ms, ${final.inFlight} in flight at the end`,
      result.timeouts === 0 && samples.every((s) => s.oldestMs < 2000) && final.inFlight === 0,
    ],
    [`no unhandled rejection: ${final.unhandled}`, final.unhandled === 0],
    [
      `every response a 200 or a 429: ${JSON.stringify(statuses)}, ${result.errors} errors`,
      result.errors === 0 && Object.keys(statuses).every((k) => k === '200' || k === '429'),
    ],
    [
      `Redis restarted ${restarts} times and the store answered after each: sources ${JSON.stringify(sources)}`,
      restarts === Math.ceil(MINUTES / RESTART_EVERY) - 1 && samples.at(-1).sources.store > 0,
    ],
  ];
  // The fallback's memory store drops a key once it has expired, as it takes new ones: the keys it took
  // on after warm-up, times a key's heap, bound its part of the growth from above.
  const newLocal = samples.at(-1).localKeys - samples[WARMUP - 1].localKeys;
  const local = (newLocal * final.bytesPerLocalKey) / base;
  console.log(
    `heap growth after warm-up: ${(growth * 100).toFixed(1)}%; the fallback store's part at most ${(local * 100).toFixed(1)}% ` +
      `(${newLocal} keys taken on x ${Math.round(final.bytesPerLocalKey)} B, each dropped once expired), the rest ${((growth - local) * 100).toFixed(1)}%`,
  );
  console.log(
    `total: ${result.requests.total} requests, ${(result.requests.total / (MINUTES * 60)).toFixed(0)} req/s, latency p99 ${result.latency.p99} ms, max ${result.latency.max} ms`,
  );
  for (const [what, ok] of checks) console.log(`${ok ? 'PASS' : 'FAIL'} ${what}`);
  child.disconnect();
  await redis.stop();
  process.exit(checks.every(([, ok]) => ok) ? 0 : 1);
}
