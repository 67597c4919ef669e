import { ALGORITHM_STEPS } from './algorithms/steps.js';
import { badOption } from './errors.js';
import type { Store, StoreReply, StoreRequest } from './store.js';

/** Options of memoryStore(). */
export interface MemoryStoreOptions {
  /** Most keys kept; the least recently used goes first. Default 100000. */
  maxKeys?: number;
  /** ms clock. Default Date.now. For tests. */
  clock?: () => number;
}

interface Entry {
  state: unknown;
  expiresAt: number;
}

/**
 * The embedded store: counters in this process, bounded by `maxKeys` (LRU) and by expiry, so a flood
 * of unique keys cannot grow it without limit. Same semantics as the Redis scripts.
 * @example createLimiter({ policy: '100/1m', store: memoryStore({ maxKeys: 50_000 }) })
 */
export function memoryStore(options: MemoryStoreOptions = {}): Store & { readonly size: number } {
  const maxKeys = options.maxKeys ?? 100_000;
  if (!Number.isSafeInteger(maxKeys) || maxKeys < 1) badOption('maxKeys', 'a positive integer', maxKeys);
  const clock = options.clock ?? Date.now;
  // A Map iterates in insertion order: re-inserting on use makes its first key the least recently used.
  const entries = new Map<string, Entry>();

  function read(key: string, now: number): unknown {
    const entry = entries.get(key);
    if (entry === undefined) return undefined;
    entries.delete(key);
    if (entry.expiresAt <= now) return undefined;
    entries.set(key, entry);
    return entry.state;
  }

  function write(key: string, state: unknown, expiresAt: number, now: number): void {
    entries.delete(key);
    entries.set(key, { state, expiresAt });
    // Evict over the bound, and up to two expired entries at the cold end while we are here.
    let sweep = 2;
    for (const [oldest, entry] of entries) {
      if (entries.size > maxKeys || (sweep-- > 0 && entry.expiresAt <= now)) entries.delete(oldest);
      else break;
    }
  }

  function decideNow(request: StoreRequest): StoreReply {
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
      const step = ALGORITHM_STEPS[policy.algorithm](read(keys[i]!, now), now, policy, cost, single);
      steps.push(step);
      allowed &&= step.ok;
    }
    if (allowed && !peek && n > 1) {
      for (let i = 0; i < n; i++) {
        const policy = policies[i]!;
        steps[i] = ALGORITHM_STEPS[policy.algorithm](read(keys[i]!, now), now, policy, cost, true);
      }
    }
    for (let i = 0; i < n; i++) {
      const { remaining, resetMs, retryAfterMs, next } = steps[i]!;
      if (next) write(keys[i]!, next.state, now + next.ttlMs, now);
      states.push({ remaining, resetMs, retryAfterMs });
    }
    return { allowed, states };
  }

  return {
    local: true,
    get size() {
      return entries.size;
    },
    decide: (request) => Promise.resolve(decideNow(request)),
    async reset(keys) {
      for (const key of keys) entries.delete(key);
    },
    async close() {
      entries.clear();
    },
  };
}
