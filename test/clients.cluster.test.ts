// The store's contract over every client on one Redis Cluster (3 masters, 3 replicas, shared by all
// clients; each test has its own key prefix): exact admission with several policies and no CROSSSLOT,
// NOSCRIPT reload after SCRIPT FLUSH, and a fail-over under load (SIGKILL of a slot's master), after
// which the killed node comes back as a replica, ready for the next client's fail-over.
import { performance } from 'node:perf_hooks';
import { createLimiter, type LimiterEvent, redisStore } from '@sluice/core';
import type { Cluster } from 'ioredis';
import { CLIENT_KINDS, type TestClient } from './support/clients';
import { startLoad } from './support/load';
import { cli, killMasterOf, type RedisCluster, replicasInSync, sleep, startCluster, uniquePrefix, waitForPromotion } from './support/redis';

/**
 * Waits until every node names the same masters for the same slots: a node restarted after its fail-over
 * takes a moment to learn it is now a replica, and meanwhile answers CLUSTER SLOTS with its old view.
 */
async function converged(withinMs = 30_000): Promise<void> {
  const end = Date.now() + withinMs;
  while (Date.now() < end) {
    const views = await Promise.all(
      cluster.nodes.map(async (n) =>
        (await cli(n.port, 'CLUSTER', 'NODES').catch(() => ''))
          .split('\n')
          .map((l) => l.split(' '))
          .filter((f) => f[2]?.includes('master') && !f[2].includes('fail') && f.length > 8)
          .map((f) => `${f[1]} ${f.slice(8).join(',')}`)
          .sort()
          .join(';'),
      ),
    );
    if (views[0] !== '' && views.every((v) => v === views[0])) return;
    await sleep(100);
  }
  throw new Error(`the cluster's nodes did not agree on its masters within ${withinMs} ms`);
}

let cluster: RedisCluster;
beforeAll(async () => {
  // Diskless sync at once, so that replicas are in sync (and allowed to fail over) within a second.
  cluster = await startCluster(['--repl-diskless-sync-delay', '0']);
  await replicasInSync(cluster);
}, 60_000);
afterAll(() => cluster?.stop());

describe.each(CLIENT_KINDS)('$name, Cluster', (kind) => {
  let t: TestClient | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });
  const open = async () => {
    t = await kind.cluster(cluster.startupNodes());
    return t.client;
  };

  it('admits exactly each limit with several policies over keys in every slot range, no CROSSSLOT', async () => {
    const client = await open();
    const events: LimiterEvent[] = [];
    const limiter = createLimiter({
      // The fixed window opens at each key's first hit: one aligned to the clock could turn between the consumes and the peek.
      policy: [
        '10/1h',
        { limit: 15, window: '1m', algorithm: 'fixed-window', start: 'first-hit' },
        { limit: 12, window: '1m', algorithm: 'sliding-log' },
      ],
      store: redisStore({ client }),
      timeout: 5000,
      prefix: uniquePrefix(),
      onEvent: (e) => events.push(e),
    });
    const keys = Array.from({ length: 24 }, (_, i) => `user-${i}`);
    const decisions = await Promise.all(
      keys.flatMap((key) => Array.from({ length: 25 }, () => limiter.consume(key).then((d) => ({ key, d })))),
    );
    for (const key of keys) expect(decisions.filter((x) => x.key === key && x.d.allowed)).toHaveLength(10);
    expect(events.filter((e) => e.type === 'store-error')).toEqual([]);
    const after = await limiter.peek('user-3');
    expect(after.source).toBe('store');
    expect(after.policies.map((p) => p.remaining)).toEqual([0, 5, 2]);
  });

  it('after SCRIPT FLUSH on every master the script is reloaded and no error surfaces', async () => {
    const client = await open();
    const events: LimiterEvent[] = [];
    const limiter = createLimiter({
      policy: '50/1h',
      store: redisStore({ client }),
      timeout: 5000,
      prefix: uniquePrefix(),
      onEvent: (e) => events.push(e),
    });
    const keys = Array.from({ length: 12 }, (_, i) => `k${i}`);
    await Promise.all(keys.map((k) => limiter.consume(k)));
    for (const port of await cluster.masters()) expect(await cli(port, 'SCRIPT', 'FLUSH')).toBe('OK');
    const again = await Promise.all(keys.map((k) => limiter.consume(k)));
    expect(again.every((d) => d.source === 'store' && d.remaining === 48)).toBe(true);
    expect(events.filter((e) => e.type === 'store-error')).toEqual([]);
  });

  it('boot decides on the store: 20 calls made while a new Cluster client connects wait for it (node-redis: the fail mode), never replayed', async () => {
    t = await kind.cluster(cluster.startupNodes(), { wait: false });
    const events: LimiterEvent[] = [];
    const limiter = createLimiter({
      policy: '10/1h',
      store: redisStore({ client: t.client }),
      failMode: 'open',
      timeout: 3000, // far above a local connect on a busy machine: the calls must wait, not time out
      prefix: uniquePrefix(),
      onEvent: (e) => events.push(e),
    });
    const before = await Promise.all(Array.from({ length: 20 }, () => limiter.consume('k')));
    // ioredis and iovalkey wait for the Cluster to be ready; a node-redis Cluster has no such state to wait
    // on (its nodes connect after connect() resolves), so its calls go to the fail mode, unsent.
    const waits = !kind.name.startsWith('node-redis');
    if (waits) {
      expect(before.map((d) => d.source)).toEqual(Array(20).fill('store'));
      expect(before.filter((d) => d.allowed)).toHaveLength(10);
      expect(events.filter((e) => e.type === 'store-error' || e.type === 'breaker-open')).toEqual([]);
    } else expect(before.every((d) => d.source === 'fail-open' || d.source === 'store')).toBe(true);
    await t.ready();
    // node-redis' calls failed while it connected, and five failures open the breaker for its cooldown
    // (500 ms from the fifth, however long connecting took): the store answers again once it has passed.
    let after = await limiter.peek('k');
    for (const end = performance.now() + 5000; after.source !== 'store' && performance.now() < end; after = await limiter.peek('k')) {
      await sleep(100);
    }
    expect(after.source).toBe('store');
    expect(after.remaining).toBe(10 - before.filter((d) => d.source === 'store' && d.allowed).length);
  });

  it('SIGKILL of the busy slot master: the fail mode during the fail-over, the store after promotion, no error', async () => {
    const client = await open();
    const timeout = 100;
    const limiter = createLimiter({
      policy: '100000/1h',
      store: redisStore({ client }),
      failMode: 'open',
      timeout,
      prefix: uniquePrefix(),
    });
    const key = 'hot';
    expect((await limiter.consume(key)).source).toBe('store');
    // Five callers at once, each again 5 ms after its answer.
    const load = startLoad(Array.from({ length: 5 }, () => ['hot', () => limiter.consume(key)] as const));
    // The key's full name on Redis is the store's business: find its slot's master by the counter it wrote.
    const stored = (
      await Promise.all((await cluster.masters()).map(async (port) => ({ port, keys: await cli(port, 'KEYS', '*hot*') })))
    ).find((m) => m.keys !== '');
    expect(stored).toBeDefined();
    const storedKey = stored!.keys.split('\n')[0]!;
    const { port: dead, killedAt } = await killMasterOf(cluster, storedKey);
    const deadNode = cluster.nodes.find((n) => n.port === dead)!;
    let back = false;
    try {
      await waitForPromotion(cluster, storedKey, dead);
      const promotedAt = performance.now();
      if (!kind.findsPromotedReplica) {
        await deadNode.restart();
        back = true;
      }
      // Decisions come from the store again on the promoted replica within seconds, and stay there.
      await load.untilSettled(promotedAt);
      await load.stop();
      expect(load.errors()).toEqual([]);
      expect(load.calls.some((c) => c.end > killedAt && c.end < promotedAt && c.decision?.source === 'fail-open')).toBe(true);
      expect(load.settled(promotedAt)).toBe(true);
    } finally {
      await load.stop();
      // The killed node comes back as a replica of the promoted one, ready for the next fail-over.
      if (!back) await deadNode.restart();
      await replicasInSync(cluster, 30_000);
      await converged();
    }
  }, 60_000);
});

