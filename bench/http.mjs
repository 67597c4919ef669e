// HTTP benchmark: per framework, the bare app, sluice on the memory store, sluice on Redis, and
// the libraries users would pick instead on the same Redis. Each contender's server is its own child
// process (bench/http-servers/server.mjs) on 127.0.0.1; autocannon runs here, 64 connections, every
// request carrying an x-client-id header spread over 10,000 values; every limiter keys on it and allows
// far more than a run sends, so nothing is denied (any non-2xx fails the run). One redis-server, started
// here, FLUSHALLed before each framework. Per framework, every contender's server is started and warmed
// up, then the rounds run: round r loads every contender once, in an order rotated by r, for SECONDS
// each. Short slices close together in time: on this shared VM the machine's speed drifts by tens of
// percent over tens of seconds, so a ratio to the bare app is only as good as the two measures are
// close. Figures: median (min–max) req/s over rounds, and the ratio to the bare app of the same
// framework in the same round.
// Usage: pnpm bench:http [-- --seconds 2 --rounds 10 --warmup 1 --frameworks express,fastify,koa,hono,nestjs-express,nestjs-fastify]
//   --contenders sluice-redis,bare   run only these contenders (bare is always kept, for the ratios)
//   --control                        add a second bare app: its ratio to the first shows the noise floor
//   --baseline DIR                   add sluice on Redis as built in DIR, another checkout (git worktree add
//                                    ../old <commit>; pnpm i; pnpm build), beside this one: a change's before
//                                    and after in the same rounds, each round's ratio of this build to it
//   --handler json|text              the route answers {"hello":"world"} (default) or the text 'ok' (cheaper:
//                                    what a limiter costs shows more); text has targets of its own
// Every contender also gets CPU added per request over the bare app of the same round: its server's and
// Redis' CPU µs per request less the bare app's.
//   --profile DIR                    run the servers under node --cpu-prof, profiles in DIR
//                                    (summarize with: node bench/lab/profile-summary.mjs DIR/*/*.cpuprofile)
import { execFileSync, fork } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { arg } from './args.mjs';
import { startRedis } from './redis-server.mjs';

const require = createRequire(import.meta.url);
const autocannon = require('autocannon');

const SECONDS = Number(arg('seconds', 2));
const ROUNDS = Number(arg('rounds', 10));
const WARMUP = Number(arg('warmup', 1));
const FRAMEWORKS = arg('frameworks', 'express,fastify,koa,hono,nestjs-express,nestjs-fastify').split(',');
const ONLY = arg('contenders', undefined)?.split(',');
const PROFILE = arg('profile', undefined);
const CONTROL = process.argv.includes('--control');
const BASELINE = arg('baseline', undefined);
const HANDLER = arg('handler', 'json');
if (HANDLER !== 'json' && HANDLER !== 'text') throw new Error('--handler must be json or text');
const CONNECTIONS = 64;
const KEYS = 10_000;
const SERVER = new URL('./http-servers/server.mjs', import.meta.url);
const HOOKS = fileURLToPath(new URL('./http-servers/snapshot-hooks.mjs', import.meta.url));
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PACKAGES = ['core', 'express', 'fastify', 'koa', 'hono', 'nestjs'];

