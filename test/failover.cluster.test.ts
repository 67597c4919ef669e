// Redis Cluster fail-over under load: the master of a busy key's slot is SIGKILLed while calls keep
// coming. During the fail-over every call answers by the fail mode within the limiter's timeout; once
// a replica is promoted (cluster-node-timeout 1000 ms) decisions come from the store again, the script
// reloaded on the new master (whose script cache is empty: NOSCRIPT, then EVAL).
//
// What the user must set on the ioredis Cluster: nothing. `new Cluster(startupNodes)` with ioredis'
// defaults is what this test uses. The limiter's own timeout bounds every call, so the commands that
// ioredis keeps retrying for about 2 s after the kill (retryDelayOnFailover 100 ms x maxRedirections
// 16, ending in "Too many Cluster redirections") never hold a request; the breaker keeps new calls off
// the dying node meanwhile. Do not set `enableOfflineQueue: false` unless you wait for the client's
// 'ready' first: every call made before the Cluster has loaded its slots then fails at once, which
// opens the breaker before Redis has done anything wrong.
import { performance } from 'node:perf_hooks';
import { createLimiter, type Decision, type LimiterEvent, redisStore } from '@sluice/core';
import Redis, { Cluster } from 'ioredis';
import { startLoad } from './support/load';
import {
  info,
  killMasterOf,
  type RedisCluster,
  replicasInSync,
  sleep,
  startCluster,
  uniquePrefix,
  waitForPromotion,
} from './support/redis';
import { meterStalls } from './support/stalls';
import { until } from './support/until';

const TIMEOUT = 100;
const MARGIN = 75;

