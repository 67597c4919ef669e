// What a Redis that runs out of memory, or loses its last writes in a fail-over, does to the counters.
//
// Eviction: per maxmemory policy (allkeys-lru, volatile-ttl, noeviction) a fresh redis-server with
// --maxmemory, shared by sluice and a cache. ACTIVE + IDLE keys are each exhausted (LIMIT admitted,
// then denied); then the cache writes CACHE_MB of 1 KB values, twice maxmemory, 1 MB per 1.1 s
// (--step-ms), while the active keys keep being asked (one denied request each per 1 MB written: an
// attacker who keeps knocking). Redis' LRU clock has a resolution of 1 s: unpaced, the whole run
// would fall in a few ticks and allkeys-lru could not tell a knocked key from a cache value. Then
// every key is asked until it is denied: what it admits is over its limit, since none has refilled
// (1 h window). A key whose counter was evicted starts full again: it admits up to its burst again.
// Run with the cache's values without a TTL and with a 1-day TTL (volatile-ttl only evicts keys with
// a TTL, shortest first; every sluice key has one, the time until it is full again).
//
// Fail-over: a master and a replica. KEYS keys are each charged PRE units and replicated; then the
// replica's link is cut (the master drops it and the replica cannot re-sync: a wrong masterauth) and
// each key is charged LOST more units, which only the master has; the master is killed (SIGKILL) and
// the replica promoted (REPLICAOF NO ONE); the limiter's client reconnects to it. Every key is then
// asked until denied. (SIGSTOP on the replica does not lose writes on 127.0.0.1: the kernel holds
// what the master sent in the replica's socket buffer and the replica reads it on SIGCONT.)
//
// Usage: pnpm build && node bench/lab/eviction.mjs [--maxmemory-mb 16] [--limit 10] [--keys 2000] [--lost 4] [--step-ms 1100]
import { createLimiter, redisStore } from '@sluice/core';
import Redis from 'ioredis';
import { startServer } from '../../test/support/redis-harness.mjs';
import { arg } from '../args.mjs';

const MAXMEMORY_MB = Number(arg('maxmemory-mb', 16));
const LIMIT = Number(arg('limit', 10));
const KEYS = Number(arg('keys', 2000));
const LOST = Number(arg('lost', 4));
const CACHE_MB = 2 * MAXMEMORY_MB;
const STEP_MS = Number(arg('step-ms', 1100));
const policy = { limit: LIMIT, window: '1h' };

/** The store refuses calls on a client that has not connected yet: wait for it. */
const ready = (client) => (client.status === 'ready' ? undefined : new Promise((r) => client.once('ready', r)));

/** A redis-server of the shared harness with `extra` arguments, and an ioredis client on it. */
async function server(extra = []) {
  const redis = await startServer(extra);
  const client = new Redis({ port: redis.port, maxRetriesPerRequest: 1 });
  client.on('error', () => {});
  await ready(client);
  return {
    port: redis.port,
    client,
    kill: () => redis.kill(),
    async stop() {
      client.disconnect();
      await redis.stop();
    },
  };
}

/**
 * Asks each of `keys` until it is denied (at most LIMIT + 1 times) or the store does not answer: the
 * store's admissions, all over the limit; the keys that admitted any; the most one key admitted; and
 * the answers that came from the fail mode instead (a write refused by a full Redis).
 */
async function tally(limiter, keys) {
  let total = 0;
  let over = 0;
  let max = 0;
  let failMode = 0;
  for (const key of keys) {
    let admitted = 0;
    for (let i = 0; i <= LIMIT; i++) {
      const d = await limiter.consume(key);
      if (d.source !== 'store') {
        failMode++;
        break;
      }
      if (!d.allowed) break;
      admitted++;
    }
    total += admitted;
    if (admitted > 0) over++;
    max = Math.max(max, admitted);
  }
  return `${total} over the limit (${over} keys, at most ${max} on one)${failMode > 0 ? `, ${failMode} keys answered by the fail mode` : ''}`;
}