// An ioredis or iovalkey Cluster sends a call again when the connection it was in flight on resets, even
// when Redis had run it. The script's guard (lua/decide.lua) makes that harmless for every client.
describe.each(CLIENT_KINDS.filter((k) => !k.name.startsWith('node-redis')))('$name, Cluster, connection reset', (kind) => {
  let t: TestClient | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('exactly once on a Cluster: calls in flight when their connections reset are never charged twice', async () => {
    t = await kind.cluster(cluster.startupNodes());
    const client = t.client as unknown as Cluster;
    const limiter = createLimiter({
      policy: '10/1h',
      store: redisStore({ client: t.client }),
      failMode: 'open',
      timeout: 5000,
      prefix: uniquePrefix(),
    });
    const keys = Array.from({ length: 60 }, (_, i) => `k${i}`);
    // Every master busy for 400 ms (a script that spins on TIME): the calls below are written to its
    // socket and wait there; the connections reset meanwhile; the masters then run what they had read.
    const masters = await cluster.masters();
    const spin = "local s = redis.call('TIME') repeat local n = redis.call('TIME') until (n[1] - s[1]) * 1000000 + (n[2] - s[2]) > 400000";
    const busy = masters.map((port) => cli(port, 'EVAL', spin, '0').catch(() => ''));
    await sleep(100);
    const decisions = Promise.all(keys.map((k) => limiter.consume(k)));
    await sleep(100);
    for (const node of client.nodes('master')) (node as unknown as { stream?: { destroy(): void } }).stream?.destroy();
    const made = await decisions;
    await Promise.all(busy);
    // The client reconnects; then every key's count is read from the store.
    let left = await Promise.all(keys.map((k) => limiter.peek(k)));
    for (let i = 0; i < 100 && left.some((d) => d.source !== 'store'); i++) {
      await sleep(100);
      left = await Promise.all(keys.map((k) => limiter.peek(k)));
    }
    expect(left.every((d) => d.source === 'store')).toBe(true);
    const charged = left.map((d) => 10 - d.remaining);
    // Never twice; and a decision that says 'store' was charged exactly once.
    expect(charged.filter((c) => c > 1)).toEqual([]);
    expect(made.every((d, i) => d.source !== 'store' || charged[i] === 1)).toBe(true);
  });
});
