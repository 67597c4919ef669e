import { ALGORITHMS } from './algorithms/index.js';
import { badOption } from './errors.js';
import { checkNames, isFunction, isPositiveInteger, type OptionSpec, resolve } from './options.js';
import type { Store, StoreReply, StoreRequest } from './store.js';

/** Options of memoryStore(). */
export interface MemoryStoreOptions {
  /** Most keys kept; the least recently used goes first. Default 100000. */
  maxKeys?: number;
  /** ms clock. Default Date.now. For tests. */
  clock?: () => number;
}

const MEMORY_OPTIONS = {
  maxKeys: { doc: 'most keys kept; default 100000', default: 100_000, check: isPositiveInteger },
  clock: { doc: 'test hook: the ms clock; default Date.now', default: Date.now, check: isFunction } as OptionSpec<() => number>,
} satisfies { [K in keyof MemoryStoreOptions]-?: OptionSpec<unknown> };
const MEMORY_OPTION_NAMES = Object.keys(MEMORY_OPTIONS);

/** Keys of `recent` that each key taken in looks at, dropping the expired ones. */
const SWEEP = 2;

interface Entry {
  state: unknown;
  expiresAt: number;
}

/**
 * The embedded store: counters in this process, bounded by `maxKeys` (the least recently used go first) and by expiry, so a flood
 * of unique keys cannot grow it without limit. Same semantics as the Redis scripts.
 * @example createLimiter({ policy: '100/1m', store: memoryStore({ maxKeys: 50_000 }) })
 */