describe('Redis Cluster fail-over under load', () => {
  let cluster: RedisCluster;
  beforeAll(async () => {
    // Diskless sync at once, so the replicas are in sync (and allowed to fail over) within a second.
    cluster = await startCluster(['--repl-diskless-sync-delay', '0']);
    await replicasInSync(cluster);
  }, 45_000);
  afterAll(() => cluster?.stop());
  let opened: Cluster | undefined;
  afterEach(() => opened?.disconnect());

  it('SIGKILL of the busy slot master: fail mode during the fail-over, the store after promotion, no error', async () => {
    const client = new Cluster(cluster.startupNodes());
    opened = client;
    client.on('error', () => {});
    await new Promise((r) => client.once('ready', r));
    const events: Array<LimiterEvent & { at: number }> = [];
    const onEvent = (e: LimiterEvent) => events.push({ ...e, at: performance.now() });
    const store = redisStore({ client });
    const prefixes = { open: uniquePrefix(), closed: uniquePrefix(), multi: uniquePrefix() };
    const limiters = {
      open: createLimiter({ policy: '100000/1h', store, failMode: 'open', timeout: TIMEOUT, prefix: prefixes.open, onEvent }),
      closed: createLimiter({ policy: '100000/1h', fallback: '40/1h', store, timeout: TIMEOUT, prefix: prefixes.closed, onEvent }),
      // Fixed window for the long policy: its remaining moves only by what is charged (from the first hit: no hour turns mid-test).
      multi: createLimiter({
        policy: ['10/s', { limit: 1000, window: '1h', algorithm: 'fixed-window', start: 'first-hit' }],
        store,
        timeout: TIMEOUT,
        prefix: prefixes.multi,
        onEvent,
      }),
    };
    // When this process was starved of CPU by the rest of the machine: time a call could not be answered.
    const stalls = meterStalls();
    const stalled = stalls.within;
    // Ten callers: five on the open limiter, three on the closed one, two on the multi-policy one.
    const load = startLoad(
      (['open', 'open', 'open', 'open', 'open', 'closed', 'closed', 'closed', 'multi', 'multi'] as const).map(
        (name) => [name, () => limiters[name].consume('busy')] as const,
      ),
    );
    const { calls } = load;
    let killedAt = 0;
    let promotedAt = 0;
    let owner = 0;
    try {
      await sleep(400);
      const killed = await killMasterOf(cluster, 'busy');
      killedAt = killed.killedAt;
      owner = await waitForPromotion(cluster, 'busy', killed.port);
      promotedAt = performance.now();
      expect(killed.replicas).toContain(owner);
      // The load runs on until what the assertions below read is there: more than 10 calls of the open and
      // the closed limiter made a second or more after the promotion, and one of the multi-policy one's
      // decided by the store.
      const after = (name: string) => calls.filter((c) => c.name === name && c.start > promotedAt + 1000);
      const enough = () =>
        after('open').length > 10 && after('closed').length > 10 && after('multi').some((c) => c.decision?.source === 'store');
      await until(enough, true, { withinMs: 30_000, what: 'calls after the promotion' });
    } finally {
      await load.stop();
      stalls.stop();
    }

    // No call threw, and every one answered within the timeout and a small margin, plus the stalls
    // this process had while the call was out (a call held by a dead node waits on a timer, which a
    // stall does not cover).
    expect(load.errors().map(String)).toEqual([]);
    const over = (c: { start: number; ms: number }) => c.ms - (TIMEOUT + MARGIN + stalled(c.start, c.start + c.ms));
    const slowest = calls.reduce((a, c) => (over(c) > over(a) ? c : a));
    if (over(slowest) > 0) {
      const stalls = stalled(slowest.start, slowest.start + slowest.ms);
      throw new Error(`a call took ${slowest.ms.toFixed(0)} ms (${slowest.name}); stalls meanwhile ${stalls.toFixed(0)} ms`);
    }

    // During the fail-over: the fail mode answers. Open allows; closed admits at most its fallback.
    const during = calls.filter((c) => c.start > killedAt + 50 && c.start + c.ms < promotedAt - 50);
    const by = (name: keyof typeof limiters, cs: typeof calls) => load.decisions(name, cs);
    expect(by('open', during).length).toBeGreaterThan(20);
    expect(by('open', during).every((d) => d.allowed && (d.source === 'fail-open' || d.source === 'store'))).toBe(true);
    expect(by('open', during).filter((d) => d.source === 'fail-open').length).toBeGreaterThan(0);
    expect(by('closed', calls).every((d) => d.source === 'store' || d.source === 'fallback')).toBe(true);
    expect(by('closed', calls).filter((d) => d.source === 'fallback' && d.allowed).length).toBeLessThanOrEqual(40);
    expect(by('multi', during).every((d) => d.source === 'fallback' || d.source === 'store' || d.source === 'deny-cache')).toBe(true);

    // After the promotion: the store decides again, for every limiter, with no store error.
    const after = calls.filter((c) => c.start > promotedAt + 1000);
    for (const name of ['open', 'closed'] as const) {
      expect(by(name, after).length).toBeGreaterThan(10);
      expect(by(name, after).every((d) => d.source === 'store')).toBe(true);
    }
    expect(by('multi', after).every((d) => d.source === 'store' || d.source === 'deny-cache')).toBe(true);
    expect(by('multi', after).some((d) => d.source === 'store')).toBe(true);
    const firstStore = calls.find((c) => c.start > killedAt && c.decision?.source === 'store' && c.name === 'open');
    expect(firstStore).toBeDefined();
    expect(firstStore!.start - promotedAt).toBeLessThan(1000);
    expect(events.filter((e) => e.type === 'store-error' && e.at > promotedAt + 1000)).toEqual([]);

    // Store errors carry type, key, error and latency; each breaker opened and closed around the fail-over.
    // Before the kill the only error allowed is a timeout: a busy machine can starve a live Redis past
    // 100 ms. Anything else before the kill, or no error after it, is a fault.
    const errors = events.filter((e) => e.type === 'store-error');
    const timedOut = (e: { error?: unknown }) => e.error instanceof Error && e.error.name === 'StoreTimeoutError';
    expect(errors.filter((e) => e.at > killedAt).length).toBeGreaterThan(0);
    expect(errors.filter((e) => e.at <= killedAt && !timedOut(e))).toEqual([]);
    for (const e of errors) {
      expect(e.key).toBe('busy');
      expect(e.error).toBeInstanceOf(Error);
      expect(e.latencyMs).toBeGreaterThanOrEqual(0);
      expect(e.latencyMs).toBeLessThan(TIMEOUT + MARGIN + stalled(e.at - (e.latencyMs ?? 0), e.at));
    }
    for (const prefix of Object.values(prefixes)) {
      const breaker = events.filter((e) => (e.prefixes ?? [e.prefix]).includes(prefix) && e.type.startsWith('breaker'));
      expect(breaker.length).toBeGreaterThanOrEqual(2);
      expect(breaker[0]?.type).toBe('breaker-open');
      expect(breaker[0]?.error).toBeInstanceOf(Error);
      expect(breaker.at(-1)?.type).toBe('breaker-close');
      expect(breaker.at(-1)?.latencyMs).toBeGreaterThan(0);
      expect(breaker.filter((e) => e.type === 'breaker-open' && e.at <= killedAt && !timedOut(e))).toEqual([]);
    }

    // The new master had no script: NOSCRIPT, then EVAL reloaded it, then EVALSHA again.
    const errorstats = await info(owner, 'errorstats');
    const commandstats = await info(owner, 'commandstats');
    expect(errorstats.errorstat_NOSCRIPT).toMatch(/count=[1-9]/);
    expect(commandstats.cmdstat_eval).toMatch(/calls=[1-9]/);
    expect(Number(/calls=(\d+)/.exec(commandstats.cmdstat_evalsha ?? '')?.[1] ?? 0)).toBeGreaterThan(
      Number(/calls=(\d+)/.exec(commandstats.cmdstat_eval ?? '')?.[1] ?? 0),
    );

    // Multi-policy after the fail-over: both keys live on the new master (one slot); a denial charges none.
    const newMaster = new Redis({ port: owner });
    const multiKeys = await newMaster.keys(`${prefixes.multi}:*`).finally(() => newMaster.disconnect());
    expect(multiKeys).toHaveLength(2);
    const slots = await Promise.all(multiKeys.map((k) => client.cluster('KEYSLOT', k)));
    expect(new Set(slots).size).toBe(1);
    await until(
      () => limiters.multi.peek('busy'),
      (d) => d.policies[0]?.remaining === d.policies[0]?.limit,
      { what: 'the 10/s bucket refilled' },
    );
    const before = await limiters.multi.peek('busy');
    const burst = await Promise.all(Array.from({ length: 30 }, () => limiters.multi.consume('busy')));
    const afterBurst = await limiters.multi.peek('busy');
    expect(before.source).toBe('store');
    expect(burst.every((d) => d.source === 'store' || d.source === 'deny-cache')).toBe(true);
    const admitted = burst.filter((d) => d.allowed).length;
    expect(admitted).toBeGreaterThanOrEqual(9);
    expect(admitted).toBeLessThanOrEqual(11);
    const hour = (d: Decision) => d.policies[1]?.remaining as number;
    expect(hour(before) - hour(afterBurst)).toBe(admitted);
  }, 40_000);
});