async function eviction(maxmemoryPolicy, cacheTtl) {
  const redis = await server(['--maxmemory', `${MAXMEMORY_MB}mb`, '--maxmemory-policy', maxmemoryPolicy]);
  const events = { 'store-error': 0 };
  const limiter = createLimiter({
    policy,
    store: redisStore({ client: redis.client }),
    // Every decision from the store: a cached denial would not touch the key (and not show an eviction).
    denyCache: false,
    breaker: false,
    timeout: 2000,
    prefix: 'e',
    onEvent: (e) => {
      if (e.type === 'store-error') events['store-error']++;
    },
  });
  const active = Array.from({ length: KEYS }, (_, i) => `active-${i}`);
  const idle = Array.from({ length: KEYS }, (_, i) => `idle-${i}`);
  for (const k of [...active, ...idle]) {
    const ds = await Promise.all(Array.from({ length: LIMIT + 1 }, () => limiter.consume(k)));
    if (ds.filter((d) => d.allowed).length !== LIMIT) throw new Error(`${k} did not exhaust`);
  }
  const value = 'x'.repeat(1024);
  let cacheErrors = 0;
  let knocksAdmitted = 0;
  let knocksFailMode = 0;
  for (let mb = 0; mb < CACHE_MB; mb++) {
    const writes = [];
    for (let i = 0; i < 1024; i++) {
      const key = `cache:${mb}:${i}`;
      writes.push((cacheTtl ? redis.client.set(key, value, 'EX', cacheTtl) : redis.client.set(key, value)).catch(() => cacheErrors++));
    }
    await Promise.all(writes);
    // Redis' LRU clock ticks once a second: paced, the knocked keys are younger than the cache's.
    await new Promise((r) => setTimeout(r, STEP_MS));
    const knocks = await Promise.all(active.map((k) => limiter.consume(k)));
    // Each knock is on an exhausted key: one the store admits has lost its counter.
    knocksAdmitted += knocks.filter((d) => d.allowed && d.source === 'store').length;
    knocksFailMode += knocks.filter((d) => d.source !== 'store').length;
  }
  const stats = Object.fromEntries(
    (await redis.client.info('stats'))
      .split('\r\n')
      .map((l) => l.split(':'))
      .filter((p) => p.length === 2),
  );
  const sluiceKeys = (await redis.client.keys('e:*')).length;
  // A fresh key's admission writes: refused (OOM) under noeviction, so the fail mode answers it.
  const fresh = await Promise.all(Array.from({ length: 100 }, (_, i) => limiter.consume(`fresh-${i}`)));
  const row = {
    policy: maxmemoryPolicy,
    cache: cacheTtl ? `TTL ${cacheTtl} s` : 'no TTL',
    evicted: Number(stats.evicted_keys),
    sluiceKeysLeft: `${sluiceKeys} of ${2 * KEYS}`,
    cacheWritesRefused: cacheErrors,
    knocksAdmitted,
    knocksFailMode,
    freshKeysFromStore: `${fresh.filter((d) => d.source === 'store').length} of ${fresh.length}`,
    storeErrors: events['store-error'],
    active: await tally(limiter, active),
    idle: await tally(limiter, idle),
  };
  await limiter.close();
  await redis.stop();
  return row;
}

async function failover() {
  const master = await server();
  const replica = await server(['--replicaof', '127.0.0.1', String((await master.client.config('GET', 'port'))[1])]);
  const synced = async () => {
    for (let i = 0; i < 400; i++) {
      const info = await replica.client.info('replication');
      if (info.includes('master_link_status:up')) {
        const offset = (s) => Number(/master_repl_offset:(\d+)/.exec(s)[1]);
        if (offset(info) === offset(await master.client.info('replication'))) return;
      }
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error('replica did not sync');
  };
  await synced();
  // The app's client: first on the master; after the fail-over on the promoted replica, as Sentinel or
  // a DNS name would move it.
  let client = new Redis({ port: master.port, maxRetriesPerRequest: 1 });
  await ready(client);
  const make = () => createLimiter({ policy, store: redisStore({ client }), denyCache: false, breaker: false, timeout: 2000, prefix: 'f' });
  let limiter = make();
  const keys = Array.from({ length: KEYS }, (_, i) => `k${i}`);
  const PRE = LIMIT - LOST;
  for (let i = 0; i < PRE; i++) await Promise.all(keys.map((k) => limiter.consume(k)));
  await synced();
  await replica.client.config('SET', 'masterauth', 'not-the-password');
  await master.client.client('KILL', 'TYPE', 'replica');
  await new Promise((r) => setTimeout(r, 100));
  // LOST more units per key: admitted, answered to their callers, and on the master only.
  const inFlight = await Promise.all(keys.flatMap((k) => Array.from({ length: LOST }, () => limiter.consume(k))));
  const admittedLost = inFlight.filter((d) => d.allowed && d.source === 'store').length;
  const lag =
    Number(/master_repl_offset:(\d+)/.exec(await master.client.info('replication'))[1]) -
    Number(/slave_repl_offset:(\d+)/.exec(await replica.client.info('replication'))?.[1] ?? 0);
  await master.kill();
  await replica.client.replicaof('NO', 'ONE');
  client.disconnect();
  client = new Redis({ port: replica.port, maxRetriesPerRequest: 1 });
  await ready(client);
  limiter = make();
  const overLimit = await tally(limiter, keys);
  client.disconnect();
  await replica.stop();
  await master.stop();
  return {
    keys: KEYS,
    limit: LIMIT,
    chargedAndReplicated: PRE,
    chargedNotReplicated: LOST,
    admittedLost,
    replicationBytesBehind: lag,
    overLimit,
  };
}

console.log(
  `eviction: maxmemory ${MAXMEMORY_MB} MB, ${KEYS} active + ${KEYS} idle keys at ${LIMIT}/1h (token bucket), ${CACHE_MB} MB of cache written`,
);
for (const cacheTtl of [0, 86_400]) {
  for (const p of ['allkeys-lru', 'volatile-ttl', 'noeviction']) console.log(JSON.stringify(await eviction(p, cacheTtl)));
}
console.log('fail-over with the last writes lost:');
console.log(JSON.stringify(await failover()));
process.exit(0);
