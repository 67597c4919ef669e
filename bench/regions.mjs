// One limit across regions: three regions and a home, each its own redis-server, a delay proxy (node:net) in
// front of the home adding --delay-min..--delay-max ms each way, and --workers processes per region, each
// asking for one key open-loop (requests sent on schedule, whatever the answers). Demand is --load times
// the policy's rate, split 70/20/10 over the regions; after --steady seconds the shares swap (10/20/70).
// Side by side, per round: sluice's leases (`regions`), a counter per region (each region its own full
// limit: what teams run today), and a static split (each region a third of the limit). Reported:
//   over-admission  the most admitted in any window of 1, 5 and 10 s, less burst + rate x window (0 is kept)
//   use             admitted / what the policy allows (burst + rate x time) over the steady part
//   p99             of a decision from 1 s on, leases against a one-region limiter on the same Redis (the counter)
//   following       after the swap, lease intervals until the region that was small gets 80% of its share
//   home paused     (last) SIGSTOP of the home for --pause seconds: the slowest decision, over-admission
// Usage: pnpm build && node bench/regions.mjs [--rounds 3 --steady 8 --swap 6 --pause 10 --workers 2 --load 3 --lease 500]
import { fork } from 'node:child_process';
import { connect, createServer } from 'node:net';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { sleep, startServer } from '../test/support/redis-harness.mjs';
import { arg } from './args.mjs';
import { writeResults } from './results.mjs';
import { stats } from './stats.mjs';

const LIMIT = 100;
const WINDOW_S = 5;
const RATE = LIMIT / WINDOW_S; // tokens per second
const BURST = LIMIT;
const SHARES = [0.7, 0.2, 0.1];
const now = () => performance.timeOrigin + performance.now();

// ---------------------------------------------------------------- a worker (child process)

async function work() {
  const { createLimiter, redisStore } = await import('@sluice/core');
  const { default: Redis } = await import('ioredis');
  const { region, regionPort, homePort, workers } = JSON.parse(process.argv[3]);
  const client = (port) => {
    const c = new Redis({ port, maxRetriesPerRequest: 1, retryStrategy: () => 100 });
    c.on('error', () => {});
    return c;
  };
  const regional = redisStore({ client: client(regionPort) });
  const home = redisStore({ client: client(homePort) });
  process.on('message', async ({ mode, prefix, plan, startAt, leaseMs }) => {
    const policy = mode === 'split' ? { limit: LIMIT, window: `${WINDOW_S * 3}s`, burst: Math.floor(BURST / 3) } : `${LIMIT}/${WINDOW_S}s`;
    // While the region's own Redis does not answer, each process admits a share of the region's static share.
    const share = Math.max(1, Math.floor(BURST / 3 / workers));
    const limiter = createLimiter({
      policy,
      prefix,
      store: regional,
      fallback: { limit: share, window: `${(WINDOW_S * share) / (LIMIT / 3 / workers)}s` },
      denyCache: false,
      regions: mode === 'leases' ? { home, region: `r${region}`, lease: leaseMs } : undefined,
    });
    const out = [];
    const pending = [];
    await sleep(Math.max(0, startAt - now()));
    // Open loop: each step of the plan sends at its rate until the next, whatever the answers.
    for (const { until, perSecond } of plan) {
      const gap = 1000 / perSecond;
      let next = now();
      while (now() < startAt + until) {
        const sent = now();
        pending.push(
          limiter.consume('k').then((d) => {
            out.push([sent, now() - sent, d.allowed ? 1 : 0, d.source]);
          }),
        );
        next += gap * (0.5 + Math.random());
        await sleep(Math.max(0, next - now()));
      }
    }
    await Promise.all(pending);
    await limiter.close();
    process.send(out);
  });
  process.send('ready');
}

// ---------------------------------------------------------------- the delay proxy

/** A TCP proxy to `port` that holds every chunk min..max ms, each way, in order. */
function delayProxy(port, min, max) {
  const server = createServer((c) => {
    const s = connect(port, '127.0.0.1');
    const delayed = (from, to) => {
      let last = 0;
      from.on('data', (chunk) => {
        const at = Math.max(last, now() + min + Math.random() * (max - min));
        last = at;
        setTimeout(() => to.destroyed || to.write(chunk), at - now());
      });
    };
    delayed(c, s);
    delayed(s, c);
    const end = () => {
      c.destroy();
      s.destroy();
    };
    c.on('error', end).on('close', end);
    s.on('error', end).on('close', end);
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ port: server.address().port, close: () => server.close() })),
  );
}

// ---------------------------------------------------------------- measures

/** The most admitted in any window of `ms`, over times in ms. */
function mostWithin(times, ms) {
  const t = [...times].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; j < t.length; j++) {
    while (t[j] - t[i] >= ms) i++;
    most = Math.max(most, j - i + 1);
  }
  return most;
}
const over = (times, s) => Math.max(0, mostWithin(times, s * 1000) - (BURST + RATE * s));
const p99 = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * 0.99))] ?? 0;
};

// ---------------------------------------------------------------- the run

