// The built `sluice` command (pnpm build first) with --cluster, on keys a limiter wrote in a real Redis Cluster.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { createLimiter, type Decision, redisStore } from '@sluice/core';
import { Cluster } from 'ioredis';
import { freePort, type RedisCluster, startCluster, uniquePrefix } from './support/redis';

// Each case starts node a few times: on a loaded machine a start alone can take seconds.
jest.setTimeout(120_000);

const BIN = join(__dirname, '..', 'packages', 'cli', 'dist', 'esm', 'bin.js');

function sluice(args: string[]): Promise<{ status: number; stdout: string; stderr: string }> {
  const { REDIS_URL: _, ...env } = process.env;
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ status: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
  });
}

describe('sluice --cluster', () => {
  let cluster: RedisCluster;
  let client: Cluster;
  beforeAll(async () => {
    cluster = await startCluster();
    client = new Cluster(cluster.startupNodes());
    await new Promise((r) => client.once('ready', r));
  }, 60_000);
  afterAll(async () => {
    client.disconnect();
    await cluster.stop();
  });

  it('inspects and resets a key from any node of the cluster', async () => {
    const prefix = uniquePrefix();
    // A deadline long enough that every consume is the store's on a busy machine: the counts are what is checked.
    const limiter = createLimiter({ prefix, policy: ['5/1m', '100/1h'], store: redisStore({ client }), timeout: 10_000 });
    for (let i = 0; i < 3; i++) await limiter.consume('user:7');
    const common = ['user:7', '--cluster', '--prefix', prefix, '--policy', '5/1m', '--policy', '100/1h'];
    for (const node of cluster.nodes) {
      const run = await sluice(['inspect', ...common, '--redis', `redis://127.0.0.1:${node.port}`]);
      expect(run).toMatchObject({ status: 0, stderr: '' });
      expect((JSON.parse(run.stdout) as Decision).policies.map((p) => p.remaining)).toEqual([2, 97]);
    }
    const seed = `redis://127.0.0.1:${cluster.nodes[0]?.port}`;
    expect(await sluice(['reset', ...common, '--redis', seed])).toMatchObject({ status: 0, stderr: '' });
    const after = await sluice(['inspect', ...common, '--redis', seed]);
    expect((JSON.parse(after.stdout) as Decision).policies.map((p) => p.remaining)).toEqual([5, 100]);
    await limiter.close();
  });

  it('exits 1 when no node answers', async () => {
    const port = await freePort();
    const run = await sluice(['inspect', 'k', '--cluster', '--policy', '5/1m', '--redis', `redis://admin:hunter2@127.0.0.1:${port}`]);
    expect(run).toMatchObject({ status: 1, stdout: '' });
    expect(run.stderr).toBe(
      `sluice: the store failed: no answer from the cluster node 127.0.0.1:${port}: None of startup nodes is available\n`,
    );
  });
});
