// Starts a throwaway Redis Cluster for a benchmark: 3 masters and 3 replicas on free ports, each a
// redis-server without persistence in its own temp dir. Modelled on test/support/redis.ts's
// startCluster. stop() kills them all; so does this process exiting, even on error.
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const live = new Set();
process.on('exit', () => {
  for (const p of live) p.kill('SIGKILL');
});

const freePort = () =>
  new Promise((resolve, reject) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const address = s.address();
      s.close(() => (address && typeof address === 'object' ? resolve(address.port) : reject(new Error('no port'))));
    });
  });

const cli = async (port, ...args) => (await run('redis-cli', ['-p', String(port), ...args], { timeout: 5000 })).stdout.trim();

async function startNode(i) {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-cluster-'));
  const proc = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      dir,
      '--cluster-enabled',
      'yes',
      '--cluster-config-file',
      `nodes-${i}.conf`,
      '--cluster-node-timeout',
      '1000',
    ],
    { stdio: 'ignore' },
  );
  live.add(proc);
  const node = {
    port,
    stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      live.delete(proc);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  for (let t = 0; t < 200; t++) {
    try {
      if ((await cli(port, 'PING')) === 'PONG') return node;
    } catch {
      // not up yet
    }
    await sleep(25);
  }
  node.stop();
  throw new Error(`redis-server on ${port} did not answer PING`);
}

/** Starts the Cluster and waits for cluster_state:ok with 3 masters. */
export async function startCluster() {
  const nodes = [];
  const stop = () => {
    for (const n of nodes) n.stop();
  };
  try {
    for (let i = 0; i < 6; i++) nodes.push(await startNode(i));
    const masters = async () =>
      (await cli(nodes[0].port, 'CLUSTER', 'NODES'))
        .split('\n')
        .filter((l) => l.includes('master') && !l.includes('fail'))
        .map((l) => Number(/:(\d+)@/.exec(l)[1]))
        .sort((a, b) => a - b);
    await run(
      'redis-cli',
      ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '1', '--cluster-yes'],
      { timeout: 30_000 },
    );
    for (let t = 0; t < 200; t++) {
      const states = await Promise.all(nodes.map((n) => cli(n.port, 'CLUSTER', 'INFO')));
      if (states.every((s) => s.includes('cluster_state:ok')) && (await masters()).length === 3) {
        return {
          nodes,
          /** Ports of the masters, ascending. */
          masters,
          startupNodes: () => nodes.map((n) => ({ host: '127.0.0.1', port: n.port })),
          stop,
        };
      }
      await sleep(50);
    }
    throw new Error('cluster did not reach cluster_state:ok with 3 masters');
  } catch (error) {
    stop();
    throw error;
  }
}
