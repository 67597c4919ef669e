import { ALGORITHMS, type StepResult } from './algorithms/index.js';
import { badOption } from './errors.js';
import { checkNames, isFunction, isPositiveInteger, type OptionSpec, resolve, spec } from './options.js';
import { idOf, opOf } from './protocol.js';
import type { PolicyState, Store, StoreReply, StoreRequest } from './store.js';

/** Options of memoryStore(). */
export interface MemoryStoreOptions {
  /** Most keys kept; the least recently used goes first. Default 100000. */
  maxKeys?: number;
  /** ms clock. Default Date.now. For tests. */
  clock?: () => number;
}

const MEMORY_OPTIONS = {
  maxKeys: spec(isPositiveInteger, 100_000),
  clock: spec<() => number>(isFunction, Date.now),
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

  /**
   * One decision, read as protocol.ts reads it and decided as lua/decide.lua's loop decides one: an
   * adjustment moves every policy first; every policy is checked before any is charged, and one policy
   * checks and charges in one pass; a release answers zeros, an id already recorded a peek's reply.
   */
  function decideNow(request: StoreRequest): StoreReply {
    const { keys, policies, slot = '' } = request;
    const op = opOf(request);
    const idTtl = idOf(request);
    const now = clock();
    const n = policies.length;
    if (op === 'a' || op === 'r') {
      for (let i = 0; i < n; i++) {
        const next = ALGORITHMS[policies[i]!.algorithm].adjust(read(keys[i]!, now) as never, now, policies[i]!, request.delta!, slot);
        if (next === null) write(keys[i]!, undefined, now, now);
        else if (next !== undefined) write(keys[i]!, next.state, now + next.ttlMs, now);
      }
    }
    if (op === 'r') return { allowed: true, states: policies.map(() => ({ remaining: 0, resetMs: 0, retryAfterMs: 0 })) };
    const replay = op === 'c' && idTtl > 0 && read(keys[n]!, now) !== undefined;
    const take = op === 'c' && !replay;
    const cost = op === 'c' ? request.cost : 1;
    let apply = take && n === 1;
    const steps: StepResult<unknown>[] = new Array(n);
    let allowed = true;
    for (;;) {
      allowed = true;
      for (let i = 0; i < n; i++) {
        const step = ALGORITHMS[policies[i]!.algorithm].step(read(keys[i]!, now) as never, now, policies[i]!, cost, apply, slot);
        steps[i] = step;
        allowed &&= step.ok;
      }
      if (!allowed || !take || apply) break;
      apply = true;
    }
    const states: PolicyState[] = new Array(n);
    for (let i = 0; i < n; i++) {
      const { remaining, resetMs, next, windowMs } = steps[i]!;
      if (apply && next) write(keys[i]!, next.state, now + next.ttlMs, now);
      const retryAfterMs = replay ? 0 : steps[i]!.retryAfterMs;
      states[i] = windowMs === undefined ? { remaining, resetMs, retryAfterMs } : { remaining, resetMs, retryAfterMs, windowMs };
    }
    if (apply && allowed && idTtl > 0) write(keys[n]!, true, now + Math.ceil(idTtl), now);
    return { allowed: allowed || replay, states };
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
