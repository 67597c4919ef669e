// Waiting for a turn across processes: sluice's limiter.wait beside bottleneck (its Redis
// clustering mode) and rate-limiter-flexible's RateLimiterQueue. 4 processes make 1,000 waits on one key
// at 100/s between them, one call every --gap ms (in turn: process i % 4 makes call i), and record when each
// call was made and when it was let through. Per round and library:
//   rate      waits let through per second, from the first to the last, against the limit (100/s)
//   order     waits let through before a wait called earlier (out of turn)
//   commands  Redis commands per wait: sent by the clients (counted in each process at ioredis' sendCommand,
//             bottleneck's connections included), and as Redis counts them (INFO commandstats: the commands
//             scripts make inside included)
//   lateness  p50/p99 of (let through - its turn) in ms, where the k-th call in order of calling has its
//             turn at max(its call, the turn before + 10 ms): the limit's pace from the first call
// Run after `pnpm build`:   node bench/wait.mjs [--rounds 3] [--waits 1000] [--gap 2] [--libs sluice,bottleneck,rlf]
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { arg } from './args.mjs';

const RATE = 100;
const PROCESSES = 4;

if (process.argv.includes('--child')) await child();
else await main();

async function main() {
  const { startRedis } = await import('./redis-server.mjs');
  const { stats } = await import('./stats.mjs');
  const { execFileSync } = await import('node:child_process');
  const rounds = Number(arg('rounds', '3'));
  const waits = Number(arg('waits', '1000'));
  const gap = Number(arg('gap', '2'));
  const libs = arg('libs', 'sluice,bottleneck,rlf').split(',');
  const redis = await startRedis();
  const version = (await redis.client.info('server')).match(/redis_version:(\S+)/)[1];
  console.log(`Redis ${version}; ${PROCESSES} processes, ${waits} waits on one key at ${RATE}/s, a call every ${gap} ms; ${rounds} rounds`);
  console.log(`load at start: ${execFileSync('uptime').toString().trim()}`);
  const figures = Object.fromEntries(libs.map((l) => [l, []]));
  try {
    for (let r = 0; r < rounds; r++) {
      // Libraries in turn within a round, so that a change in the machine's load falls on all of them.
      for (const lib of libs) {
        await redis.client.flushall();
        await redis.client.config('RESETSTAT');
        const result = await round(redis.port, lib, waits, gap);
        const info = await redis.client.info('commandstats');
        const calls = [...info.matchAll(/cmdstat_([a-z|_-]+):calls=(\d+)/g)].filter(
          ([, name]) => !['info', 'config|resetstat', 'flushall'].includes(name),
        );
        const all = calls.reduce((s, [, , n]) => s + Number(n), 0);
        const row = {
          ...result,
          topPerWait: result.sent / waits,
          allPerWait: all / waits,
          commands: Object.fromEntries(calls.map(([, n, c]) => [n, Number(c)])),
        };
        figures[lib].push(row);
        console.log(`round ${r + 1} ${lib}: ${describe(row)}`);
      }
    }
  } finally {
    await redis.stop();
  }
  console.log(`load at end: ${execFileSync('uptime').toString().trim()}`);
  console.log(
    "\n| library | rate, waits/s (error vs 100/s) | out of turn | commands per wait (top-level / with scripts' own) | lateness p50 / p99, ms | failed |",
  );
  console.log('|---|---|---|---|---|---|');
  const mmm = (xs, f = (x) => x.toFixed(1)) => {
    const s = stats(xs);
    return `${f(s.min)} / ${f(s.median)} / ${f(s.max)}`;
  };
  for (const lib of libs) {
    const rows = figures[lib];
    console.log(
      `| ${lib} | ${mmm(rows.map((x) => x.rate))} (${mmm(
        rows.map((x) => (100 * (x.rate - RATE)) / RATE),
        (v) => `${v.toFixed(1)}%`,
      )}) | ${mmm(
        rows.map((x) => x.outOfTurn),
        (v) => String(v),
      )} | ${mmm(
        rows.map((x) => x.topPerWait),
        (v) => v.toFixed(2),
      )} / ${mmm(
        rows.map((x) => x.allPerWait),
        (v) => v.toFixed(1),
      )} | ${mmm(rows.map((x) => x.p50))} / ${mmm(rows.map((x) => x.p99))} | ${mmm(
        rows.map((x) => x.failed),
        (v) => String(v),
      )} |`,
    );
  }
  console.log('(each cell min / median / max over the rounds)');
  if (figures.sluice)
    console.log(`sluice's lateness p99 past each wait's own reserved turn: ${mmm(figures.sluice.map((x) => x.ownP99))} ms`);
}

function describe(x) {
  return `rate ${x.rate.toFixed(2)}/s, ${x.outOfTurn} out of turn, ${x.topPerWait.toFixed(2)} commands per wait (${x.allPerWait.toFixed(1)} with scripts'), lateness p50 ${x.p50.toFixed(1)} p99 ${x.p99.toFixed(1)} ms${x.ownP99 === undefined ? '' : ` (p99 past its own reserved turn ${x.ownP99} ms)`}, ${x.failed} failed${x.error ? ` (${x.error})` : ''}`;
}