async function main() {
  const rounds = Number(arg('rounds', '3'));
  const steady = Number(arg('steady', '8'));
  const swap = Number(arg('swap', '6'));
  const pause = Number(arg('pause', '10'));
  const perRegion = Number(arg('workers', '2'));
  const load = Number(arg('load', '3'));
  // A lease of a tenth of the bucket's refill time (burst / rate = 5 s), several times the home's round trip.
  const leaseMs = Number(arg('lease', '500'));
  const [dmin, dmax] = [Number(arg('delay-min', '40')), Number(arg('delay-max', '80'))];
  const home = await startServer();
  const regions = [await startServer(), await startServer(), await startServer()];
  const proxy = await delayProxy(home.port, dmin, dmax);
  const workers = [];
  for (let r = 0; r < 3; r++)
    for (let w = 0; w < perRegion; w++) {
      const child = fork(fileURLToPath(import.meta.url), [
        '--worker',
        JSON.stringify({ region: r, regionPort: regions[r].port, homePort: proxy.port, workers: perRegion }),
      ]);
      await new Promise((resolve) => child.once('message', resolve));
      workers.push({ child, region: r });
    }

  let phases = 0;
  /** Runs `plan` (per region: [{ until ms, share }]) in `mode` on every worker; their decisions, by region. */
  async function phase(mode, plan, during) {
    const prefix = `bench-regions-${process.pid}-${++phases}`;
    const startAt = now() + 300;
    const replies = workers.map(
      ({ child, region }) =>
        new Promise((resolve) => {
          child.once('message', (rows) => resolve(rows.map((row) => [...row, region])));
          const steps = plan.map(({ until, shares }) => ({ until, perSecond: (RATE * load * shares[region]) / perRegion }));
          child.send({ mode, prefix, plan: steps, startAt, leaseMs });
        }),
    );
    await during?.(startAt);
    return { startAt, rows: (await Promise.all(replies)).flat() };
  }

  const swapped = [SHARES[2], SHARES[1], SHARES[0]];
  const steadyPlan = [{ until: steady * 1000, shares: SHARES }];
  const table = [];
  for (let round = 1; round <= rounds; round++) {
    const leases = await phase('leases', [...steadyPlan, { until: (steady + swap) * 1000, shares: swapped }]);
    const counter = await phase('counter', steadyPlan);
    const split = await phase('split', steadyPlan);
    for (const [name, { startAt, rows }] of [
      ['leases', leases],
      ['counter per region', counter],
      ['static split', split],
    ]) {
      const admitted = rows.filter((r) => r[2] === 1).map((r) => r[0]);
      // Use: admitted in the steady part, of what the policy allows then (burst + rate x time, or the
      // demand when less). Above 1 is over-admission.
      const to = startAt + steady * 1000;
      const asked = rows.filter((r) => r[0] < to).length;
      const used = admitted.filter((t) => t < to).length / Math.min(asked, BURST + RATE * steady);
      const row = { round, name, over1: over(admitted, 1), over5: over(admitted, 5), over10: over(admitted, 10), use: used };
      // p99 once every region holds its first lease (from 1 s on), to the end of the steady part.
      row.p99 = p99(rows.filter((r) => r[0] >= startAt + 1000 && r[0] < to).map((r) => r[1]));
      if (name === 'leases') {
        // After the swap: per lease interval, the share of admissions of the region that was small.
        let intervals;
        for (let i = 0; i < (swap * 1000) / leaseMs; i++) {
          const a = startAt + steady * 1000 + i * leaseMs;
          const inside = rows.filter((r) => r[2] === 1 && r[0] >= a && r[0] < a + leaseMs);
          const share = inside.filter((r) => r[4] === 2).length / Math.max(1, inside.length);
          if (share >= 0.8 * swapped[2]) {
            intervals = i + 1;
            break;
          }
        }
        row.following = intervals ?? `> ${(swap * 1000) / leaseMs}`;
      }
      table.push(row);
      console.log(JSON.stringify(row));
    }
  }

  // The home paused: SIGSTOP for `pause` seconds, 3 s into a phase of leases at 70/20/10.
  const total = 3 + pause + 4;
  const paused = await phase('leases', [{ until: total * 1000, shares: SHARES }], async (startAt) => {
    await sleep(startAt + 3000 - now());
    home.pause();
    await sleep(pause * 1000);
    home.resume();
  });
  const during = paused.rows.filter((r) => r[0] >= paused.startAt + 3000 && r[0] < paused.startAt + (3 + pause) * 1000);
  const admitted = paused.rows.filter((r) => r[2] === 1).map((r) => r[0]);
  const away = {
    decisions: during.length,
    slowestMs: Math.max(...during.map((r) => r[1])),
    p99Ms: p99(during.map((r) => r[1])),
    admittedPerSecond: during.filter((r) => r[2] === 1).length / pause,
    sources: [...new Set(during.map((r) => r[3]))],
    over1: over(admitted, 1),
    over5: over(admitted, 5),
    over10: over(admitted, 10),
  };
  console.log(JSON.stringify({ homePaused: away }));

  const summary = {};
  for (const name of ['leases', 'counter per region', 'static split']) {
    const rows = table.filter((r) => r.name === name);
    const stat = (k) => stats(rows.map((r) => r[k]));
    summary[name] = { over1: stat('over1'), over5: stat('over5'), over10: stat('over10'), use: stat('use'), p99Ms: stat('p99') };
    if (name === 'leases') summary[name].following = rows.map((r) => r.following);
  }
  console.log(JSON.stringify(summary, null, 1));
  writeResults('regions', {
    policy: `${LIMIT}/${WINDOW_S}s`,
    load,
    shares: SHARES,
    workersPerRegion: perRegion,
    delayMs: [dmin, dmax],
    table,
    summary,
    homePaused: away,
  });

  for (const { child } of workers) child.kill();
  proxy.close();
  await home.stop();
  for (const r of regions) await r.stop();
  process.exit(0);
}

if (process.argv[2] === '--worker') work();
else main();
