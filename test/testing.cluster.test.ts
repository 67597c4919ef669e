// resetAll on a real Redis Cluster: a prefix's keys are on every master, and go from every one of them.
import { createLimiter, createRules, redisStore } from '@sluice/core';
import { resetAll, testClock } from '@sluice/core/testing';
import Redis from 'ioredis';
import { CLIENT_KINDS, type TestClient } from './support/clients';
import { type RedisCluster, startCluster, uniquePrefix } from './support/redis';

describe('resetAll on a Redis Cluster', () => {
  let cluster: RedisCluster;
  let masters: Redis[];
  beforeAll(async () => {
    cluster = await startCluster();
    masters = (await cluster.masters()).map((port) => new Redis({ host: '127.0.0.1', port }));
  });
  afterAll(async () => {
    for (const m of masters) m.disconnect();
    await cluster.stop();
  });

  /** The keys of `prefix` on each master. */
  const keysOn = (prefix: string) => Promise.all(masters.map(async (m) => (await m.keys('*')).filter((k) => k.startsWith(`${prefix}:{`))));

  describe.each(CLIENT_KINDS.map((kind) => [kind.name, kind] as const))('%s', (_, kind) => {
    let client: TestClient;
    beforeAll(async () => {
      client = await kind.cluster(cluster.startupNodes());
    });
    afterAll(() => client.close());

    it("deletes a prefix's keys on every master, and nothing of another prefix", async () => {
      const store = redisStore({ client: client.client, clock: testClock() });
      const [mine, other] = [uniquePrefix(), uniquePrefix()];
      const limiters = [mine, other].map((prefix) => createLimiter({ policy: '1/1h', store, prefix, timeout: 5000 }));
      const rules = createRules({ store, prefix: mine });
      await rules.deny('203.0.113.9');
      const keys = Array.from({ length: 60 }, (_, i) => `user-${i}`);
      for (const l of limiters) await Promise.all(keys.map((k) => l.consume(k, { id: `id-${k}` })));
      const before = await keysOn(mine);
      expect(before.every((onMaster) => onMaster.length > 0)).toBe(true); // every master holds some
      const others = (await keysOn(other)).flat();
      expect(others.length).toBe(120);

      await resetAll({ store, prefix: mine });

      expect((await keysOn(mine)).flat()).toEqual([]);
      expect((await keysOn(other)).flat().sort()).toEqual(others.sort());
      const [fresh, kept] = limiters as [(typeof limiters)[0], (typeof limiters)[0]];
      expect(await fresh.consume('user-1')).toMatchObject({ allowed: true });
      expect(await kept.consume('user-1')).toMatchObject({ allowed: false });
      for (const l of limiters) await l.close();
      await rules.close();
    });
  });
});