/** One round: 4 children, `waits` calls between them; the figures. */
async function round(port, lib, waits, gap) {
  const file = fileURLToPath(import.meta.url);
  const prefix = `wait-${lib}-${Date.now()}`;
  const kids = Array.from({ length: PROCESSES }, (_, p) =>
    fork(file, ['--child', lib, String(port), prefix, String(p), String(waits), String(gap)], { stdio: 'inherit' }),
  );
  await Promise.all(kids.map((k) => new Promise((resolve) => k.once('message', resolve))));
  const start = Date.now() + 500;
  const reports = kids.map((k) => new Promise((resolve) => k.once('message', resolve)));
  for (const k of kids) k.send({ start });
  const records = (await Promise.all(reports)).flatMap((r) => r.records);
  const errors = (await Promise.all(reports)).map((r) => r.error).filter(Boolean);
  const sent = (await Promise.all(reports)).reduce((n, r) => n + r.sent, 0);
  await Promise.all(kids.map((k) => new Promise((resolve) => (k.exitCode !== null ? resolve() : k.once('exit', resolve)))));
  const done = records.filter((x) => x.released !== undefined).sort((a, b) => a.called - b.called || a.i - b.i);
  const failed = records.length - done.length + (waits - records.length);
  let turn = -Infinity;
  let latest = -Infinity;
  let outOfTurn = 0;
  const late = [];
  for (const x of done) {
    turn = Math.max(x.called, turn + 1000 / RATE);
    late.push(x.released - turn);
    if (x.released < latest) outOfTurn++;
    latest = Math.max(latest, x.released);
  }
  const released = done.map((x) => x.released).sort((a, b) => a - b);
  const rate = ((released.length - 1) * 1000) / (released.at(-1) - released[0]);
  late.sort((a, b) => a - b);
  const own = done
    .filter((x) => x.own !== undefined)
    .map((x) => x.own)
    .sort((a, b) => a - b);
  const ownP99 = own.length === 0 ? undefined : own[Math.min(own.length - 1, Math.floor(0.99 * own.length))];
  const q = (p) => late[Math.min(late.length - 1, Math.floor(p * late.length))] ?? Number.NaN;
  return { rate, outOfTurn, p50: q(0.5), p99: q(0.99), failed, error: errors[0], sent, ownP99 };
}

/** A child: makes the calls i = p, p + 4, ... at start + i * gap; reports when each was made and let through. */
async function child() {
  const [, lib, port, prefix, p, waits, gap] = process.argv.slice(process.argv.indexOf('--child'));
  const { default: Redis } = await import('ioredis');
  // Every command this process sends, whichever client sends it (bottleneck makes its own).
  let sent = 0;
  const send = Redis.prototype.sendCommand;
  Redis.prototype.sendCommand = function counted(...args) {
    sent++;
    return send.apply(this, args);
  };
  const client = new Redis({ port: Number(port) });
  let waitOne;
  const turns = [];
  let close = async () => undefined;
  if (lib === 'sluice') {
    const { createLimiter, redisStore } = await import('@sluice/core');
    // A token bucket of burst 1: one every 10 ms.
    // Each reservation's turn as this process learns it (its reply's time + waitMs): replies come in the
    // order the calls were made, so the k-th is the k-th call's.
    const redis = redisStore({ client });
    const store = Object.create(redis);
    store.decideWith = (request, done, deadline) =>
      redis.decideWith(
        request,
        (e, reply) => {
          if (reply && request.maxWaitMs !== undefined) turns.push(Date.now() + (reply.waitMs ?? 0));
          done(e, reply);
        },
        deadline,
      );
    const limiter = createLimiter({ policy: { limit: RATE, window: '1s', burst: 1 }, store, prefix, timeout: 5000 });
    await limiter.peek('warm-up');
    waitOne = () => limiter.wait('hot', { maxWait: '60s' });
    close = () => limiter.close();
  } else if (lib === 'bottleneck') {
    const { default: Bottleneck } = await import('bottleneck');
    const limiter = new Bottleneck({
      id: prefix,
      datastore: 'ioredis',
      clientOptions: { port: Number(port) },
      minTime: 1000 / RATE,
      maxConcurrent: null,
      clearDatastore: false,
      timeout: 120_000,
    });
    limiter.on('error', (e) => process.send?.({ error: String(e?.message ?? e) }));
    await limiter.ready();
    waitOne = () => limiter.schedule(() => Promise.resolve());
    close = () => limiter.disconnect();
  } else {
    const { RateLimiterRedis, RateLimiterQueue } = await import('rate-limiter-flexible');
    // Its usual shape: 100 points a second (a fixed window), and a queue in front of it in each process.
    const rl = new RateLimiterRedis({ storeClient: client, points: RATE, duration: 1, keyPrefix: prefix });
    const queue = new RateLimiterQueue(rl, { maxQueueSize: Number(waits) });
    waitOne = () => queue.removeTokens(1, 'hot');
  }
  process.send('ready');
  const { start } = await new Promise((resolve) => process.once('message', resolve));
  sent = 0;
  const records = [];
  const pending = [];
  let error;
  for (let i = Number(p); i < Number(waits); i += PROCESSES) {
    const at = start + i * Number(gap);
    const delay = at - Date.now();
    if (delay > 0) await new Promise((r) => setTimeout(r, delay));
    const record = { i, called: Date.now() };
    records.push(record);
    pending.push(
      waitOne().then(
        () => {
          record.released = Date.now();
        },
        (e) => {
          error ??= String(e?.message ?? e);
        },
      ),
    );
  }
  // Past 90 s a wait that has not come is counted as failed.
  await Promise.race([Promise.all(pending), new Promise((r) => setTimeout(r, 90_000))]);
  // sluice: each wait's lateness past its own reserved turn.
  records.forEach((r, k) => {
    if (turns[k] !== undefined && r.released !== undefined) r.own = r.released - turns[k];
  });
  process.send({ records, error, sent });
  await close().catch(() => undefined);
  client.disconnect();
  process.exit(0);
}