const CONTENDERS = {
  express: [
    'bare',
    'sluice-memory',
    'sluice-redis',
    'sluice-redis-settle',
    'sluice-redis-skip-failed',
    'express-rate-limit',
    'rate-limiter-flexible',
  ],
  fastify: ['bare', 'sluice-memory', 'sluice-redis', 'sluice-redis-settle', 'sluice-redis-skip-failed', '@fastify/rate-limit'],
  koa: ['bare', 'sluice-memory', 'sluice-redis', 'sluice-redis-settle', 'sluice-redis-skip-failed', 'koa-ratelimit'],
  hono: ['bare', 'sluice-memory', 'sluice-redis', 'sluice-redis-settle', 'sluice-redis-skip-failed', 'hono-rate-limiter'],
  // NestJS on each platform: SluiceModule's guard, and @nestjs/throttler's guard on either Redis storage.
  'nestjs-express': ['bare', 'sluice-memory', 'sluice-redis', 'sluice-throttler-storage', '@nestjs/throttler'],
  'nestjs-fastify': ['bare', 'sluice-memory', 'sluice-redis', 'sluice-throttler-storage', '@nestjs/throttler'],
};
const LABELS = {
  bare: 'bare app',
  control: 'bare app, a second one (control)',
  'sluice-memory': 'sluice, memory store',
  'sluice-redis': 'sluice, Redis',
  'sluice-redis-settle': 'sluice, Redis, settle (cost 2 settled to 1)',
  'sluice-redis-skip-failed': 'sluice, Redis, skipFailedRequests',
  'express-rate-limit': 'express-rate-limit + rate-limit-redis',
  'rate-limiter-flexible': 'rate-limiter-flexible (RateLimiterRedis)',
  '@fastify/rate-limit': '@fastify/rate-limit (Redis)',
  'koa-ratelimit': 'koa-ratelimit (Redis)',
  'hono-rate-limiter': 'hono-rate-limiter + @hono-rate-limiter/redis',
  'sluice-throttler-storage': '@nestjs/throttler + sluiceThrottlerStorage (Redis)',
  '@nestjs/throttler': '@nestjs/throttler + @nest-lab/throttler-storage-redis',
};
const ON_REDIS = (contender) => contender !== 'bare' && contender !== 'control' && contender !== 'sluice-memory';
const SLUICE = (contender) => contender.startsWith('sluice-') || contender === 'baseline';

for (const f of FRAMEWORKS)
  if (!CONTENDERS[f]) throw new Error(`--frameworks: unknown framework ${f} (${Object.keys(CONTENDERS).join(', ')})`);
if (ONLY) for (const f of FRAMEWORKS) CONTENDERS[f] = CONTENDERS[f].filter((c) => c === 'bare' || ONLY.includes(c));
if (CONTROL) for (const f of FRAMEWORKS) CONTENDERS[f].splice(1, 0, 'control');
if (BASELINE) {
  if (!existsSync(join(BASELINE, 'packages', 'core', 'dist', 'esm', 'index.js'))) {
    throw new Error(`--baseline ${BASELINE}: no built packages/core there (pnpm i; pnpm build in it)`);
  }
  for (const f of FRAMEWORKS) CONTENDERS[f].splice(CONTENDERS[f].indexOf('sluice-redis') + 1, 0, 'baseline');
}
if (!(SECONDS > 0) || !(ROUNDS >= 1) || !(WARMUP >= 0)) throw new Error('--seconds, --rounds and --warmup must be positive');

// Everything this process starts, stopped on the way out, whatever the way out is.
const children = new Set();
let redis;
let snapshot;
let baseline;
function stopAll() {
  for (const child of children) child.kill('SIGKILL');
  children.clear();
  redis?.stop();
  redis = undefined;
  for (const dir of [snapshot, baseline]) if (dir) rmSync(dir, { recursive: true, force: true });
  snapshot = baseline = undefined;
}
process.on('exit', stopAll);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    console.error(`\n${signal}: stopping servers and redis-server`);
    stopAll();
    process.exit(130);
  });
}

// Every server of a run loads the same build of the sluice packages: a copy of packages/*/dist taken now,
// once no dist has changed for 3 s (a `pnpm build` elsewhere may be rewriting them). From `root`: this
// checkout, or the baseline's.
async function takeSnapshot(root = ROOT) {
  const files = (dir) => readdirSync(dir, { recursive: true }).map((f) => join(dir, f));
  for (let tries = 0; ; tries++) {
    const dists = PACKAGES.map((p) => join(root, 'packages', p, 'dist'));
    const ready = dists.every((d) => existsSync(join(d, 'esm', 'index.js')));
    const newest = ready ? Math.max(...dists.flatMap(files).map((f) => statSync(f).mtimeMs)) : Date.now();
    if (ready && Date.now() - newest > 3_000) break;
    if (tries === 120) throw new Error('packages/*/dist missing or changing for 4 minutes: run `pnpm build` first');
    await new Promise((r) => setTimeout(r, 2_000));
  }
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-http-'));
  const hash = createHash('sha1');
  for (const p of PACKAGES) {
    cpSync(join(root, 'packages', p, 'dist'), join(dir, p, 'dist'), { recursive: true });
    cpSync(join(root, 'packages', p, 'package.json'), join(dir, p, 'package.json'));
    for (const f of files(join(dir, p, 'dist', 'esm')).sort()) if (f.endsWith('.js')) hash.update(readFileSync(f));
  }
  return { dir, hash: hash.digest('hex').slice(0, 12) };
}

