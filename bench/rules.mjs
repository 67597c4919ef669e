// Rules operators change at run time, on one redis-server this script starts. Two parts (--part decisions,
// --part writes; both by default).
//
// decisions: rules' cost per decision. Three limiters, side by side in interleaved rounds: no rules at all;
// rules with none loaded; rules with 100,000 loaded (half exact keys, half CIDR ranges: 25,000 IPv4 /30 and
// 25,000 IPv6 /64). Each consumes 10,000 IPv4 client keys, passing the key as the client IP too (as the
// adapters do), none of which any rule matches, so every rule is looked at and every decision still goes to
// Redis: what is measured is the rule check's cost on the way. Per limiter and round: Node CPU per decision
// (process.cpuUsage), Redis CPU per decision (INFO cpu), and Redis commands per decision (INFO commandstats:
// the rules' refresh is one small EVALSHA per second, never one per decision). The ratios to no rules are
// taken within each round. Then the matcher alone, on the same 100,000 rules: this trie (rule-match.ts)
// against node:net's BlockList, ns per lookup, and the time to build each.
//
// writes: what a write costs as the rules grow, and how soon the writes are in force on another process.
// For 1,000, 10,000 and 100,000 rules already stored (written straight into Redis, as lua/rules.lua keeps
// them), a writer process makes --writes new deny rules through rules.deny(), 500 in flight (after 500 it
// does not time), while a reader process (a limiter with rules, refresh 1 s) follows: writes per second,
// and the ms from the last write's answer until the reader holds every rule. Then imports from empty:
// 10,000 and 100,000 writes the same way.
// A run that does not finish within --budget seconds is stopped and shows the writes done by then.
// Usage: pnpm build && node bench/rules.mjs [--part decisions|writes] [--seconds 2 --rounds 5 --inflight 512]
//   [--writes 2000 --write-rounds 3 --budget 60]
import { execFileSync, fork } from 'node:child_process';
import { BlockList } from 'node:net';
import { fileURLToPath } from 'node:url';
import { createLimiter, createRules, redisStore } from '@sluice/core';
import Redis from 'ioredis';
import { RuleSet } from '../packages/core/dist/esm/rules/match.js';
import { arg } from './args.mjs';
import { startRedis } from './redis-server.mjs';
import { stats } from './stats.mjs';

const SECONDS = Number(arg('seconds', 2));
const ROUNDS = Number(arg('rounds', 5));
const IN_FLIGHT = Number(arg('inflight', 512));
const RULES = 100_000;
const WRITES = Number(arg('writes', 2000));
const WRITE_ROUNDS = Number(arg('write-rounds', 3));
const BUDGET_MS = Number(arg('budget', 60)) * 1000;
const WRITES_IN_FLIGHT = 500;
const WARM_UP = 500;

// Client keys in 100.64.0.0/10, where no rule is.
const keys = Array.from({ length: 10_000 }, (_, i) => `100.${64 + ((i >> 16) & 63)}.${(i >> 8) & 255}.${i & 255}`);

/** `count` deny rules: [identity, value] as lua/rules.lua stores them, and as patterns. */
function ruleFields(count) {
  const fields = [];
  const patterns = [];
  for (let j = 0; j < count; j++) {
    const n = j * 4;
    const pattern =
      j % 2 === 0
        ? `customer:${j}`
        : j % 4 === 1
          ? `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}/30`
          : `2001:db8:${(j & 0xffff).toString(16)}:${(j >> 16).toString(16)}::/64`;
    patterns.push(pattern);
    fields.push(JSON.stringify(['deny', '', pattern]), '0|{}');
  }
  return { fields, patterns };
}

