// Types of ./redis-harness.mjs, for the tests (the benchmarks are plain JavaScript).

/** The server the harness starts (SLUICE_SERVER): its name, and its binaries (a sentinel: `command <conf> ...args`). */
export declare const SERVER: {
  name: 'redis' | 'valkey';
  server: string;
  sentinel: { command: string; args: string[] };
  cli: string;
};

/** The server's CLI (redis-cli, valkey-cli) run against `port`: its output, trimmed. */
export declare function cli(port: number, ...args: string[]): Promise<string>;

/** Resolves after `ms` milliseconds. */
export declare function sleep(ms: number): Promise<void>;

/**
 * The one key namespace scheme of the tests: `<tag>_<n>_<8 random hex>`, unique in this process (n counts)
 * and across processes and runs (random), so that no two tests or runs share a counter. `tag` defaults to
 * the running test file's name ('core.redis' for test/core.redis.test.ts), so a key in Redis names the file
 * that wrote it. No prefix is the start of another, so `${prefix}*` matches one namespace's keys only.
 */
export declare function uniquePrefix(tag?: string): string;

/** A port that was free on 127.0.0.1 a moment ago (the OS picks it). */
export declare function freePort(): Promise<number>;

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
  /** Kills it and removes its dir. */
  stop(): Promise<void>;
}

/** Starts a server (SERVER) on `port` (default: a free one) with `extra` arguments, and waits for PING. */
export declare function startServer(extra?: string[], port?: number): Promise<RedisServer>;

/** A standalone server of the test's own, or the user's REDIS_URL (which tests must not kill). */
export declare function startRedis(): Promise<RedisServer>;

/** A real Redis Cluster: 3 masters, 3 replicas, on free ports. */
export interface RedisCluster {
  nodes: RedisServer[];
  /** Ports of the current masters, ascending. */
  masters(): Promise<number[]>;
  startupNodes(): Array<{ host: string; port: number }>;
  stop(): Promise<void>;
}

/** Starts a real Redis Cluster (3 masters, 3 replicas) and waits for cluster_state:ok with 3 masters. */
export declare function startCluster(extra?: string[]): Promise<RedisCluster>;

/** Script calls (EVALSHA and EVAL) the server behind `client` has counted since its last CONFIG RESETSTAT. */
export declare function scriptCalls(client: { info(section: string): Promise<string> }): Promise<number>;

/**
 * The port of the master that owns `key`'s slot, as a live node other than `except` sees it, or
 * undefined while that owner is flagged as failing (fail-over under way).
 */
export declare function ownerOf(cluster: RedisCluster, key: string, except?: number[]): Promise<number | undefined>;

/** SIGKILLs the master that holds `key`'s slot; returns its port, the ports of its replicas and when the signal went (performance.now()). */
export declare function killMasterOf(cluster: RedisCluster, key: string): Promise<{ port: number; replicas: number[]; killedAt: number }>;

/**
 * Waits until a replica owns `key`'s slot in place of the dead master `dead`, and every live node
 * says cluster_state:ok. Returns the new master's port.
 */
export declare function waitForPromotion(cluster: RedisCluster, key: string, dead: number, withinMs?: number): Promise<number>;

/** INFO `section` of the server on `port`, as field -> value. */
export declare function info(port: number, section: string): Promise<Record<string, string>>;

/**
 * Waits until every replica of `cluster` has finished its first sync (master_link_status:up): a
 * replica that never synced refuses to fail over ("disconnected from master for longer than allowed").
 */
export declare function replicasInSync(cluster: RedisCluster, withinMs?: number): Promise<void>;
