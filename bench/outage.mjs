// Outage benchmark: request latency (p50, p99, max) while Redis is down, beside the same with
// Redis up, for sluice's Express adapter and the libraries users would pick instead, each configured to
// let requests through when its store fails:
//   sluice   @sluice/express, failMode 'open', ioredis with its default settings (the limiter's own
//            50 ms timeout must do the job)
//   erl      express-rate-limit + rate-limit-redis, passOnStoreError: true, ioredis as rate-limit-redis'
//            readme shows it (`new Redis()`, defaults)
//   fastify  @fastify/rate-limit, skipOnError: true, ioredis as its readme recommends
//            ({ connectTimeout: 500, maxRetriesPerRequest: 1 })
// Each server is its own child process on 127.0.0.1:0; the load is a bounded loop of keep-alive HTTP
// requests from here (--connections in flight, each request given up after --cap ms and counted at the cap).
// Every limiter keys on an x-client-id header spread over 1,000 values and allows far more than a run
// sends, so nothing is denied. One redis-server, started here. Per contender: Redis up for --seconds, then
// each fault for --seconds with load starting at the fault: kill = SIGKILL (connections reset, reconnects
// refused), pause = SIGSTOP (connections stay open, nothing answers). After each fault Redis comes back on
// the same port (restart or SIGCONT) and the server is given time to reconnect before the next phase.
// Usage: node bench/outage.mjs [--seconds 4 --connections 50 --cap 5000 --faults kill,pause --contenders sluice,erl,fastify]
import { fork } from 'node:child_process';
import { Agent, request } from 'node:http';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { sleep, startServer } from '../test/support/redis-harness.mjs';
import { arg } from './args.mjs';

const KEYS = 1000;
const LIMIT = 1_000_000_000;

// ---------------------------------------------------------------- server mode (a child process)

async function serve(name, redisPort) {
  const { default: Redis } = await import('ioredis');
  const key = (req) => String(req.headers['x-client-id'] ?? 'none');
  let server;
  if (name === 'sluice') {
    const { redisStore } = await import('@sluice/core');
    const { rateLimit } = await import('@sluice/express');
    const { default: express } = await import('express');
    const client = new Redis({ port: redisPort });
    client.on('error', () => {});
    const app = express();
    app.use(rateLimit({ policy: `${LIMIT}/1h`, store: redisStore({ client }), failMode: 'open', key }));
    app.get('/', (_req, res) => res.send('ok'));
    server = app.listen(0, '127.0.0.1');
  } else if (name === 'erl') {
    const { default: express } = await import('express');
    const { rateLimit } = await import('express-rate-limit');
    const { RedisStore } = await import('rate-limit-redis');
    const client = new Redis({ port: redisPort });
    client.on('error', () => {});
    const app = express();
    app.use(
      rateLimit({
        windowMs: 3_600_000,
        limit: LIMIT,
        standardHeaders: 'draft-7',
        legacyHeaders: false,
        passOnStoreError: true,
        keyGenerator: key,
        validate: false,
        store: new RedisStore({ sendCommand: (command, ...args) => client.call(command, ...args) }),
      }),
    );
    app.get('/', (_req, res) => res.send('ok'));
    server = app.listen(0, '127.0.0.1');
  } else if (name === 'fastify') {
    const { default: Fastify } = await import('fastify');
    const { default: rateLimit } = await import('@fastify/rate-limit');
    const client = new Redis({ port: redisPort, connectTimeout: 500, maxRetriesPerRequest: 1 });
    client.on('error', () => {});
    const app = Fastify();
    await app.register(rateLimit, { max: LIMIT, timeWindow: '1 hour', redis: client, skipOnError: true, keyGenerator: key });
    app.get('/', async () => 'ok');
    await app.listen({ port: 0, host: '127.0.0.1' });
    server = app.server;
  } else {
    throw new Error(`unknown contender ${name}`);
  }
  if (!server.listening) await new Promise((r) => server.once('listening', r));
  process.send({ port: server.address().port });
  process.on('disconnect', () => process.exit(0));
}

// ---------------------------------------------------------------- orchestrator

