// The memory store's keys: bounded by a count (the least recently used go first) and by expiry.

/** Keys of `recent` that each key taken in looks at, dropping the expired ones. */
const SWEEP = 2;
/**
 * How long an expired key stays before the sweep drops it. Most keys come back soon: a key's entry that is
 * still there is written in place, where a dropped one is deleted and inserted again, which costs the Map
 * its holes and rehashes on every decision of a key whose state lives shorter than its visits are apart.
 */
const LINGER_MS = 10_000;

interface Entry {
  state: unknown;
  expiresAt: number;
}

/**
 * Two generations, as in quick-lru: a key used lately is in `recent`; when `recent` is full it becomes
 * `older` and the keys left in the old `older`, unused for a whole generation, go. Approximately
 * least-recently-used, O(1) per call, and never more than maxKeys keys. (One Map re-ordered on every
 * use leaves a run of deleted slots at its head that each eviction walks: 20x slower at 10,000 keys.)
 */
export class MemoryKeys {
  private readonly generation: number;
  private recent = new Map<string, Entry>();
  private older = new Map<string, Entry>();
  // Expired keys go as the store goes: each key taken in also looks at the next SWEEP keys of `recent`,
  // in a pass that starts over when it reaches the end, and drops those that expired. So a store that
  // takes keys only now and then (a fallback during outages) does not hold every expired one until it
  // needs the room. Keys in `older` expire when read, or go with their generation.
  private sweep: IterableIterator<[string, Entry]> = this.recent.entries();
  /** The entry of `recent` read last, and its key, while `recent` has not changed since. */
  private last: Entry | undefined;
  private lastKey: string | undefined;

  constructor(maxKeys: number) {
    this.generation = Math.ceil(maxKeys / 2);
  }

  get size(): number {
    return this.recent.size + this.older.size;
  }

  read(key: string, now: number): unknown {
    const entry = this.recent.get(key);
    if (entry !== undefined) {
      this.last = entry;
      this.lastKey = key;
      return entry.expiresAt > now ? entry.state : undefined;
    }
    const older = this.older.get(key);
    if (older === undefined) return undefined;
    this.older.delete(key);
    if (older.expiresAt <= now) return undefined;
    this.keep(key, older, now);
    return older.state;
  }

  write(key: string, state: unknown, expiresAt: number, now: number): void {
    // A decision reads a key, then writes it: the entry read is still in `recent` unless keep() or a
    // delete ran since, and each forgets it.
    const entry = key === this.lastKey ? this.last : this.recent.get(key);
    if (entry !== undefined) {
      entry.state = state;
      entry.expiresAt = expiresAt;
      return;
    }
    this.older.delete(key);
    this.keep(key, { state, expiresAt }, now);
  }

  delete(key: string): void {
    this.forgetLast();
    this.recent.delete(key);
    this.older.delete(key);
  }

  /** Deletes every key that starts with `start`. */
  deleteStarting(start: string): void {
    this.forgetLast();
    for (const map of [this.recent, this.older]) for (const key of map.keys()) if (key.startsWith(start)) map.delete(key);
  }

  clear(): void {
    this.forgetLast();
    this.recent.clear();
    this.older.clear();
  }

  private forgetLast(): void {
    this.last = undefined;
    this.lastKey = undefined;
  }

  private keep(key: string, entry: Entry, now: number): void {
    this.forgetLast();
    this.recent.set(key, entry);
    if (this.recent.size >= this.generation) {
      this.older = this.recent;
      this.recent = new Map();
      this.sweep = this.recent.entries();
      return;
    }
    for (let i = 0; i < SWEEP; i++) {
      let next = this.sweep.next();
      if (next.done) {
        this.sweep = this.recent.entries();
        next = this.sweep.next();
      }
      const [k, e] = next.value as [string, Entry];
      if (e.expiresAt + LINGER_MS <= now) this.recent.delete(k);
    }
  }
}