/** Part decisions: a limiter's cost per decision with 0 and 100,000 rules, and the matcher alone. */
async function decisions(redis) {
  const { client } = redis;
  const store = redisStore({ client });
  const { fields, patterns } = ruleFields(RULES);
  for (let i = 0; i < fields.length; i += 10_000) await client.hset('c:{#rules}:set', ...fields.slice(i, i + 10_000));
  await client.incr('c:{#rules}:v');

  const policy = '1000000/1h';
  const empty = createRules({ store, prefix: 'b' });
  let loadedAt = 0;
  const full = createRules({
    store,
    prefix: 'c',
    onEvent: (e) => {
      if (e.type === 'rule-change' && e.rules === RULES) loadedAt = performance.now();
      if (e.type === 'rule-error') console.error(`rules: ${e.error.message}`);
    },
  });
  const started = performance.now();
  while (loadedAt === 0) await new Promise((r) => setTimeout(r, 10));
  console.log(`100,000 rules loaded by a process in ${Math.round(loadedAt - started)} ms (read, decode, trie)`);

  const contenders = [
    { name: 'no rules', limiter: createLimiter({ policy, store, prefix: 'a', timeout: 10_000 }) },
    { name: 'rules, 0 loaded', limiter: createLimiter({ policy, store, prefix: 'b', timeout: 10_000, rules: empty }) },
    { name: 'rules, 100,000 loaded', limiter: createLimiter({ policy, store, prefix: 'c', timeout: 10_000, rules: full }) },
  ];

  let offStore = 0;
  /** One contender for SECONDS at IN_FLIGHT: decisions, Node CPU µs, Redis CPU µs, Redis commands. */
  async function run(limiter) {
    await client.config('RESETSTAT');
    const redisBefore = await redis.cpuUs();
    const cpuBefore = process.cpuUsage();
    const end = performance.now() + SECONDS * 1000;
    let n = 0;
    let k = 0;
    const worker = async () => {
      while (performance.now() < end) {
        const key = keys[k++ % keys.length];
        const d = await limiter.consume(key, { ip: key });
        if (d.source !== 'store') offStore++;
        n++;
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    const cpu = process.cpuUsage(cpuBefore);
    const redisCpu = (await redis.cpuUs()) - redisBefore;
    const commandstats = await client.info('commandstats');
    let commands = 0;
    for (const m of commandstats.matchAll(/^cmdstat_(\w+):calls=(\d+)/gm))
      if (m[1] !== 'info' && m[1] !== 'config') commands += Number(m[2]);
    const evalsha = Number(/^cmdstat_evalsha:calls=(\d+)/m.exec(commandstats)?.[1] ?? 0);
    return { n, nodeUs: (cpu.user + cpu.system) / n, redisUs: redisCpu / n, commands: commands / n, evalsha };
  }

  for (const c of contenders) await run(c.limiter); // warm-up: scripts loaded, code optimized
  const rounds = contenders.map(() => []);
  for (let r = 0; r < ROUNDS; r++) {
    // Rotate the order each round, so that no contender always runs first after a pause.
    for (let i = 0; i < contenders.length; i++) {
      const c = (i + r) % contenders.length;
      rounds[c].push(await run(contenders[c].limiter));
    }
  }
  if (offStore > 0) throw new Error(`${offStore} decisions did not come from Redis: raise the timeout`);

  const fmt = (s, d = 3) => `${s.median.toFixed(d)} (${s.min.toFixed(d)}–${s.max.toFixed(d)})`;
  const load = execFileSync('uptime', { encoding: 'utf8' }).trim();
  console.log(`\n${load}\n${ROUNDS} rounds of ${SECONDS} s each, ${IN_FLIGHT} in flight, 10,000 keys\n`);
  console.log(
    '| limiter | decisions/s | Node CPU µs per decision | ratio to no rules | Redis CPU µs per decision | ratio to no rules | Redis commands per decision |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- |');
  contenders.forEach((c, i) => {
    const rs = rounds[i];
    const ratio = (field) => stats(rs.map((x, r) => x[field] / rounds[0][r][field]));
    console.log(
      `| ${c.name} | ${Math.round(stats(rs.map((x) => x.n / SECONDS)).median).toLocaleString('en')} | ${fmt(stats(rs.map((x) => x.nodeUs)))} | ${
        i === 0 ? '1' : fmt(ratio('nodeUs'))
      } | ${fmt(stats(rs.map((x) => x.redisUs)))} | ${i === 0 ? '1' : fmt(ratio('redisUs'))} | ${fmt(stats(rs.map((x) => x.commands)), 4)} |`,
    );
  });

  // The matcher alone: lookups of addresses that no rule holds, and of ones a range holds.
  const rules = patterns.map((pattern) => ({ kind: 'deny', pattern }));
  let t = performance.now();
  const set = new RuleSet(rules);
  const trieBuild = performance.now() - t;
  t = performance.now();
  const list = new BlockList();
  for (const p of patterns) {
    if (!p.includes('/')) continue;
    const [a, bits] = p.split('/');
    list.addSubnet(a, Number(bits), a.includes(':') ? 'ipv6' : 'ipv4');
  }
  const listBuild = performance.now() - t;
  const probes = [...keys.slice(0, 5000), ...Array.from({ length: 5000 }, (_, i) => `10.${(i >> 8) & 255}.${i & 255}.${(i * 4) & 255}`)];
  /** ns per lookup of `fn` over `ips`, `reps` times a round. */
  const time = (fn, ips, reps) => {
    const rs = [];
    for (let r = 0; r < ROUNDS; r++) {
      const t0 = process.hrtime.bigint();
      let hits = 0;
      for (let rep = 0; rep < reps; rep++) for (const ip of ips) if (fn(ip)) hits++;
      rs.push(Number(process.hrtime.bigint() - t0) / (reps * ips.length));
      if (hits === 0) throw new Error('no hits');
    }
    return stats(rs);
  };
  // The trie as the limiter asks it (a key's rule remembered) and walked each time; BlockList on a sample,
  // since it checks its ranges one by one.
  time((ip) => set.match(ip, undefined, ip, 0), probes, 20);
  const trie = time((ip) => set.match(ip, undefined, ip, 0), probes, 20);
  // A key of its own and the address as the client IP: not remembered, every lookup walks the trie.
  const cold = time((ip) => set.match('-', undefined, ip, 0), probes, 20);
  const hitting = probes.filter((ip) => set.match('-', undefined, ip, 0) !== undefined);
  const sample = [...probes.slice(0, 50), ...hitting.slice(0, 50)];
  const blockList = time((ip) => list.check(ip, 'ipv4'), sample, 1);
  console.log(
    `\n| matcher, 100,000 rules (50,000 ranges) | build ms | ns per lookup (${Math.round((100 * hitting.length) / probes.length)}% hits; BlockList: 50%) |`,
  );
  console.log('| --- | --- | --- |');
  console.log(
    `| trie (rule-match.ts: keys, both families, the rule found), a key's rule remembered | ${Math.round(trieBuild)} | ${fmt(trie, 0)} |`,
  );
  console.log(`| the same, each lookup walking the trie | | ${fmt(cold, 0)} |`);
  console.log(`| node:net BlockList (ranges only, yes or no) | ${Math.round(listBuild)} | ${fmt(blockList, 0)} |`);

  for (const c of contenders) await c.limiter.close();
  await empty.close();
  await full.close();
}

/** A writer or a reader process of part writes (`--role`), on the Redis at `--port`, rules of `--prefix`. */
async function role(name) {
  const client = new Redis({ port: Number(arg('port')) });
  const store = redisStore({ client });
  const prefix = arg('prefix');
  const target = Number(arg('target'));
  let loaded;
  const first = new Promise((resolve) => {
    loaded = resolve;
  });
  const rules = createRules({
    store,
    prefix,
    refresh: '1s',
    onEvent: (e) => {
      if (e.type === 'rule-error') console.error(`${name}: ${e.error.message}`);
      if (e.type !== 'rule-change') return;
      loaded();
      // The reader holds every rule: the writes are in force here.
      if (name === 'reader' && e.rules >= target) process.send({ held: Date.now() });
    },
  });
  await first;
  if (name === 'reader') {
    createLimiter({ policy: '10/1s', store, prefix, rules });
    process.send({ ready: true });
    return;
  }
  const count = Number(arg('count'));
  let next = 0;
  let done = 0;
  /** Writes w:<n> from `next` up to `until`, WRITES_IN_FLIGHT at a time. */
  const write = (until, report) =>
    Promise.all(
      Array.from({ length: WRITES_IN_FLIGHT }, async () => {
        while (next < until) {
          await rules.deny(`w:${next++}`);
          if (report && ++done % 10 === 0) process.send({ done });
        }
      }),
    );
  // A warm-up, not timed: the writes a long import makes once its process and connection are warm.
  await write(WARM_UP, false);
  process.send({ warm: Date.now() });
  const started = performance.now();
  await write(WARM_UP + count, true);
  process.send({ done, ms: performance.now() - started, end: Date.now() });
}

/** Starts `--role name` of this script; resolves its messages through `on`. */
function child(name, args, on) {
  const proc = fork(fileURLToPath(import.meta.url), ['--role', name, ...args.flatMap(([k, v]) => [`--${k}`, String(v)])]);
  proc.on('message', on);
  return proc;
}

/**
 * One run of part writes: `stored` rules already in the store, then `count` writes by a writer process,
 * followed by a reader. Resolves { done, ms, writesPerS, inForceMs } (inForceMs undefined when not in force
 * within the budget).
 */
async function writeRun(redis, stored, count) {
  const prefix = `w${stored}-${count}-${Math.random().toString(36).slice(2, 8)}`;
  const { fields } = ruleFields(stored);
  for (let i = 0; i < fields.length; i += 10_000) await redis.client.hset(`${prefix}:{#rules}:set`, ...fields.slice(i, i + 10_000));
  await redis.client.incr(`${prefix}:{#rules}:v`);
  const common = [
    ['port', redis.port],
    ['prefix', prefix],
    ['target', stored + WARM_UP + count],
  ];
  let held;
  let ready;
  const readerReady = new Promise((resolve) => {
    ready = resolve;
  });
  const reader = child('reader', common, (m) => {
    if (m.ready) ready();
    if (m.held) held ??= m.held;
  });
  await readerReady;
  let done = 0;
  let warm;
  let finished;
  const writerDone = new Promise((resolve) => {
    finished = resolve;
  });
  const writer = child('writer', [...common, ['count', count]], (m) => {
    if (m.warm) warm = m.warm;
    if (m.done !== undefined) done = m.done;
    if (m.end) finished(m);
  });
  const started = Date.now();
  const end = await Promise.race([writerDone, new Promise((r) => setTimeout(r, BUDGET_MS))]);
  writer.kill();
  let inForceMs;
  if (end !== undefined) {
    const deadline = Date.now() + BUDGET_MS;
    while (held === undefined && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    if (held !== undefined) inForceMs = Math.max(0, held - end.end);
  }
  reader.kill();
  await redis.client.unlink(...(await redis.client.keys(`${prefix}:*`)));
  // Stopped: the rate of the timed writes done, from the warm-up's end (none timed when it did not end).
  const ms = end?.ms ?? Date.now() - (warm ?? started);
  return { done, count, ms, writesPerS: (done * 1000) / ms, inForceMs };
}

/** Part writes: writes per second at 1,000, 10,000 and 100,000 rules stored, and imports from empty. */
async function writes(redis) {
  const fmt = (s, d = 0) =>
    `${s.median.toLocaleString('en', { maximumFractionDigits: d })} (${s.min.toLocaleString('en', { maximumFractionDigits: d })}–${s.max.toLocaleString('en', { maximumFractionDigits: d })})`;
  const cell = (runs, field, d) => {
    const xs = runs.map((r) => r[field]).filter((x) => x !== undefined);
    return xs.length === runs.length ? fmt(stats(xs), d) : `not in force within ${BUDGET_MS / 1000} s (${xs.length} of ${runs.length})`;
  };
  const unfinished = (runs) =>
    runs.filter((r) => r.done < r.count).map((r) => `${r.done.toLocaleString('en')} of ${r.count.toLocaleString('en')}`);
  console.log(`\n${execFileSync('uptime', { encoding: 'utf8' }).trim()}`);
  console.log(
    `${WRITE_ROUNDS} rounds; ${WRITES_IN_FLIGHT} writes in flight; a second process (refresh 1 s) follows; budget ${BUDGET_MS / 1000} s per run\n`,
  );
  console.log('| rules stored before | writes timed | writes/s | ms until in force on the other process, after the last write |');
  console.log('| --- | --- | --- | --- |');
  const row = (stored, count, runs) => {
    const cut = unfinished(runs);
    const rate = cell(runs, 'writesPerS', 0) + (cut.length ? `; stopped at ${cut.join(', ')} done` : '');
    console.log(
      `| ${stored === 0 ? 'none: an import' : stored.toLocaleString('en')} | ${count.toLocaleString('en')} | ${rate} | ${cell(runs, 'inForceMs', 0)} |`,
    );
  };
  for (const stored of [1_000, 10_000, 100_000]) {
    const runs = [];
    for (let r = 0; r < WRITE_ROUNDS; r++) runs.push(await writeRun(redis, stored, WRITES));
    row(stored, WRITES, runs);
  }
  for (const count of [10_000, 100_000]) {
    const runs = [];
    for (let r = 0; r < WRITE_ROUNDS; r++) runs.push(await writeRun(redis, 0, count));
    row(0, count, runs);
  }
}

const roleName = arg('role');
if (roleName !== undefined) {
  await role(roleName);
} else {
  const part = arg('part', 'all');
  const redis = await startRedis();
  if (part === 'all' || part === 'decisions') await decisions(redis);
  if (part === 'all' || part === 'writes') await writes(redis);
  await redis.stop();
}
