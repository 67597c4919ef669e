// Redis behind Sentinel (a master, a replica, three sentinels), for every client that follows Sentinel:
// a SIGKILL of the master is answered by the fail mode; once the sentinels promote the replica, decisions
// come from the store there (its script cache empty: NOSCRIPT, then EVAL), and no error reaches a caller.
// The killed node comes back as a replica of the promoted one, ready for the next client's fail-over.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { createLimiter, type Decision, redisStore } from '@sluice/core';
import { CLIENT_KINDS, type TestClient } from './support/clients';
import { sleep, uniquePrefix } from './support/redis';
import { MASTER_NAME, type SentinelDeployment, startSentinels } from './support/sentinel';

const run = promisify(execFile);
const cli = async (port: number, ...args: string[]) =>
  (await run('redis-cli', ['-p', String(port), ...args], { timeout: 5000 })).stdout.trim();

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
      prefix: uniquePrefix('cs'),
    });
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
    const old = await deployment.master();
    await sleep(100);
    await old.kill();
    const killedAt = Date.now();
    try {
      const promoted = await deployment.waitForFailover(old.port);
      const promotedAt = Date.now();
      const settled = () => decisions.length >= 20 && decisions.slice(-20).every((x) => x.at > promotedAt && x.d.source === 'store');
      const end = promotedAt + 15_000;
      while (Date.now() < end && !settled()) await sleep(50);
      stop = true;
      await load;
      expect(errors).toEqual([]);
      expect(decisions.some((x) => x.at > killedAt && x.at < promotedAt && x.d.source === 'fail-open')).toBe(true);
      expect(settled()).toBe(true);
      // The counters are on the promoted replica now, and the script was reloaded there.
      expect(await cli(promoted, 'KEYS', '*hot*')).not.toBe('');
      expect(await cli(promoted, 'INFO', 'errorstats')).toMatch(/errorstat_NOSCRIPT:count=[1-9]/);
    } finally {
      stop = true;
      await load;
      await old.restart();
    }
  }, 60_000);
});
