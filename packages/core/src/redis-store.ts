import { createHash } from 'node:crypto';
import calculateSlot from 'cluster-key-slot';
import type { Cluster, Redis } from 'ioredis';
import { badOption } from './errors.js';
import { DECIDE_SCRIPT } from './lua.generated.js';
import { ALGORITHM_CODES, type Policy } from './policy.js';
import type { PolicyState, Store, StoreReply, StoreRequest } from './store.js';

/** Options of redisStore(). */
export interface RedisStoreOptions {
  /** An ioredis client, standalone or Cluster. The store never closes it. */
  client: Redis | Cluster;
  /** Most decisions carried by one script call. Default 512. */
  maxBatch?: number;
  /** Test hook: a ms clock passed to the scripts instead of the server's TIME. Never set it in production. */
  clock?: () => number;
}

interface Pending {
  request: StoreRequest;
  resolve: (reply: StoreReply) => void;
  reject: (error: unknown) => void;
}

/** Fewest decisions a flush is split down to, so that per-call costs stay small beside per-decision ones. */
const MIN_SPLIT = 32;
/**
 * Script calls in flight (standalone) past which decisions wait for one to return and then go together:
 * a call costs Redis and this process tens of µs of wake-ups and system calls whatever it carries, so
 * under load fewer, fuller calls leave more CPU for the work. Two keep Redis busy while this process
 * answers the other call's callers. Decisions wait at most HOLD_MS, so that a call which never returns
 * (a connection lost mid-call) does not hold the ones behind it.
 */
const MAX_IN_FLIGHT = 2;
const HOLD_MS = 5;

const SHA = createHash('sha1').update(DECIDE_SCRIPT).digest('hex');

/**
 * The Redis store: every decision is the one script of lua/, run atomically on the server's clock.
 * Decisions asked for in one event-loop turn travel together, many to a script call (one call per
 * slot on a Cluster), so throughput is bounded by Redis rather than by round trips. On a standalone
 * server, while two calls are in flight, later decisions wait for one of them and go together.
 * @example createLimiter({ policy: '100/1m', store: redisStore({ client: new Redis() }) })
 */
export function redisStore(options: RedisStoreOptions): Store {
  const { client, clock } = options;
  if (client === null || typeof client !== 'object' || typeof client.evalsha !== 'function') {
    badOption('client', 'an ioredis Redis or Cluster instance', client);
  }
  const maxBatch = options.maxBatch ?? 512;
  if (!Number.isSafeInteger(maxBatch) || maxBatch < 1) badOption('maxBatch', 'a positive integer', maxBatch);
  const cluster = (client as Cluster).isCluster === true;
  let queue: Pending[] = [];
  let wasReady = false;
  let inFlight = 0;
  /** Set while a flush waits for a call to return, for at most HOLD_MS. */
  let holding: ReturnType<typeof setTimeout> | undefined;

  if (!cluster && !noResendOn.has(client)) {
    noResendOn.add(client);
    client.on('close', () => noResend(client));
  }

  function release(): void {
    clearTimeout(holding);
    holding = undefined;
    if (queue.length > 0) flushNow();
  }

  /** A script call is back: decisions held for it go, after this turn's callers have asked again. */
  function returned(): void {
    if (--inFlight < MAX_IN_FLIGHT && holding !== undefined) {
      clearTimeout(holding);
      holding = undefined;
      setImmediate(flush);
    }
  }

  function flush(): void {
    if (!cluster && inFlight >= MAX_IN_FLIGHT) holding ??= setTimeout(release, HOLD_MS);
    else flushNow();
  }

  function flushNow(): void {
    const batch = queue;
    queue = [];
    // A connection that was up and is now down: ioredis would hold these calls in its offline queue and
    // run them on reconnect, after their callers had their answer from the fail mode, charging them
    // twice. Refuse them now. (A client not yet connected, as with lazyConnect, may still connect.)
    if (client.status === 'ready') wasReady = true;
    else if (wasReady) {
      fail(batch, new Error(`Redis connection is ${client.status}`));
      return;
    }
    if (!cluster) {
      // With no call in flight, two or more script calls rather than one when there are enough decisions:
      // Redis runs the first while this process answers the other's callers, so the two overlap.
      const size = inFlight > 0 ? maxBatch : Math.min(maxBatch, Math.max(MIN_SPLIT, Math.ceil(batch.length / 2)));
      for (let i = 0; i < batch.length; i += size) send(i === 0 && size >= batch.length ? batch : batch.slice(i, i + size));
      return;
    }
    // A script's keys must share one slot; a request's keys already do (one hash tag).
    const bySlot = new Map<number, Pending[]>();
    for (const p of batch) {
      const slot = calculateSlot(p.request.keys[0] as string);
      const group = bySlot.get(slot);
      if (group === undefined) bySlot.set(slot, [p]);
      else if (group.push(p) >= maxBatch) {
        bySlot.delete(slot);
        send(group);
      }
    }
    for (const group of bySlot.values()) send(group);
  }

  function send(batch: Pending[]): void {
    // KEYS, then ARGV: now, P, the P specs, then runs of decisions alike (same policies, cost, op),
    // each run one count and one shape however many decisions it stands for (see lua/decide.lua).
    const keys: string[] = [];
    const specArgs: string[] = [];
    const runs: string[] = [];
    const specs = new Map<Policy, string>();
    let shape: StoreRequest | undefined;
    let count = 0;
    let countAt = 0;
    for (const { request } of batch) {
      const { policies } = request;
      for (let i = 0; i < policies.length; i++) keys.push(request.keys[i] as string);
      if (
        shape !== undefined &&
        policies === shape.policies &&
        request.peek === shape.peek &&
        (request.peek || request.cost === shape.cost)
      ) {
        count++;
        continue;
      }
      if (shape !== undefined) runs[countAt] = String(count);
      shape = request;
      count = 1;
      countAt = runs.length;
      runs.push('', request.peek ? 'p' : 'c', request.peek ? '1' : String(request.cost), String(policies.length));
      for (const policy of policies) {
        let spec = specs.get(policy);
        if (spec === undefined) {
          spec = String(specs.size + 1);
          specs.set(policy, spec);
          specArgs.push(ALGORITHM_CODES[policy.algorithm], String(policy.limit), String(policy.windowMs), String(policy.burst));
        }
        runs.push(spec);
      }
    }
    runs[countAt] = String(count);
    const numKeys = keys.length;
    const args = keys;
    args.push(clock ? String(clock()) : '', String(specs.size));
    for (const x of specArgs) args.push(x);
    for (const x of runs) args.push(x);
    inFlight++;
    // NOSCRIPT (restart, fail-over, SCRIPT FLUSH) is the one error retried: EVAL reloads the script.
    const reply = client.evalsha(SHA, numKeys, args).catch((error: unknown) => {
      if (error instanceof Error && error.message.startsWith('NOSCRIPT')) return client.eval(DECIDE_SCRIPT, numKeys, args);
      throw error;
    });
    reply.then(
      (values) => {
        returned();
        settle(batch, values as number[]);
      },
      (error: unknown) => {
        returned();
        fail(batch, error);
      },
    );
  }

  return {
    local: false,
    decide(request) {
      return new Promise<StoreReply>((resolve, reject) => {
        if (queue.push({ request, resolve, reject }) === 1) setImmediate(flush);
      });
    },
    async reset(keys) {
      if (keys.length > 0) await client.del(...keys);
    },
    async close() {
      if (queue.length > 0) release();
    },
  };
}

