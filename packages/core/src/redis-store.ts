import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import calculateSlot from 'cluster-key-slot';
import { attempt, isDecideScript, runDecide } from './decide-script.js';
import { badOption, SluiceError } from './errors.js';
import { guardKey } from './keys.js';
import { checkNames } from './options.js';
import { decodeReply, encodeBatch } from './protocol.js';
import { CLIENTS_TAKEN, looksLikeClient, type RedisClient, scriptClient } from './redis-clients.js';
import type { Store, StoreReply, StoreRequest } from './store.js';

export type { IoredisClient, NodeRedisClient, RedisClient } from './redis-clients.js';

/** Options of redisStore(). */
export interface RedisStoreOptions {
  /**
   * The client, told apart by shape: ioredis 5 or 6 or iovalkey (`Redis`, also one that follows
   * Sentinel, or `Cluster`), or node-redis 4 or 5 (`createClient()`, `createCluster()`). The store never
   * closes it, and sends nothing while its connection is down: a call then fails at once (to the fail
   * mode) instead of waiting in the client's offline queue.
   */
  client: RedisClient;
  /** Most decisions carried by one script call. Default 512. */
  maxBatch?: number;
  /**
   * A fake ms clock for tests: the scripts decide on it instead of the server's TIME, exactly (README,
   * "Testing your limits"); keys live an hour past the TTLs computed on it. Default: absent (production).
   * @example redisStore({ client, clock: () => now })
   */
  clock?: () => number;
}