/** Runs `connections` request loops for `seconds`; every request is given up at `cap` ms. */
async function load(port, { seconds, connections, cap }) {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const latencies = [];
  const statuses = {};
  let capped = 0;
  let n = 0;
  const one = () =>
    new Promise((resolve) => {
      const start = performance.now();
      const done = (status) => {
        clearTimeout(timer);
        latencies.push(performance.now() - start);
        statuses[status] = (statuses[status] ?? 0) + 1;
        resolve();
      };
      const req = request({ host: '127.0.0.1', port, path: '/', agent, headers: { 'x-client-id': `c${n++ % KEYS}` } }, (res) => {
        res.resume();
        res.on('end', () => done(res.statusCode));
      });
      const timer = setTimeout(() => {
        capped++;
        req.destroy();
        latencies.push(cap);
        statuses.capped = (statuses.capped ?? 0) + 1;
        resolve();
      }, cap);
      req.on('error', () => {
        if (performance.now() - start < cap) done('error');
      });
      req.end();
    });
  const end = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < end) await one();
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const q = (p) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))];
  return {
    requests: latencies.length,
    rps: latencies.length / elapsed,
    p50: q(0.5),
    p99: q(0.99),
    max: latencies.at(-1),
    statuses,
    capped,
  };
}

async function startContender(name, redisPort) {
  const child = fork(fileURLToPath(import.meta.url), ['--serve', name, '--redis-port', String(redisPort)], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const { port } = await Promise.race([
    new Promise((resolve) => child.once('message', resolve)),
    sleep(15_000).then(() => {
      throw new Error(`${name} server did not start`);
    }),
  ]);
  const stop = () => {
    child.kill('SIGKILL');
  };
  process.on('exit', stop);
  return { port, stop };
}

async function main() {
  const seconds = Number(arg('seconds', 4));
  const connections = Number(arg('connections', 50));
  const cap = Number(arg('cap', 5000));
  const faults = arg('faults', 'kill,pause').split(',');
  const contenders = arg('contenders', 'sluice,erl,fastify').split(',');
  const opts = { seconds, connections, cap };
  const redis = await startServer();
  const rows = [];
  const measured = []; // the rows' figures, for bench/results/outage.json
  const fmt = (x) => (x >= cap ? `≥${cap}` : x < 10 ? x.toFixed(1) : x.toFixed(0));
  for (const name of contenders) {
    const server = await startContender(name, redis.port);
    try {
      await load(server.port, { ...opts, seconds: 1 }); // warm up: connections, scripts loaded
      const phases = [['up', await load(server.port, opts)]];
      for (const fault of faults) {
        if (fault === 'kill') await redis.kill();
        else redis.pause();
        phases.push([fault, await load(server.port, opts)]);
        if (fault === 'kill') await redis.restart();
        else redis.resume();
        // Back to normal before the next phase: the client reconnects (ioredis backs off up to 2 s).
        const back = performance.now();
        while (performance.now() - back < 15_000) {
          const probe = await load(server.port, { seconds: 0.2, connections: 4, cap: 1000 });
          if (probe.p99 < 50 && probe.statuses[200] === probe.requests) break;
          await sleep(200);
        }
        await sleep(2500);
      }
      for (const [phase, r] of phases) {
        const other = Object.entries(r.statuses)
          .filter(([s]) => s !== '200')
          .map(([s, c]) => `${c}×${s}`)
          .join(' ');
        measured.push({ contender: name, phase, ...r });
        rows.push(
          `| ${name} | ${phase} | ${r.requests} | ${r.rps.toFixed(0)} | ${fmt(r.p50)} | ${fmt(r.p99)} | ${fmt(r.max)} | ${other || '-'} |`,
        );
        process.stderr.write(`${rows.at(-1)}\n`);
      }
    } finally {
      server.stop();
    }
  }
  await redis.stop();
  console.log(
    `Node ${process.version}, ${connections} connections, ${seconds} s per phase, cap ${cap} ms, load avg ${loadavg()[0].toFixed(1)}`,
  );
  console.log('| contender | Redis | requests | req/s | p50 ms | p99 ms | max ms | not 200 |');
  console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |');
  for (const r of rows) console.log(r);
  const { writeResults } = await import('./results.mjs');
  writeResults('outage', { settings: { seconds, connections, cap, faults, keys: KEYS }, phases: measured });
  process.exit(0);
}

if (arg('serve', undefined)) await serve(arg('serve'), Number(arg('redis-port')));
else {
  setTimeout(() => {
    process.stderr.write('outage: giving up after 10 minutes\n');
    process.exit(2);
  }, 600_000).unref();
  await main();
}
