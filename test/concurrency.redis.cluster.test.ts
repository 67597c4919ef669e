import { type ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import { createLimiter, redisStore } from '@sluice/core';
import { Cluster } from 'ioredis';
import { type RedisCluster, type RedisServer, startCluster, startRedis, uniquePrefix } from './support/redis';

const ALGORITHMS = ['token-bucket', 'fixed-window', 'sliding-window', 'sliding-log'] as const;

function child(
  port: number,
  prefix: string,
  algorithm: string,
): { proc: ChildProcess; ready: Promise<void>; result: Promise<{ admitted: number; offStore: number }> } {
  const proc = fork(join(__dirname, 'consumers', 'burst-child.cjs'), [String(port), prefix, algorithm, '250'], { timeout: 30_000 });
  const ready = new Promise<void>((resolve) => proc.once('message', () => resolve()));
  const result = ready.then(
    () =>
      new Promise<{ admitted: number; offStore: number }>((resolve, reject) => {
        proc.once('message', (m) => resolve(m as { admitted: number; offStore: number }));
        proc.once('exit', (code) => reject(new Error(`child exited with ${code} before reporting`)));
      }),
  );
  return { proc, ready, result };
}

describe('exact under concurrency', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(() => server.stop());

  it.each(ALGORITHMS)('%s: 4 processes firing 250 concurrent consumes each at one key with 100/1h admit exactly 100', async (algorithm) => {
    const prefix = uniquePrefix();
    const children = Array.from({ length: 4 }, () => child(server.port, prefix, algorithm));
    await Promise.all(children.map((c) => c.ready));
    for (const c of children) c.proc.send('go');
    const results = await Promise.all(children.map((c) => c.result));
    expect(results.map((r) => r.offStore)).toEqual([0, 0, 0, 0]);
    expect(results.reduce((sum, r) => sum + r.admitted, 0)).toBe(100);
  });
});

describe('odd keys on a Redis Cluster', () => {
  let cluster: RedisCluster;
  beforeAll(async () => {
    cluster = await startCluster();
  }, 60_000);
  afterAll(() => cluster.stop());

  it('any key keeps its policies in one slot, counts apart from the others, and stays under the prefix', async () => {
    const client = new Cluster(cluster.startupNodes());
    await new Promise((r) => client.once('ready', r)); // the store refuses calls made before the first connect
    try {
      const prefix = uniquePrefix();
      const keys = ['plain', 'GET /login|::1', 'ünïcødé 🚦', 'x'.repeat(10_240), '{tag}', 'a}b{', 'cr\rlf\n', '#abc', 'a~1', '\ud800'];
      const limiter = createLimiter({ policy: ['1/1h', '5/1d'], store: redisStore({ client }), prefix, timeout: 5000 });
      // The one key refused: an empty key would count every such caller in one shared bucket.
      await expect(limiter.consume('')).rejects.toMatchObject({ code: 'ERR_SLUICE_KEY' });
      const first = await Promise.all(keys.map((k) => limiter.consume(k)));
      expect(first.map((d) => [d.allowed, d.source])).toEqual(keys.map(() => [true, 'store']));
      const second = await Promise.all(keys.map((k) => limiter.consume(k)));
      expect(second.map((d) => d.allowed)).toEqual(keys.map(() => false));
      const stored = (await Promise.all(client.nodes('master').map((n) => n.keys(`${prefix}:*`)))).flat();
      expect(stored).toHaveLength(keys.length * 2);
      for (const key of stored) {
        expect(key.startsWith(`${prefix}:{`)).toBe(true);
        expect(Buffer.byteLength(key)).toBeLessThan(200);
      }
    } finally {
      client.disconnect();
    }
  });
});