interface Pending {
  request: StoreRequest;
  done: (error: unknown, reply?: StoreReply) => void;
  /** performance.now() past which its caller no longer waits (the fail mode has answered it): never sent then. */
  deadline: number;
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

/**
 * The Redis store: every decision is the one script of lua/, run atomically on the server's clock.
 * Decisions asked for in one event-loop turn travel together, many to a script call (one call per
 * slot on a Cluster), so throughput is bounded by Redis rather than by round trips. On a standalone
 * server, while two calls are in flight, later decisions wait for one of them and go together.
 * @example createLimiter({ policy: '100/1m', store: redisStore({ client: new Redis() }) })
 * @example createLimiter({ policy: '100/1m', store: redisStore({ client: await createClient().connect() }) })
 */
export function redisStore(options: RedisStoreOptions): Store {
  if (looksLikeClient(options)) {
    throw new SluiceError('ERR_SLUICE_OPTION', 'redisStore takes options: pass redisStore({ client }), not the client itself');
  }
  if (options === null || typeof options !== 'object') {
    throw new SluiceError('ERR_SLUICE_OPTION', `redisStore takes options { client }, where client is ${CLIENTS_TAKEN}`);
  }
  checkNames(options, ['client', 'maxBatch', 'clock'], 'a redisStore option');
  const { clock } = options;
  const client = scriptClient(options.client, isDecideScript);
  const maxBatch = options.maxBatch ?? 512;
  if (!Number.isSafeInteger(maxBatch) || maxBatch < 1) badOption('maxBatch', 'a positive integer', maxBatch);
  const { cluster } = client;
  // The script's guard (lua/decide.lua) refuses a call that runs again: this store's calls are numbered.
  const storeId = randomBytes(8).toString('hex');
  const guard = cluster ? undefined : guardKey(storeId);
  let calls = 0;
  let queue: Pending[] = [];
  /** Calls that wait for the connection being made; each leaves at its deadline, unsent. */
  let parked: Pending[] = [];
  let sweeping: ReturnType<typeof setTimeout> | undefined;
  /** Set while unpark waits to be told the connection is up, or failed. */
  let waiting = false;
  let inFlight = 0;
  /** Set while a flush waits for a call to return, for at most HOLD_MS. */
  let holding: ReturnType<typeof setTimeout> | undefined;

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
    // A connection that is not up, whether it went down or never came up: a client would hold these calls
    // in its offline queue and run them once connected, after their callers had their answer from the
    // fail mode, charging them twice. Refuse them now.
    const down = client.down();
    if (down !== undefined) {
      if (client.connecting()) park(batch);
      else fail(batch, new Error(down));
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
        sendTo(slot, group);
      }
    }
    for (const [slot, group] of bySlot) sendTo(slot, group);
  }

  function sendTo(slot: number, group: Pending[]): void {
    const slotDown = client.down(slot);
    if (slotDown === undefined) send(group, guardKey(storeId, slot));
    else if (client.connecting()) park(group);
    else fail(group, new Error(slotDown));
  }

  /**
   * The connection is being made: the batch waits for it (never in the client's offline queue, which
   * would send a call after its deadline), and goes when it is up; a call whose deadline passed first
   * leaves unsent, and every one fails at once if the attempt fails.
   */
  function park(batch: Pending[]): void {
    if (!waiting) {
      waiting = true;
      client.whenSettled(unpark);
    }
    for (const p of batch) parked.push(p);
    sweep();
  }

  function unpark(): void {
    waiting = false;
    const held = parked;
    parked = [];
    clearTimeout(sweeping);
    sweeping = undefined;
    const now = performance.now();
    for (const p of held) {
      if (p.deadline > now) queue.push(p);
      else p.done(new Error("the Redis connection was not up within the call's deadline"));
    }
    if (queue.length > 0) flushNow();
  }

  /** Lets go of parked calls whose deadline has passed (their callers had their answer), and waits for the next. */
  function sweep(): void {
    clearTimeout(sweeping);
    sweeping = undefined;
    const now = performance.now();
    let next = Number.POSITIVE_INFINITY;
    const still: Pending[] = [];
    for (const p of parked) {
      if (p.deadline > now) {
        still.push(p);
        next = Math.min(next, p.deadline);
      } else p.done(new Error("the Redis connection was not up within the call's deadline"));
    }
    parked = still;
    if (next !== Number.POSITIVE_INFINITY) {
      sweeping = setTimeout(sweep, Math.max(1, next - now));
      sweeping.unref?.();
    }
  }

  function send(batch: Pending[], guardKey = guard as string): void {
    const requests = batch.map((p) => p.request);
    const now = clock?.();
    const wall = now ?? Date.now();
    const { keys, args } = encodeBatch(requests, { guard: guardKey, call: ++calls, wall, now });
    inFlight++;
    runDecide(client, keys, args, () => String(++calls)).then(
      (values) => {
        returned();
        const replies = decodeReply(values, requests, wall);
        if (replies instanceof Error) fail(batch, replies);
        else for (const [i, p] of batch.entries()) p.done(undefined, replies[i]);
      },
      (error: unknown) => {
        returned();
        fail(batch, error);
      },
    );
  }

  const decideWith = (request: StoreRequest, done: Pending['done'], deadline = Number.POSITIVE_INFINITY): void => {
    if (queue.push({ request, done, deadline }) === 1) setImmediate(flush);
  };
  return {
    local: false,
    decide: (request) =>
      new Promise<StoreReply>((resolve, reject) =>
        decideWith(request, (error, reply) => (reply === undefined ? reject(error) : resolve(reply))),
      ),
    decideWith,
    connecting: () => client.connecting(),
    async reset(keys) {
      if (keys.length === 0) return;
      if (!cluster) {
        await attempt(() => client.del(keys));
        return;
      }
      // One DEL per slot: a Cluster refuses one whose keys span slots (CROSSSLOT), as shards' keys do.
      const bySlot = new Map<number, string[]>();
      for (const key of keys) {
        const slot = calculateSlot(key);
        bySlot.set(slot, [...(bySlot.get(slot) ?? []), key]);
      }
      await Promise.all([...bySlot.values()].map((group) => attempt(() => client.del(group))));
    },
    async close() {
      client.detach();
      if (queue.length > 0) release();
      if (parked.length > 0) unpark();
    },
  };
}

function fail(batch: Pending[], error: unknown): void {
  for (const { done } of batch) done(error);
}
