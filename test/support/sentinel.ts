// A Sentinel deployment for the tests: a master, a replica and three sentinels (`redis-server --sentinel`,
// or valkey-sentinel: the harness' SERVER), on free ports, with short timeouts so that a fail-over
// completes in a few seconds (down-after-milliseconds 1000).
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cli, freePort, type RedisServer, SERVER, sleep, startServer } from './redis';

export const MASTER_NAME = 'sluice';

export interface SentinelDeployment {
  /** The two data nodes; which one is master changes with fail-overs. */
  servers: RedisServer[];
  /** The sentinels' addresses, for a client's `sentinels` option. */
  sentinels: Array<{ host: string; port: number }>;
  /** The master's port as the sentinels say it now. */
  masterPort(): Promise<number>;
  /** The data node that is master now. */
  master(): Promise<RedisServer>;
  /** Waits until the sentinels name a master other than `old`, which answers as a master. Returns its port. */
  waitForFailover(old: number, withinMs?: number): Promise<number>;
  /** Waits until the master has a replica in sync that every sentinel knows, so that a fail-over can happen. */
  healthy(withinMs?: number): Promise<void>;
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const p of live) p.kill('SIGKILL');
});

async function field(port: number, section: string, name: string): Promise<string | undefined> {
  const out = await cli(port, 'INFO', section).catch(() => '');
  return new RegExp(`^${name}:(.*)$`, 'm').exec(out)?.[1]?.trim();
}

export async function startSentinels(): Promise<SentinelDeployment> {
  // Diskless sync at once: the replica is in sync (and may be promoted) within a second.
  const fast = ['--repl-diskless-sync', 'yes', '--repl-diskless-sync-delay', '0'];
  const master = await startServer(fast);
  const replica = await startServer([...fast, '--replicaof', '127.0.0.1', String(master.port)]);
  const servers = [master, replica];
  const dir = mkdtempSync(join(tmpdir(), 'sluice-sentinel-'));
  const procs: ChildProcess[] = [];
  const sentinels: Array<{ host: string; port: number }> = [];
  for (let i = 0; i < 3; i++) {
    const port = await freePort();
    const conf = join(dir, `sentinel-${i}.conf`);
    // A sentinel rewrites its config file as it learns the deployment: it must be its own, writable.
    writeFileSync(
      conf,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        `sentinel monitor ${MASTER_NAME} 127.0.0.1 ${master.port} 2`,
        `sentinel down-after-milliseconds ${MASTER_NAME} 1000`,
        `sentinel failover-timeout ${MASTER_NAME} 2000`,
        `sentinel parallel-syncs ${MASTER_NAME} 1`,
        '',
      ].join('\n'),
    );
    const proc = spawn(SERVER.sentinel.command, [conf, ...SERVER.sentinel.args], { stdio: 'ignore' });
    live.add(proc);
    procs.push(proc);
    sentinels.push({ host: '127.0.0.1', port });
  }
  const deployment: SentinelDeployment = {
    servers,
    sentinels,
    async masterPort() {
      for (const s of sentinels) {
        const out = await cli(s.port, 'SENTINEL', 'get-master-addr-by-name', MASTER_NAME).catch(() => '');
        const port = Number(out.split('\n')[1]);
        if (port > 0) return port;
      }
      throw new Error('no sentinel names a master');
    },
    async master() {
      const port = await deployment.masterPort();
      const server = servers.find((s) => s.port === port);
      if (!server) throw new Error(`the master ${port} is not one of this deployment's servers`);
      return server;
    },
    async waitForFailover(old, withinMs = 20_000) {
      const end = Date.now() + withinMs;
      while (Date.now() < end) {
        const port = await deployment.masterPort().catch(() => old);
        if (port !== old && (await field(port, 'replication', 'role')) === 'master') return port;
        await sleep(50);
      }
      throw new Error(`no replica replaced the master ${old} within ${withinMs} ms`);
    },
    async healthy(withinMs = 20_000) {
      const end = Date.now() + withinMs;
      while (Date.now() < end) {
        const port = await deployment.masterPort().catch(() => 0);
        if (port > 0) {
          const replicaPort = servers.find((s) => s.port !== port)?.port ?? 0;
          const inSync = (await field(replicaPort, 'replication', 'master_link_status')) === 'up';
          const views = await Promise.all(
            sentinels.map(async (s) => {
              const replicas = await cli(s.port, 'SENTINEL', 'replicas', MASTER_NAME).catch(() => '');
              const peers = await cli(s.port, 'SENTINEL', 'sentinels', MASTER_NAME).catch(() => '');
              const flags = /\nflags\n([^\n]*)/.exec(replicas)?.[1] ?? '';
              // Every sentinel sees the replica healthy and both other sentinels (for a quorum and a leader).
              return (
                replicas.includes(String(replicaPort)) && !/down|disconnected/.test(flags) && (peers.match(/\nrunid\n/g)?.length ?? 0) === 2
              );
            }),
          );
          if (inSync && views.every(Boolean)) return;
        }
        await sleep(100);
      }
      throw new Error(`the sentinel deployment was not healthy within ${withinMs} ms`);
    },
    async stop() {
      for (const p of procs) {
        if (p.exitCode === null && p.signalCode === null) {
          const gone = new Promise((r) => p.once('exit', r));
          p.kill('SIGKILL');
          await gone;
        }
        live.delete(p);
      }
      await Promise.all(servers.map((s) => s.stop()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await deployment.healthy();
  } catch (error) {
    await deployment.stop();
    throw error;
  }
  return deployment;
}