/**
 * The one parser of the script's reply: per decision, per policy, remaining, resetMs, retryAfterUs
 * (whole µs, which the StoreReply carries as ms to the µs). A decision is allowed when every policy's
 * retry is 0 (a denying policy answers >= 1 µs).
 */
function settle(batch: Pending[], reply: number[]): void {
  let at = 0;
  for (const { request, resolve } of batch) {
    let allowed = true;
    const n = request.policies.length;
    const states: PolicyState[] = new Array(n);
    for (let i = 0; i < n; i++) {
      const remaining = reply[at] as number;
      const resetMs = reply[at + 1] as number;
      const retryAfterUs = reply[at + 2] as number;
      at += 3;
      if (retryAfterUs !== 0) allowed = false;
      states[i] = { remaining, resetMs, retryAfterMs: retryAfterUs / 1000 };
    }
    resolve({ allowed, states });
  }
}

/** Standalone clients with noResend on their 'close': one listener per client, whatever the stores on it. */
const noResendOn = new WeakSet<object>();

/**
 * A standalone connection that closes while ready sets its unanswered commands aside and writes them
 * again on the next connection (autoResendUnfulfilledCommands), after the fail mode has answered
 * their callers: a call Redis had already run is charged twice. ioredis sets them aside before it
 * emits 'close' (on the next tick) and resends them on 'ready': take the script calls out there.
 */
function noResend(client: object): void {
  const queue = (client as { prevCommandQueue?: CommandQueue | null }).prevCommandQueue;
  if (queue == null || typeof queue.peekAt !== 'function') return;
  for (let i = 0; i < queue.length; ) {
    const command = queue.peekAt(i)?.command;
    const first = command?.args?.[0];
    if (command !== undefined && (first === SHA || first === DECIDE_SCRIPT)) {
      queue.remove(i, 1);
      command.reject(new Error('Redis connection closed with the call in flight; it is not sent again'));
    } else i++;
  }
}

/** The part of ioredis' internal queue of commands set aside at a close that noResend reads. */
interface CommandQueue {
  length: number;
  peekAt(i: number): { command: { args?: unknown[]; reject(error: Error): void } } | undefined;
  remove(i: number, n: number): void;
}

function fail(batch: Pending[], error: unknown): void {
  for (const { reject } of batch) reject(error);
}