export function memoryStore(options: MemoryStoreOptions = {}): Store & { readonly size: number } {
  if (options === null || typeof options !== 'object') badOption('memoryStore options', 'an object, such as { maxKeys: 10000 }', options);
  checkNames(options, MEMORY_OPTION_NAMES, 'a memoryStore option');
  const { maxKeys, clock } = resolve(MEMORY_OPTIONS, options);
  // Two generations, as in quick-lru: a key used lately is in `recent`; when `recent` is full it becomes
  // `older` and the keys left in the old `older`, unused for a whole generation, go. Approximately
  // least-recently-used, O(1) per call, and never more than maxKeys keys. (One Map re-ordered on every
  // use leaves a run of deleted slots at its head that each eviction walks: 20x slower at 10,000 keys.)
  const generation = Math.ceil(maxKeys / 2);
  let recent = new Map<string, Entry>();
  let older = new Map<string, Entry>();

  function read(key: string, now: number): unknown {
    let entry = recent.get(key);
    if (entry === undefined) {
      entry = older.get(key);
      if (entry === undefined) return undefined;
      older.delete(key);
      if (entry.expiresAt > now) keep(key, entry, now);
    }
    return entry.expiresAt > now ? entry.state : undefined;
  }

  // Expired keys go as the store goes: each key taken in also looks at the next SWEEP keys of `recent`,
  // in a pass that starts over when it reaches the end, and drops those that expired. So a store that
  // takes keys only now and then (a fallback during outages) does not hold every expired one until it
  // needs the room. Keys in `older` expire when read, or go with their generation.
  let sweep: IterableIterator<[string, Entry]> = recent.entries();

  function keep(key: string, entry: Entry, now: number): void {
    recent.set(key, entry);
    if (recent.size >= generation) {
      older = recent;
      recent = new Map();
      sweep = recent.entries();
      return;
    }
    for (let i = 0; i < SWEEP; i++) {
      let next = sweep.next();
      if (next.done) {
        sweep = recent.entries();
        next = sweep.next();
      }
      const [k, e] = next.value as [string, Entry];
      if (e.expiresAt <= now) recent.delete(k);
    }
  }

  function write(key: string, state: unknown, expiresAt: number, now: number): void {
    const entry = recent.get(key);
    if (entry !== undefined) {
      entry.state = state;
      entry.expiresAt = expiresAt;
      return;
    }
    older.delete(key);
    keep(key, { state, expiresAt }, now);
  }

  function decideNow(request: StoreRequest): StoreReply {
    if (request.delta !== undefined || request.slot !== undefined || request.idTtlMs !== undefined) return decideOne(request);
    const { keys, policies, peek } = request;
    const cost = peek ? 1 : request.cost;
    const now = clock();
    const n = policies.length;
    const single = n === 1 && !peek;
    const states = [];
    const steps = [];
    let allowed = true;
    for (let i = 0; i < n; i++) {
      const policy = policies[i]!;
      const step = ALGORITHMS[policy.algorithm].step(read(keys[i]!, now) as never, now, policy, cost, single);
      steps.push(step);
      allowed &&= step.ok;
    }
    if (allowed && !peek && n > 1) {
      for (let i = 0; i < n; i++) {
        const policy = policies[i]!;
        steps[i] = ALGORITHMS[policy.algorithm].step(read(keys[i]!, now) as never, now, policy, cost, true);
      }
    }
    for (let i = 0; i < n; i++) {
      const { remaining, resetMs, retryAfterMs, next, windowMs } = steps[i]!;
      if (next) write(keys[i]!, next.state, now + next.ttlMs, now);
      states.push(windowMs === undefined ? { remaining, resetMs, retryAfterMs } : { remaining, resetMs, retryAfterMs, windowMs });
    }
    return { allowed, states };
  }

  /** An adjustment, or a consume with a slot or an id: the twin of lua/decide.lua's decide_one. */
  function decideOne(request: StoreRequest): StoreReply {
    const { keys, policies, delta, slot = '', idTtlMs = 0 } = request;
    const now = clock();
    const n = policies.length;
    if (delta !== undefined) {
      for (let i = 0; i < n; i++) {
        const next = ALGORITHMS[policies[i]!.algorithm].adjust(read(keys[i]!, now) as never, now, policies[i]!, delta, slot);
        if (next === null) write(keys[i]!, undefined, now, now);
        else if (next !== undefined) write(keys[i]!, next.state, now + next.ttlMs, now);
      }
    }
    // A release (concurrent policies only, never mixed with rate ones in an adjust): zeros, as the Lua answers.
    if (delta !== undefined && policies[0]!.algorithm === 'concurrent') {
      return { allowed: true, states: policies.map(() => ({ remaining: 0, resetMs: 0, retryAfterMs: 0 })) };
    }
    const cost = delta === undefined ? request.cost : 1;
    const replay = delta === undefined && idTtlMs > 0 && read(keys[n]!, now) !== undefined;
    const states = [];
    let allowed = true;
    for (let i = 0; i < n; i++) {
      const step = ALGORITHMS[policies[i]!.algorithm].step(read(keys[i]!, now) as never, now, policies[i]!, cost, false, slot);
      states.push({ remaining: step.remaining, resetMs: step.resetMs, retryAfterMs: replay ? 0 : step.retryAfterMs });
      allowed &&= step.ok;
    }
    if (replay) return { allowed: true, states };
    if (delta === undefined && allowed) {
      for (let i = 0; i < n; i++) {
        const step = ALGORITHMS[policies[i]!.algorithm].step(read(keys[i]!, now) as never, now, policies[i]!, cost, true, slot);
        if (step.next) write(keys[i]!, step.next.state, now + step.next.ttlMs, now);
        states[i] = { remaining: step.remaining, resetMs: step.resetMs, retryAfterMs: step.retryAfterMs };
      }
      if (idTtlMs > 0) write(keys[n]!, true, now + Math.ceil(idTtlMs), now);
    }
    return { allowed, states };
  }

  return {
    local: true,
    get size() {
      return recent.size + older.size;
    },
    decide: (request) => Promise.resolve(decideNow(request)),
    async reset(keys) {
      for (const key of keys) {
        recent.delete(key);
        older.delete(key);
      }
    },
    async close() {
      recent.clear();
      older.clear();
    },
  };
}
