// The store's contract over every client on one Redis Cluster (3 masters, 3 replicas, shared by all
// clients; each test has its own key prefix): exact admission with several policies and no CROSSSLOT,
// NOSCRIPT reload after SCRIPT FLUSH, and a fail-over under load (SIGKILL of a slot's master), after
// which the killed node comes back as a replica, ready for the next client's fail-over.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { createLimiter, type Decision, type LimiterEvent, redisStore } from '@sluice/core';
import { CLIENT_KINDS, type TestClient } from './support/clients';
import { killMasterOf, type RedisCluster, replicasInSync, sleep, startCluster, uniquePrefix, waitForPromotion } from './support/redis';

const run = promisify(execFile);
const cli = async (port: number, ...args: string[]) =>
  (await run('redis-cli', ['-p', String(port), ...args], { timeout: 5000 })).stdout.trim();
const unique = () => uniquePrefix('cc');

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
      policy: ['10/1h', { limit: 15, window: '1m', algorithm: 'fixed-window' }, { limit: 12, window: '1m', algorithm: 'sliding-log' }],
      store: redisStore({ client }),
      timeout: 5000,
      prefix: unique(),
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
      prefix: unique(),
      onEvent: (e) => events.push(e),
    });
    const keys = Array.from({ length: 12 }, (_, i) => `k${i}`);
    await Promise.all(keys.map((k) => limiter.consume(k)));
    for (const port of await cluster.masters()) expect(await cli(port, 'SCRIPT', 'FLUSH')).toBe('OK');
    const again = await Promise.all(keys.map((k) => limiter.consume(k)));
    expect(again.every((d) => d.source === 'store' && d.remaining === 48)).toBe(true);
    expect(events.filter((e) => e.type === 'store-error')).toEqual([]);
  });

  it('regression: calls made before the first connect are refused at once, not replayed once connected', async () => {
    t = await kind.cluster(cluster.startupNodes(), { wait: false });
    const events: LimiterEvent[] = [];
    const limiter = createLimiter({
      policy: '10/1h',
      store: redisStore({ client: t.client }),
      failMode: 'open',
      breaker: false,
      timeout: 2000,
      prefix: unique(),
      onEvent: (e) => events.push(e),
    });
    const before = await Promise.all(Array.from({ length: 5 }, () => limiter.consume('k')));
    expect(before.every((d) => d.source === 'fail-open')).toBe(true);
    expect(events.filter((e) => e.type === 'store-error' && !e.error?.message.includes('timed out'))).toHaveLength(5);
    await t.ready();
    await sleep(300);
    const after = await limiter.peek('k');
    expect(after.source).toBe('store');
    expect(after.remaining).toBe(10);
  });

  it('SIGKILL of the busy slot master: the fail mode during the fail-over, the store after promotion, no error', async () => {
    const client = await open();
    const timeout = 100;
    const limiter = createLimiter({ policy: '100000/1h', store: redisStore({ client }), failMode: 'open', timeout, prefix: unique() });
    const key = 'hot';
    expect((await limiter.consume(key)).source).toBe('store');
    const decisions: Array<{ at: number; d: Decision }> = [];
    const errors: unknown[] = [];
    let stop = false;
    const load = (async () => {
      while (!stop) {
        await Promise.all(
          Array.from({ length: 5 }, () =>
            limiter.consume(key).then(
              (d) => decisions.push({ at: Date.now(), d }),
              (e: unknown) => errors.push(e),
            ),
          ),
        );
        await sleep(5);
      }
    })();
    // The key's full name on Redis is the store's business: find its slot's master by the counter it wrote.
    const stored = (
      await Promise.all((await cluster.masters()).map(async (port) => ({ port, keys: await cli(port, 'KEYS', '*hot*') })))
    ).find((m) => m.keys !== '');
    expect(stored).toBeDefined();
    const storedKey = stored!.keys.split('\n')[0]!;
    const { port: dead } = await killMasterOf(cluster, storedKey);
    const killedAt = Date.now();
    const deadNode = cluster.nodes.find((n) => n.port === dead)!;
    let back = false;
    try {
      await waitForPromotion(cluster, storedKey, dead);
      const promotedAt = Date.now();
      if (!kind.findsPromotedReplica) {
        await deadNode.restart();
        back = true;
      }
      // Decisions come from the store again on the promoted replica within seconds, and stay there.
      const settled = () => decisions.length >= 20 && decisions.slice(-20).every((x) => x.at > promotedAt && x.d.source === 'store');
      const end = promotedAt + 15_000;
      while (Date.now() < end && !settled()) await sleep(50);
      stop = true;
      await load;
      expect(errors).toEqual([]);
      expect(decisions.some((x) => x.at > killedAt && x.at < promotedAt && x.d.source === 'fail-open')).toBe(true);
      expect(settled()).toBe(true);
    } finally {
      stop = true;
      await load;
      // The killed node comes back as a replica of the promoted one, ready for the next fail-over.
      if (!back) await deadNode.restart();
      await replicasInSync(cluster, 30_000);
      await converged();
    }
  }, 60_000);
});