function gitState(root = ROOT) {
  try {
    const git = (...a) => execFileSync('git', a, { cwd: root, encoding: 'utf8' }).trim();
    const dirty = git('status', '--short', '--', 'packages', 'lua').split('\n').filter(Boolean).length;
    return `commit ${git('rev-parse', '--short', 'HEAD')}${dirty ? `, ${dirty} uncommitted change(s) under packages/ and lua/` : ''}`;
  } catch {
    return 'commit unknown';
  }
}

function startServer(framework, contender) {
  return new Promise((resolve, reject) => {
    // Profiles of one server go to DIR/<framework>-<contender>-<time>/: the main thread's, and the module hooks thread's (tiny).
    const execArgv = PROFILE
      ? ['--cpu-prof', '--cpu-prof-dir', join(PROFILE, `${framework}-${contender.replace('/', '-')}-${Date.now()}`)]
      : [];
    const as = contender === 'control' ? 'bare' : contender === 'baseline' ? 'sluice-redis' : contender;
    const child = fork(SERVER, [framework, as, String(redis.port), HANDLER], {
      execArgv: ['--import', HOOKS, ...execArgv],
      // The baseline counts under a prefix of its own: another version may not read this one's counters.
      env: {
        ...process.env,
        SLUICE_BENCH_SNAPSHOT: contender === 'baseline' ? baseline : snapshot,
        SLUICE_BENCH_PREFIX: contender === 'baseline' ? 'sluice-baseline' : '',
      },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    children.add(child);
    const timer = setTimeout(() => fail(new Error('did not listen within 15 s')), 15_000);
    const fail = (error) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      children.delete(child);
      reject(new Error(`${framework} ${contender}: ${error.message}`));
    };
    child.once('error', fail);
    child.once('exit', (code, signal) => fail(new Error(`exited (${signal ?? code}) before listening`)));
    child.once('message', ({ port }) => {
      child.on('error', () => {});
      clearTimeout(timer);
      child.removeAllListeners('exit');
      resolve({ child, port });
    });
  });
}

function stopServer(child) {
  children.delete(child);
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', resolve);
    // SIGTERM lets a profiled server write its profile; nothing else needs a clean exit.
    child.kill(PROFILE ? 'SIGTERM' : 'SIGKILL');
  });
}

// Request i carries x-client-id client-(i mod 10,000): every key, evenly, whatever the request rate.
const IDS = Array.from({ length: KEYS }, (_, i) => `client-${i}`);
let sent = 0;
const requests = [
  {
    method: 'GET',
    path: '/',
    setupRequest(req) {
      req.headers = { 'x-client-id': IDS[sent++ % KEYS] };
      return req;
    },
  },
];

async function load(port, seconds) {
  const result = await autocannon({ url: `http://127.0.0.1:${port}/`, connections: CONNECTIONS, duration: seconds, requests });
  const bad = result.non2xx + result.errors + result.timeouts;
  return { rps: result.requests.total / result.duration, bad, result };
}

