// The one Redis harness of the tests and the benchmarks: redis-server processes (standalone, or a real
// 3-master / 3-replica Cluster) on free ports of 127.0.0.1, each without persistence in a temp dir of its
// own. Plain Node ESM, so that bench/*.mjs import it as is (no build step); the tests import it through
// ./redis.ts, jest's swc transform taking .mjs too. Types: ./redis-harness.d.mts.
// SLUICE_SERVER picks the server: 'redis' (the default: redis-server, redis-cli) or 'valkey'
// (valkey-server, valkey-sentinel, valkey-cli), so that the same suites run on either (.ci/run runs both).
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';

const run = promisify(execFile);

const SERVERS = {
  redis: { name: 'redis', server: 'redis-server', sentinel: { command: 'redis-server', args: ['--sentinel'] }, cli: 'redis-cli' },
  valkey: { name: 'valkey', server: 'valkey-server', sentinel: { command: 'valkey-sentinel', args: [] }, cli: 'valkey-cli' },
};
const chosen = process.env.SLUICE_SERVER || 'redis';
if (!Object.hasOwn(SERVERS, chosen)) {
  throw new Error(`SLUICE_SERVER must be one of ${Object.keys(SERVERS).join(', ')} (or unset, for redis)`);
}
/** The server the harness starts (SLUICE_SERVER): its name, and its binaries (a sentinel: `command <conf> ...args`). */
export const SERVER = SERVERS[chosen];

/** Resolves after `ms` milliseconds. */
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let prefixes = 0;
/**
 * The one key namespace scheme of the tests: `<tag>_<n>_<8 random hex>`, unique in this process (n counts)
 * and across processes and runs (random), so that no two tests or runs share a counter. `tag` defaults to
 * the running test file's name ('core.redis' for test/core.redis.test.ts), so a key in Redis names the file
 * that wrote it. No prefix is the start of another (tags hold no '_'; the random part is of fixed length),
 * so `${prefix}*` matches one namespace's keys only.
 */
export function uniquePrefix(tag) {
  const file = globalThis.expect?.getState?.().testPath;
  const name = tag ?? (file ? basename(file).replace(/\.test\.[cm]?[jt]s$/, '') : 'sluice');
  return `${name.replace(/[^!-z|]|[_*?[\]\\]/g, '-').slice(0, 32)}_${(prefixes++).toString(36)}_${randomBytes(4).toString('hex')}`;
}

// Every server still running, as a function that kills it and removes its dir without waiting. A process
// exit (a failed test file, a benchmark's Ctrl-C) cannot await stop(), and must not leave a server behind.
const live = new Set();
process.on('exit', () => {
  for (const abandon of live) abandon();
});

/** A port that was free on 127.0.0.1 a moment ago (the OS picks it). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const address = s.address();
      s.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** Whether `port` on 127.0.0.1 can be listened on now. */
