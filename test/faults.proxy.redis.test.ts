// Faults of the network between the limiter and Redis, made by a TCP proxy (support/fault-proxy.ts):
// a slow Redis, jitter, a reset in the middle of a batch, a black hole. Real Redis, real ioredis.
import { performance } from 'node:perf_hooks';
import { createLimiter, type Decision, type LimiterEvent, redisStore } from '@sluice/core';
import Redis, { type RedisOptions } from 'ioredis';
import { type FaultProxy, startFaultProxy } from './support/fault-proxy';
import { type RedisServer, scriptCalls, sleep, startServer, uniquePrefix } from './support/redis';
import { meterStalls } from './support/stalls';
import { until } from './support/until';

async function ready(client: Redis): Promise<void> {
  if (client.status !== 'ready') await new Promise((r) => client.once('ready', r));
}

describe('network faults between the limiter and Redis (fault proxy)', () => {
  let server: RedisServer;
  let proxy: FaultProxy;
  /** Straight to the server, not through the proxy: to read what was really charged. */
  let direct: Redis;
  const clients: Redis[] = [];
  /** A client through the proxy, with the options these tests' users would run (a retry every 20 ms). */
  const viaProxy = async (extra: RedisOptions = {}) => {
    const client = new Redis({ port: proxy.port, maxRetriesPerRequest: 1, retryStrategy: () => 20, ...extra });
    client.on('error', () => {});
    clients.push(client);
    await ready(client);
    return client;
  };

  beforeAll(async () => {
    server = await startServer();
    direct = new Redis({ port: server.port });
  });
  beforeEach(async () => {
    proxy = await startFaultProxy(server.port);
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) c.disconnect();
    await proxy.close();
  });
  afterAll(async () => {
    direct.disconnect();
    await server.stop();
  });

  /** How many units each of `keys` has been charged, read straight from the server with peeks of the same policy. */
  const charged = async (prefix: string, policy: `${number}/${string}`, limit: number, keys: string[]) => {
    const store = redisStore({ client: direct });
    const reader = createLimiter({ policy, store, prefix });
    try {
      const peeks = await Promise.all(keys.map((k) => reader.peek(k)));
      expect(peeks.every((d) => d.source === 'store')).toBe(true);
      return peeks.map((d) => limit - d.remaining);
    } finally {
      await reader.close();
      await store.close();
    }
  };

  it('delayed replies reach the client in the order the server sent them, each to its own command', async () => {
    const client = await viaProxy();
    proxy.latency(20, 20);
    // Commands a few hundred microseconds apart: each reply is a chunk of its own, on a timer of its own.
    const sent: Promise<string>[] = [];
    for (let i = 0; i < 300; i++) {
      sent.push(client.echo(`reply-${i}`));
      if (i % 3 === 0) await new Promise((r) => setImmediate(r));
    }
    const replies = await Promise.all(sent);
    expect(replies.filter((r, i) => r !== `reply-${i}`)).toEqual([]);
  });

  it('Redis 10 ms slower than the timeout: the fail mode answers, open and closed', async () => {
    const timeout = 100;
    const client = await viaProxy();
    const store = redisStore({ client });
    // No breaker: every call is to meet the deadline itself, not a breaker opened by the first ones.
    const open = createLimiter({ policy: '1000/1h', store, failMode: 'open', timeout, breaker: false, prefix: uniquePrefix() });
    const closed = createLimiter({ policy: '1000/1h', fallback: '5/1h', store, timeout, breaker: false, prefix: uniquePrefix() });
    // The first call loads the script; on a busy machine it may miss the 100 ms itself, so the store is
    // to answer one call (any), before the latency goes in.
    await until(async () => (await open.consume('warm')).source, 'store', { withinMs: 10_000, what: 'the store answers' });
    proxy.latency(timeout + 10);
    // A deadline fails its call only after the next poll for I/O, so that a reply which arrived while
    // the process was late to its timers still counts: on a busy machine the store's answer is then the
    // right one. The proxy runs in this process, so a call is judged only when its decision came while
    // its reply had not yet left the proxy (ordering, not timing). A limiter that ignored its deadline
    // would have no such call. The test needs 20 judged calls of each limiter and gives up after 200.
    const onTime: Array<{ decision: Decision; mode: 'open' | 'closed' }> = [];
    let lateCalls = 0;
    const judged = (m: string) => onTime.filter((c) => c.mode === m).length;
    for (let i = 0; i < 200 && (judged('open') < 20 || judged('closed') < 20); i++) {
      const mode = i % 2 === 0 ? 'open' : 'closed';
      // The previous call's late reply is out of the way: any reply delivered from here on is this call's.
      await until(() => proxy.stats().repliesPending, 0, { withinMs: 5000, what: 'previous reply delivered' });
      const deliveredBefore = proxy.stats().repliesDelivered;
      let replyOut = true;
      const decision = await (mode === 'open' ? open : closed).consume('k').then((d) => {
        replyOut = proxy.stats().repliesDelivered > deliveredBefore;
        return d;
      });
      if (!replyOut) onTime.push({ decision, mode });
      else lateCalls++;
    }
    expect(Math.min(judged('open'), judged('closed'))).toBeGreaterThanOrEqual(20);
    for (const { decision, mode } of onTime) expect(decision.source).toBe(mode === 'open' ? 'fail-open' : 'fallback');
    proxy.latency(0);
    // The late replies have all come back: with the latency gone the store answers again.
    await until(() => proxy.stats().repliesPending, 0, { withinMs: 5000, what: 'late replies delivered' });
    expect((await open.consume('k')).source).toBe('store');
    console.log(`slow Redis: ${lateCalls} calls skipped (reply delivered before the decision)`);
  }, 60_000);

  it('jitter inside the timeout: every decision is the store’s, and exact', async () => {
    const client = await viaProxy();
    const limit = 150;
    const limiter = createLimiter({
      policy: `${limit}/1h`,
      store: redisStore({ client }),
      timeout: 1000,
      // Every decision from the store itself, denials included.
      denyCache: false,
      prefix: uniquePrefix(),
    });
    expect((await limiter.consume('warm')).source).toBe('store');
    // 20 to 80 ms per reply: 920 ms from the timeout, room for a machine that stalls.
    proxy.latency(20, 60);
    const times: number[] = [];
    const decisions: Decision[] = [];
    for (let wave = 0; wave < 15; wave++) {
      const started = performance.now();
      const batch = await Promise.all(
        Array.from({ length: 20 }, () =>
          limiter.consume('k').then((d) => {
            times.push(performance.now() - started);
            return d;
          }),
        ),
      );
      decisions.push(...batch);
    }
    expect(decisions.every((d) => d.source === 'store')).toBe(true);
    expect(decisions.filter((d) => d.allowed)).toHaveLength(limit);
    // The jitter happened: every reply at least 20 ms late, and they were not all alike.
    expect(Math.min(...times)).toBeGreaterThanOrEqual(19);
    expect(Math.max(...times) - Math.min(...times)).toBeGreaterThan(10);
  });

  it.each([
    ['maxRetriesPerRequest 1', { maxRetriesPerRequest: 1 }],
    ['ioredis defaults (20 retries, resend of unfulfilled commands)', { maxRetriesPerRequest: 20 }],
  ])('a reset in the middle of a batch (%s): every caller is answered, none is charged twice', async (_name, options) => {
    const client = await viaProxy(options);
    const timeout = 1500;
    const policy = '1000/1h' as const;
    const prefix = uniquePrefix();
    const limiter = createLimiter({ policy, store: redisStore({ client, maxBatch: 8 }), timeout, breaker: false, prefix });
    expect((await limiter.consume('warm')).source).toBe('store');
    // Replies 300 ms late, requests on time: Redis runs every call at once, its answers are on the way.
    proxy.latency(300);
    const deliveredBefore = proxy.stats().repliesDelivered;
    // How late this process runs its timers while the batch is out: the measured allowance on top of the
    // deadline's own margin.
    const stalls = meterStalls();
    const answered: Array<Promise<{ decision: Decision; ms: number }>> = [];
    const keys: string[] = [];
    for (let wave = 0; wave < 12; wave++) {
      for (let i = 0; i < 16; i++) {
        const key = `w${wave}-${i}`;
        keys.push(key);
        const started = performance.now();
        answered.push(limiter.consume(key).then((decision) => ({ decision, ms: performance.now() - started })));
      }
      await sleep(15);
    }
    // The reset falls when some calls have their answers and some answers are still on the way.
    await until(() => proxy.stats().repliesDelivered > deliveredBefore && proxy.stats().repliesPending > 0, true, {
      withinMs: 5000,
      what: 'mid-batch',
    });
    const pendingAtReset = proxy.stats().repliesPending;
    expect(proxy.reset()).toBeGreaterThan(0);
    proxy.latency(0);
    const results = await Promise.all(answered).finally(() => stalls.stop());
    // Nobody waits past the deadline (plus room, and the stalls measured above), everyone has a decision.
    expect(results).toHaveLength(keys.length);
    expect(Math.max(...results.map((r) => r.ms))).toBeLessThan(timeout + 1000 + stalls.total());
    const bySource = (s: string) => results.filter((r) => r.decision.source === s).length;
    expect(bySource('store')).toBeGreaterThan(0);
    expect(bySource('fallback')).toBeGreaterThan(0);
    expect(pendingAtReset).toBeGreaterThan(0);
    // The client reconnects; whatever it might resend would have been sent by now.
    await ready(client);
    expect((await limiter.peek('warm')).source).toBe('store');
    await sleep(200);
    // On the server, each key at most once (the one call that reached Redis before the reset), and every
    // key whose caller heard from the store exactly once.
    const counts = await charged(prefix, policy, 1000, keys);
    expect(Math.max(...counts)).toBe(1);
    results.forEach((r, i) => {
      if (r.decision.source === 'store') expect(counts[i]).toBe(1);
    });
  });

  it('a black hole trips the breaker; the store decides again after it heals', async () => {
    // A black hole sends no FIN and no RST: only a client that times out a silent socket leaves it.
    const client = await viaProxy({ socketTimeout: 1000 });
    const events: LimiterEvent[] = [];
    const timeout = 100;
    const limiter = createLimiter({
      policy: '1000/1h',
      store: redisStore({ client }),
      timeout,
      breaker: { failures: 3, cooldown: 300 },
      prefix: uniquePrefix(),
      onEvent: (e) => events.push(e),
    });
    expect((await limiter.consume('k')).source).toBe('store');
    proxy.blackHole();
    const during: Array<{ decision: Decision; ms: number }> = [];
    for (let i = 0; i < 10; i++) {
      const started = performance.now();
      const decision = await limiter.consume('k');
      during.push({ decision, ms: performance.now() - started });
    }
    expect(during.every((d) => d.decision.source === 'fallback' && d.decision.allowed)).toBe(true);
    expect(events.filter((e) => e.type === 'breaker-open')).toHaveLength(1);
    // Once the breaker is open a call is answered at once instead of at the timeout.
    expect(during.slice(3).filter((d) => d.ms < timeout / 2).length).toBeGreaterThan(0);
    expect(proxy.stats().dropped).toBeGreaterThan(0);
    // The client times the silent socket out (socketTimeout) and leaves it; then the network heals.
    await until(
      () => client.status,
      (status) => status !== 'ready',
      { withinMs: 10_000, what: 'the client left the silent socket' },
    );
    proxy.heal();
    await direct.config('RESETSTAT');
    const healed = performance.now();
    await until(
      () => limiter.consume('k'),
      (d) => d.source === 'store',
      { withinMs: 10_000, everyMs: 50, what: 'the store decides again' },
    );
    expect(events.filter((e) => e.type === 'breaker-close')).toHaveLength(1);
    expect(await scriptCalls(direct)).toBeGreaterThan(0);
    console.log(`black hole: the store decided again ${Math.round(performance.now() - healed)} ms after the heal`);
  });
});
