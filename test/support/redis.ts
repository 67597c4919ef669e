// Starts redis-server processes on free ports for the tests, and makes sure they all stop.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const p of live) p.kill('SIGKILL');
});

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const address = s.address();
      s.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

async function cli(port: number, ...args: string[]): Promise<string> {
  return (await run('redis-cli', ['-p', String(port), ...args], { timeout: 5000 })).stdout.trim();
}

async function untilPing(port: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    try {
      if ((await cli(port, 'PING')) === 'PONG') return;
    } catch {
      // not up yet
    }
    await sleep(25);
  }
  throw new Error(`redis-server on ${port} did not answer PING`);
}

/** One redis-server that a test can stop, kill, restart on the same port, pause and resume. */
export interface RedisServer {
  port: number;
  url: string;
  /** Kills the server (SIGKILL) and waits until it is gone. */
  kill(): Promise<void>;
  /** Starts it again on the same port, empty, and waits for PING. */
  restart(): Promise<void>;
  /** SIGSTOP: connections stay open and nothing answers. */
  pause(): void;
  resume(): void;
  stop(): Promise<void>;
}

export async function startServer(extra: string[] = [], port?: number): Promise<RedisServer> {
  const p = port ?? (await freePort());
  const dir = mkdtempSync(join(tmpdir(), 'sluice-redis-'));
  let proc: ChildProcess | undefined;
  const start = async () => {
    proc = spawn('redis-server', ['--port', String(p), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...extra], {
      stdio: 'ignore',
    });
    live.add(proc);
    await untilPing(p);
  };
  const kill = async () => {
    const current = proc;
    if (!current || current.exitCode !== null || current.signalCode !== null) return;
    const gone = new Promise((r) => current.once('exit', r));
    current.kill('SIGCONT');
    current.kill('SIGKILL');
    await gone;
    live.delete(current);
  };
  await start();
  return {
    port: p,
    url: `redis://127.0.0.1:${p}`,
    kill,
    restart: start,
    pause: () => proc?.kill('SIGSTOP'),
    resume: () => proc?.kill('SIGCONT'),
    async stop() {
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A standalone server of the test's own, or the user's REDIS_URL (which tests must not kill). */
export async function startRedis(): Promise<RedisServer> {
  const url = process.env.REDIS_URL;
  if (!url) return startServer();
  const port = Number(new URL(url).port || 6379);
  const refuse = async () => {
    throw new Error('REDIS_URL is set: this test does not kill a Redis it did not start');
  };
  return { port, url, kill: refuse, restart: refuse, pause: () => {}, resume: () => {}, stop: async () => {} };
}

/** A real Redis Cluster: 3 masters, 3 replicas, on free ports. */
export interface RedisCluster {
  nodes: RedisServer[];
  /** Ports of the current masters. */
  masters(): Promise<number[]>;
  /** The port of the master that holds `key`'s slot. */
  masterOf(key: string): Promise<number>;
  startupNodes(): Array<{ host: string; port: number }>;
  stop(): Promise<void>;
}

export async function startCluster(): Promise<RedisCluster> {
  const nodes: RedisServer[] = [];
  for (let i = 0; i < 6; i++) {
    nodes.push(
      await startServer(['--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${i}.conf`, '--cluster-node-timeout', '1000']),
    );
  }
  const cluster: RedisCluster = {
    nodes,
    async masters() {
      const out = await cli(nodes[0]!.port, 'CLUSTER', 'NODES').catch(() => cli(nodes[1]!.port, 'CLUSTER', 'NODES'));
      return out
        .split('\n')
        .filter((l) => l.includes('master') && !l.includes('fail'))
        .map((l) => Number(/:(\d+)@/.exec(l)![1]));
    },
    async masterOf(key: string) {
      const slot = Number(await cli(nodes[0]!.port, 'CLUSTER', 'KEYSLOT', key));
      for (const port of await cluster.masters()) {
        const lines = (await cli(port, 'CLUSTER', 'NODES')).split('\n').filter((l) => l.includes('myself'));
        const ranges = lines[0]!.split(' ').slice(8);
        for (const r of ranges) {
          const [a, b] = r.split('-').map(Number);
          if (slot >= a! && slot <= (b ?? a)!) return port;
        }
      }
      throw new Error(`no master for slot ${slot}`);
    },
    startupNodes: () => nodes.map((n) => ({ host: '127.0.0.1', port: n.port })),
    async stop() {
      await Promise.all(nodes.map((n) => n.stop()));
    },
  };
  try {
    await run(
      'redis-cli',
      ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '1', '--cluster-yes'],
      {
        timeout: 30_000,
      },
    );
    for (let i = 0; i < 200; i++) {
      const states = await Promise.all(nodes.map((n) => cli(n.port, 'CLUSTER', 'INFO')));
      if (states.every((s) => s.includes('cluster_state:ok'))) {
        if ((await cluster.masters()).length === 3) return cluster;
      }
      await sleep(50);
    }
    throw new Error('cluster did not reach cluster_state:ok');
  } catch (error) {
    await cluster.stop();
    throw error;
  }
}

/** Script calls (EVALSHA and EVAL) the server behind `client` has counted since its last CONFIG RESETSTAT. */
export async function scriptCalls(client: { info(section: string): Promise<string> }): Promise<number> {
  const info = await client.info('commandstats');
  return [...info.matchAll(/cmdstat_eval(?:sha)?:calls=(\d+)/g)].reduce((a, m) => a + Number(m[1]), 0);
}