function isFree(port) {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** A free port whose Cluster bus port (port + 10000) is free too: a node that cannot bind its bus exits. */
async function freeNodePort() {
  for (;;) {
    const port = await freePort();
    if (port + 10000 <= 65535 && (await isFree(port + 10000))) return port;
  }
}

/** The server's CLI (redis-cli, valkey-cli) run against `port`: its output, trimmed. */
export async function cli(port, ...args) {
  return (await run(SERVER.cli, ['-p', String(port), ...args], { timeout: 5000 })).stdout.trim();
}

/** The server exited before it answered: its port (or bus port) was taken between the pick and its bind. */
class ExitedEarly extends Error {}

// By the clock, not a count of tries: on a busy machine each redis-cli call itself takes a while.
async function untilPing(port, exited = () => false) {
  for (const deadline = Date.now() + 20_000; Date.now() < deadline; ) {
    if (exited()) throw new ExitedEarly(`${SERVER.server} on ${port} exited before it answered PING`);
    try {
      if ((await cli(port, 'PING')) === 'PONG') return;
    } catch {
      // not up yet
    }
    await sleep(25);
  }
  throw new Error(`${SERVER.server} on ${port} did not answer PING within 20 s`);
}

/**
 * Starts a server (SERVER) on `port` (default: a free one) with `extra` arguments, and waits for PING. On a
 * port of its own picking, a server that exits at once (another process took the port after the pick) is
 * started again on another.
 */
export async function startServer(extra = [], port) {
  if (port !== undefined) return startServerOn(extra, port);
  const node = extra.includes('--cluster-enabled');
  for (let tries = 1; ; tries++) {
    try {
      return await startServerOn(extra, node ? await freeNodePort() : await freePort());
    } catch (error) {
      if (!(error instanceof ExitedEarly) || tries === 5) throw error;
    }
  }
}

async function startServerOn(extra, p) {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-redis-'));
  let proc;
  const abandon = () => {
    proc?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  const start = async () => {
    const current = spawn(
      SERVER.server,
      ['--port', String(p), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...extra],
      {
        stdio: 'ignore',
      },
    );
    proc = current;
    live.add(abandon);
    await untilPing(p, () => current.exitCode !== null || current.signalCode !== null);
  };
  const kill = async () => {
    const current = proc;
    if (!current || current.exitCode !== null || current.signalCode !== null) return;
    const gone = new Promise((r) => current.once('exit', r));
    // A paused server gets SIGCONT first, so that it exits now rather than when someone resumes it.
    current.kill('SIGCONT');
    current.kill('SIGKILL');
    await gone;
  };
  try {
    await start();
  } catch (error) {
    live.delete(abandon);
    abandon();
    throw error;
  }
  return {
    port: p,
    url: `redis://127.0.0.1:${p}`,
    kill,
    // A server still running is killed first: a second one on its port would exit, and PING reach the first.
    restart: async () => {
      await kill();
      await start();
    },
    pause: () => proc?.kill('SIGSTOP'),
    resume: () => proc?.kill('SIGCONT'),
    async stop() {
      live.delete(abandon);
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A standalone server of the test's own, or the user's REDIS_URL (which tests must not kill). */
export async function startRedis() {
  const url = process.env.REDIS_URL;
  if (!url) return startServer();
  const port = Number(new URL(url).port || 6379);
  const refuse = async () => {
    throw new Error('REDIS_URL is set: this test does not kill a Redis it did not start');
  };
  return { port, url, kill: refuse, restart: refuse, pause: () => {}, resume: () => {}, stop: async () => {} };
}

/** Starts a real Redis Cluster (3 masters, 3 replicas) and waits for cluster_state:ok with 3 masters. */
export async function startCluster(extra = []) {
  const nodes = [];
  const cluster = {
    nodes,
    async masters() {
      const out = await cli(nodes[0].port, 'CLUSTER', 'NODES').catch(() => cli(nodes[1].port, 'CLUSTER', 'NODES'));
      return out
        .split('\n')
        .filter((l) => l.includes('master') && !l.includes('fail'))
        .map((l) => Number(/:(\d+)@/.exec(l)[1]))
        .sort((a, b) => a - b);
    },
    startupNodes: () => nodes.map((n) => ({ host: '127.0.0.1', port: n.port })),
    async stop() {
      await Promise.all(nodes.map((n) => n.stop()));
    },
  };
  try {
    for (let i = 0; i < 6; i++) {
      nodes.push(
        await startServer([
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          `nodes-${i}.conf`,
          '--cluster-node-timeout',
          '1000',
          ...extra,
        ]),
      );
    }
    await run(SERVER.cli, ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '1', '--cluster-yes'], {
      timeout: 30_000,
    });
    for (let i = 0; i < 200; i++) {
      const states = await Promise.all(nodes.map((n) => cli(n.port, 'CLUSTER', 'INFO')));
      if (states.every((s) => s.includes('cluster_state:ok')) && (await cluster.masters()).length === 3) return cluster;
      await sleep(50);
    }
    throw new Error('cluster did not reach cluster_state:ok with 3 masters');
  } catch (error) {
    await cluster.stop();
    throw error;
  }
}

/** Script calls (EVALSHA and EVAL) the server behind `client` has counted since its last CONFIG RESETSTAT. */
export async function scriptCalls(client) {
  const info = await client.info('commandstats');
  return [...info.matchAll(/cmdstat_eval(?:sha)?:calls=(\d+)/g)].reduce((a, m) => a + Number(m[1]), 0);
}

/** A node of `cluster` other than `except` that answers PING now (the killed ones do not). */
async function liveNode(cluster, except) {
  for (const n of cluster.nodes) {
    if (except.includes(n.port)) continue;
    if ((await cli(n.port, 'PING').catch(() => '')) === 'PONG') return n;
  }
  throw new Error('no live cluster node');
}

/**
 * The port of the master that owns `key`'s slot, as a live node other than `except` sees it, or
 * undefined while that owner is flagged as failing (fail-over under way).
 */
export async function ownerOf(cluster, key, except = []) {
  const via = await liveNode(cluster, except);
  const slot = Number(await cli(via.port, 'CLUSTER', 'KEYSLOT', key));
  for (const line of (await cli(via.port, 'CLUSTER', 'NODES')).split('\n')) {
    const fields = line.split(' ');
    if (!fields[2]?.includes('master')) continue;
    for (const r of fields.slice(8)) {
      const [a, b] = r.split('-').map(Number);
      if (slot >= a && slot <= (b ?? a)) return /fail/.test(fields[2]) ? undefined : Number(/:(\d+)@/.exec(line)[1]);
    }
  }
  return undefined;
}

/** SIGKILLs the master that holds `key`'s slot; returns its port and the ports of its replicas. */
export async function killMasterOf(cluster, key) {
  const port = await ownerOf(cluster, key);
  if (port === undefined) throw new Error(`${key}'s slot has no healthy master`);
  const id = await cli(port, 'CLUSTER', 'MYID');
  const replicas = (await cli(port, 'CLUSTER', 'REPLICAS', id))
    .split('\n')
    .filter((l) => l.includes(id))
    .map((l) => Number(/:(\d+)@/.exec(l)[1]));
  const node = cluster.nodes.find((n) => n.port === port);
  if (!node) throw new Error(`master ${port} is not one of this cluster's nodes`);
  // When the signal goes: the process may take a while to be reaped on a busy machine, and the clients see
  // the master gone from the signal on.
  const killedAt = performance.now();
  await node.kill();
  return { port, replicas, killedAt };
}

/**
 * Waits until a replica owns `key`'s slot in place of the dead master `dead`, and every live node
 * says cluster_state:ok. Returns the new master's port.
 */
export async function waitForPromotion(cluster, key, dead, withinMs = 15_000) {
  const end = Date.now() + withinMs;
  while (Date.now() < end) {
    const owner = await ownerOf(cluster, key, [dead]).catch(() => undefined);
    if (owner !== undefined && owner !== dead) {
      const others = cluster.nodes.filter((n) => n.port !== dead);
      const states = await Promise.all(others.map((n) => cli(n.port, 'CLUSTER', 'INFO').catch(() => '')));
      if (states.every((s) => s.includes('cluster_state:ok'))) return owner;
    }
    await sleep(50);
  }
  throw new Error(`no replica took over ${key}'s slot from ${dead} within ${withinMs} ms`);
}

/** INFO `section` of the server on `port`, as field -> value. */
export async function info(port, section) {
  const out = {};
  for (const line of (await cli(port, 'INFO', section)).split('\n')) {
    const at = line.indexOf(':');
    if (at > 0) out[line.slice(0, at)] = line.slice(at + 1).trim();
  }
  return out;
}

/**
 * Waits until every replica of `cluster` has finished its first sync (master_link_status:up): a
 * replica that never synced refuses to fail over ("disconnected from master for longer than allowed").
 */
export async function replicasInSync(cluster, withinMs = 15_000) {
  const end = Date.now() + withinMs;
  while (Date.now() < end) {
    const states = await Promise.all(cluster.nodes.map((n) => info(n.port, 'replication').catch(() => ({}))));
    const replicas = states.filter((s) => s.role === 'slave');
    if (replicas.length === cluster.nodes.length / 2 && replicas.every((s) => s.master_link_status === 'up')) return;
    await sleep(50);
  }
  throw new Error(`replicas did not sync within ${withinMs} ms`);
}