// Asks a server for 'cpu' (its process.cpuUsage()) or 'events' (sluice's onEvent counts: store errors,
// fallbacks, fail-opens, denials).
function ask(child, what) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer to "${what}"`)), 5_000);
    child.once('message', (message) => {
      clearTimeout(timer);
      resolve(message[what]);
    });
    child.send(what);
  });
}

// redis-server's CPU time (µs) and its commands by name since the last CONFIG RESETSTAT; commands run
// inside a script count too, under their own names, besides the EVALSHA.
async function redisCounters() {
  const info = await redis.client.info('all');
  const n = (name) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)[1]);
  const commands = {};
  for (const m of info.matchAll(/cmdstat_([\w|]+):calls=(\d+)/g)) commands[m[1]] = Number(m[2]);
  return { cpu: (n('used_cpu_user') + n('used_cpu_sys')) * 1e6, commands };
}

const notes = [];
// Starts a contender's server and warms it up. (Its sluice events, if any, count in its first slice.)
async function start(framework, contender) {
  const server = await startServer(framework, contender);
  if (WARMUP > 0) {
    const w = await load(server.port, WARMUP);
    if (w.bad > 0) {
      throw new Error(
        `${framework} ${contender}: warm-up had ${w.result.non2xx} non-2xx, ${w.result.errors} errors, ${w.result.timeouts} timeouts`,
      );
    }
  }
  return server;
}

// One measured slice of a running server.
async function run(framework, contender, { child, port }, round) {
  const where = `${framework} ${contender}`;
  const cpu0 = await ask(child, 'cpu');
  await redis.client.config('RESETSTAT');
  const redis0 = await redisCounters();
  const m = await load(port, SECONDS);
  const cpu1 = await ask(child, 'cpu');
  const done = m.result.requests.total;
  const cpu = (cpu1.user + cpu1.system - cpu0.user - cpu0.system) / done;
  const redis1 = await redisCounters();
  const redisUs = (redis1.cpu - redis0.cpu) / done;
  // Less this script's own INFO and CONFIG calls.
  const commands = Object.fromEntries(Object.entries(redis1.commands).filter(([name]) => !/^(info|config)/.test(name)));
  const calls = Object.entries(commands)
    .sort((a, b) => b[1] - a[1])
    .map(([name, n]) => `${name} ${(n / done).toFixed(n / done < 0.1 ? 3 : 2)}`)
    .join(', ');
  const scripts = ((commands.evalsha ?? 0) + (commands.eval ?? 0)) / done;
  const { non2xx, errors, timeouts } = m.result;
  // sluice's event counts since the last ask (the server resets them when asked).
  const events = SLUICE(contender) ? await ask(child, 'events') : {};
  const local = Object.entries(events)
    .map(([type, n]) => `${type} ${n}`)
    .join(', ');
  console.log(
    `  ${where.padEnd(36)} ${Math.round(m.rps).toLocaleString('en-US').padStart(7)} req/s, server ${cpu.toFixed(1)} µs CPU/req, redis ${redisUs.toFixed(1)} µs CPU/req; non-2xx ${non2xx}, errors ${errors}, timeouts ${timeouts}` +
      (local ? `, sluice events: ${local}` : '') +
      (calls ? `\n      Redis commands per request (script calls included): ${calls}` : ''),
  );
  if (events.denied || events['shadow-denied']) throw new Error(`${where}: sluice denied requests: the limits are too low`);
  if (local) {
    notes.push(`${where} in round ${round + 1}: ${local} (store errors or timeouts: those requests were decided locally, not by Redis)`);
  }
  if (m.bad > 0) throw new Error(`${where}: ${non2xx} non-2xx, ${errors} errors, ${timeouts} timeouts: the run is void`);
  if (ON_REDIS(contender) && Object.keys(commands).length === 0) {
    throw new Error(`${where}: no Redis command during the run: the limiter did not use Redis`);
  }
  return { rps: m.rps, cpu, redis: redisUs, scripts };
}

const rotate = (xs, r) => xs.map((_, i) => xs[(i + r) % xs.length]);
const stats = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length / 2;
  const median = s.length % 2 ? s[Math.floor(mid)] : (s[mid - 1] + s[mid]) / 2;
  return { min: s[0], median, max: s.at(-1) };
};
const fmt = (n) => Math.round(n).toLocaleString('en-US');
const fmtRatio = (n) => n.toFixed(2);

const taken = await takeSnapshot();
snapshot = taken.dir;
if (BASELINE) {
  const base = await takeSnapshot(BASELINE);
  baseline = base.dir;
  LABELS.baseline = `sluice, Redis, baseline build (${gitState(BASELINE)})`;
}
redis = await startRedis();
const total = FRAMEWORKS.reduce((n, f) => n + CONTENDERS[f].length, 0);
console.log(
  `HTTP benchmark: ${FRAMEWORKS.join(', ')}; handler ${HANDLER}; ${total} contenders, ${WARMUP} s warm-up each, then ${ROUNDS} rounds of ${SECONDS} s each, ` +
    `${CONNECTIONS} connections, ${KEYS.toLocaleString('en-US')} keys; redis-server on port ${redis.port}; ` +
    `sluice build ${taken.hash} (${gitState()}); about ${Math.ceil((total * (WARMUP + 1 + ROUNDS * (SECONDS + 0.2))) / 60)} min; load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
);

