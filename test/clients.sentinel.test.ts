// Redis behind Sentinel (a master, a replica, three sentinels), for every client that follows Sentinel:
// a SIGKILL of the master is answered by the fail mode; once the sentinels promote the replica, decisions
// come from the store there (its script cache empty: NOSCRIPT, then EVAL), and no error reaches a caller.
// The killed node comes back as a replica of the promoted one, ready for the next client's fail-over.
import { performance } from 'node:perf_hooks';
import { createLimiter, redisStore } from '@sluice/core';
import { CLIENT_KINDS, type TestClient } from './support/clients';
import { startLoad } from './support/load';
import { cli, sleep, uniquePrefix } from './support/redis';
import { MASTER_NAME, type SentinelDeployment, startSentinels } from './support/sentinel';

let deployment: SentinelDeployment;
beforeAll(async () => {
  deployment = await startSentinels();
}, 60_000);
afterAll(() => deployment?.stop());

const followers = CLIENT_KINDS.filter((k) => k.sentinel !== undefined);

describe.each(followers)('$name, Sentinel', (kind) => {
  let t: TestClient | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('SIGKILL of the master: the fail mode, then the store on the promoted replica, no error reaching a caller', async () => {
    await deployment.healthy();
    t = await kind.sentinel!(deployment.sentinels, MASTER_NAME);
    const limiter = createLimiter({
      policy: '100000/1h',
      store: redisStore({ client: t.client }),
      failMode: 'open',
      timeout: 100,
      prefix: uniquePrefix(),
    });
    const key = 'hot';
    expect((await limiter.consume(key)).source).toBe('store');
    // Five callers at once, each again 5 ms after its answer.
    const load = startLoad(Array.from({ length: 5 }, () => ['hot', () => limiter.consume(key)] as const));
    const old = await deployment.master();
    await sleep(100);
    await old.kill();
    const killedAt = performance.now();
    try {
      const promoted = await deployment.waitForFailover(old.port);
      const promotedAt = performance.now();
      await load.untilSettled(promotedAt);
      await load.stop();
      expect(load.errors()).toEqual([]);
      expect(load.calls.some((c) => c.end > killedAt && c.end < promotedAt && c.decision?.source === 'fail-open')).toBe(true);
      expect(load.settled(promotedAt)).toBe(true);
      // The counters are on the promoted replica now, and the script was reloaded there.
      expect(await cli(promoted, 'KEYS', '*hot*')).not.toBe('');
      expect(await cli(promoted, 'INFO', 'errorstats')).toMatch(/errorstat_NOSCRIPT:count=[1-9]/);
    } finally {
      await load.stop();
      await old.restart();
    }
  }, 60_000);
});