// runs[framework][contender] = one { rps, cpu, redis } per round
const runs = Object.fromEntries(FRAMEWORKS.map((f) => [f, Object.fromEntries(CONTENDERS[f].map((c) => [c, []]))]));
const started = performance.now();
for (const framework of FRAMEWORKS) {
  await redis.client.flushall();
  const servers = {};
  try {
    for (const contender of CONTENDERS[framework]) servers[contender] = await start(framework, contender);
    for (let r = 0; r < ROUNDS; r++) {
      console.log(`${framework}, round ${r + 1}/${ROUNDS} (load average ${loadavg()[0].toFixed(2)})`);
      for (const contender of rotate(CONTENDERS[framework], r)) {
        runs[framework][contender].push(await run(framework, contender, servers[contender], r));
      }
    }
  } finally {
    await Promise.all(Object.values(servers).map(({ child }) => stopServer(child)));
  }
}
stopAll();
const minutes = (performance.now() - started) / 60_000;

console.log(
  `\nDone in ${minutes.toFixed(1)} min; load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
const roundHeads = Array.from({ length: ROUNDS }, (_, r) => `round ${r + 1}`);
console.log(
  `\n| framework | contender | ${roundHeads.join(' | ')} | req/s, median (min–max) | ratio to bare, median (min–max) | ` +
    'server CPU µs/req | Redis CPU µs/req | CPU µs/req added over bare, median (min–max) | scripts (EVAL/EVALSHA) per req |',
);
console.log(`| --- | --- | ${roundHeads.map(() => '---:').join(' | ')} | ---: | ---: | ---: | ---: | ---: | ---: |`);
const verdicts = [];
const ratiosOf = {}; // ratiosOf[framework][contender] = one ratio to the bare app per round
const addedOf = {}; // addedOf[framework][contender] = CPU µs per request (server + Redis) over the bare app, per round
// Text-handler targets: CPU added per request at most this many µs, and ratio to bare at least 0.8.
const ADDED_TARGET = { express: 5, fastify: 3, koa: 3 };
for (const framework of FRAMEWORKS) {
  const bare = runs[framework].bare.map((x) => x.rps);
  const bareCpu = runs[framework].bare.map((x) => x.cpu + x.redis);
  addedOf[framework] = {};
  const ratios = {};
  ratiosOf[framework] = ratios;
  for (const contender of CONTENDERS[framework]) {
    const xs = runs[framework][contender].map((x) => x.rps);
    ratios[contender] = xs.map((x, r) => x / bare[r]);
    const cells = xs.map((x, r) => `${fmt(x)} (${fmtRatio(ratios[contender][r])})`);
    const s = stats(xs);
    const q = stats(ratios[contender]);
    const cpu = stats(runs[framework][contender].map((x) => x.cpu)).median;
    const added = runs[framework][contender].map((x, r) => x.cpu + x.redis - bareCpu[r]);
    addedOf[framework][contender] = added;
    const a = stats(added);
    const onRedis = (field, digits) =>
      ON_REDIS(contender) ? stats(runs[framework][contender].map((x) => x[field])).median.toFixed(digits) : '';
    console.log(
      `| ${framework} | ${LABELS[contender]} | ${cells.join(' | ')} | ${fmt(s.median)} (${fmt(s.min)}–${fmt(s.max)}) | ` +
        `${fmtRatio(q.median)} (${fmtRatio(q.min)}–${fmtRatio(q.max)}) | ${cpu.toFixed(1)} | ${onRedis('redis', 1)} | ` +
        `${a.median.toFixed(1)} (${a.min.toFixed(1)}–${a.max.toFixed(1)}) | ${onRedis('scripts', 3)} |`,
    );
  }
  if (ratios.control) {
    const c = stats(ratios.control);
    verdicts.push(
      `${framework}: a second bare app at ${fmtRatio(c.median)} (${fmtRatio(c.min)}–${fmtRatio(c.max)}) of the first: the noise floor`,
    );
  }
  // settle and skipFailedRequests: at least 0.8 of bare.
  for (const c of ['sluice-redis-settle', 'sluice-redis-skip-failed']) {
    if (!ratios[c]) continue;
    const q = stats(ratios[c]).median;
    verdicts.push(`${framework}: ${LABELS[c]} at ${fmtRatio(q)} of bare (target 0.8): ${q >= 0.8 ? 'met' : 'MISSED'}`);
  }
  if (!ratios['sluice-redis']) continue;
  const sluice = stats(ratios['sluice-redis']).median;
  const floor = HANDLER === 'text' ? 0.8 : 0.85;
  verdicts.push(`${framework}: sluice on Redis at ${fmtRatio(sluice)} of bare (target ${floor}): ${sluice >= floor ? 'met' : 'MISSED'}`);
  if (HANDLER === 'text' && ADDED_TARGET[framework] !== undefined) {
    const added = stats(addedOf[framework]['sluice-redis']).median;
    const most = ADDED_TARGET[framework];
    verdicts.push(
      `${framework}: sluice on Redis adds ${added.toFixed(1)} µs CPU per request over bare, server + Redis (target at most ${most}): ${added <= most ? 'met' : 'MISSED'}`,
    );
  }
  if (ratios.baseline) {
    const b = stats(ratios['sluice-redis'].map((x, r) => x / ratios.baseline[r]));
    verdicts.push(
      `${framework}: sluice on Redis over the baseline build, per round: ${b.median.toFixed(3)} (${b.min.toFixed(3)}–${b.max.toFixed(3)}); ` +
        `baseline at ${fmtRatio(stats(ratios.baseline).median)} of bare`,
    );
  }
  // @nestjs/throttler's guard on either storage: sluiceThrottlerStorage against @nest-lab/throttler-storage-redis.
  if (ratios['sluice-throttler-storage'] && ratios['@nestjs/throttler']) {
    const [ours, theirs] = [ratios['sluice-throttler-storage'], ratios['@nestjs/throttler']];
    const wins = ours.filter((x, r) => x > theirs[r]).length;
    verdicts.push(
      `${framework}: ${LABELS['sluice-throttler-storage']} ${fmtRatio(stats(ours).median)} vs ${fmtRatio(stats(theirs).median)}: ` +
        `${stats(ours).median > stats(theirs).median ? 'ahead' : 'BEHIND'} (ahead in ${wins} of ${ROUNDS} rounds)`,
    );
  }
  for (const peer of CONTENDERS[framework].filter((c) => ON_REDIS(c) && !SLUICE(c))) {
    const p = stats(ratios[peer]).median;
    const wins = ratios['sluice-redis'].filter((x, r) => x > ratios[peer][r]).length;
    verdicts.push(
      `${framework}: sluice on Redis ${fmtRatio(sluice)} vs ${LABELS[peer]} ${fmtRatio(p)}: ` +
        `${sluice > p ? 'ahead' : 'BEHIND'} (ahead in ${wins} of ${ROUNDS} rounds${HANDLER === 'text' ? `, target 8: ${wins >= 8 ? 'met' : 'MISSED'}` : ''})`,
    );
  }
}
if (notes.length > 0) console.log(`\nWARNING: sluice decided some requests without Redis:\n${notes.map((n) => `- ${n}`).join('\n')}`);
console.log(`\nTargets (ratios are medians of per-round ratios):\n${verdicts.map((v) => `- ${v}`).join('\n')}`);

const { writeResults } = await import('./results.mjs');
const withRounds = (xs) => ({ ...stats(xs), rounds: xs });
writeResults('http', {
  settings: {
    seconds: SECONDS,
    rounds: ROUNDS,
    warmup: WARMUP,
    connections: CONNECTIONS,
    keys: KEYS,
    control: CONTROL,
    handler: HANDLER,
    baseline: BASELINE && gitState(BASELINE),
  },
  build: taken.hash,
  minutes,
  frameworks: Object.fromEntries(
    FRAMEWORKS.map((framework) => {
      const rows = CONTENDERS[framework].map((contender) => {
        const xs = runs[framework][contender];
        const median = (field) => stats(xs.map((x) => x[field])).median;
        return {
          contender,
          label: LABELS[contender],
          onRedis: ON_REDIS(contender),
          requestsPerSecond: withRounds(xs.map((x) => x.rps)),
          ratioToBare: withRounds(ratiosOf[framework][contender]),
          serverCpuUsPerRequest: median('cpu'),
          cpuAddedUsPerRequest: withRounds(addedOf[framework][contender]),
          redisCpuUsPerRequest: ON_REDIS(contender) ? median('redis') : undefined,
          scriptsPerRequest: ON_REDIS(contender) ? median('scripts') : undefined,
        };
      });
      return [framework, rows];
    }),
  ),
  targets: verdicts,
  decidedWithoutRedis: notes,
});
