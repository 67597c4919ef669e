// The rules part of the memory store (contract.ts RuleStore): the steps of lua/rules.lua, in this process, on
// the store's clock. One process only: rules written here are in force here. Two differences in how, not
// in what: the log is a list of changes rather than a sorted set (a change is found by a binary search on
// its version; an identity changed twice is in it twice), and lapsed rules are swept by a pass over the
// rules with a ttl that each write moves on by SWEEP, rather than by their expiry's order.
import type { RuleChanges, RuleStore } from './contract.js';

/** Rules with a ttl each write looks at, dropping the lapsed ones. */
const SWEEP = 4;
/** The log's oldest changes go once it holds this many more than the rules (lua/rules.lua LOG_SLACK). */
const LOG_SLACK = 1024;

interface Kept {
  version: number;
  /** identity -> stored value, "<expiresAt ms, 0 for none>|<JSON>" as lua/rules.lua keeps it. */
  rules: Map<string, string>;
  /** The log: the identity and version of each change, oldest first; those before `start` are trimmed. */
  ids: string[];
  versions: number[];
  start: number;
  /** The log holds every change above this version. */
  floor: number;
  /** identity -> expiresAt, of the rules with a ttl; `sweep` goes round it. */
  expiring: Map<string, number>;
  sweep: IterableIterator<[string, number]>;
  /** Until when (store clock) a limiter's copy marked the rules seen. */
  seenUntil: number;
}

const live = (value: string, now: number): boolean => {
  const at = Number(value.slice(0, value.indexOf('|')));
  return at === 0 || at > now;
};

/** The memory store's rules; `clock` is the store's ms clock. */
export function memoryRules(clock: () => number): RuleStore & { forget(prefix: string): void } {
  const prefixes = new Map<string, Kept>();
  const denials = new Map<string, { count: number; until: number }>();
  const kept = (prefix: string): Kept => {
    let k = prefixes.get(prefix);
    if (k === undefined) {
      const expiring = new Map<string, number>();
      k = { version: 0, rules: new Map(), ids: [], versions: [], start: 0, floor: 0, expiring, sweep: expiring.entries(), seenUntil: 0 };
      prefixes.set(prefix, k);
    }
    return k;
  };
  const log = (k: Kept, id: string): void => {
    k.ids.push(id);
    k.versions.push(k.version);
  };
  /** The identities changed after `since`, or undefined when the log does not reach back or a full read is cheaper. */
  const changedSince = (k: Kept, since: number): Set<string> | undefined => {
    if (since < k.floor || since > k.version) return undefined;
    let lo = k.start;
    let hi = k.versions.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((k.versions[mid] as number) <= since) lo = mid + 1;
      else hi = mid;
    }
    const ids = new Set<string>();
    for (let i = lo; i < k.ids.length; i++) {
      ids.add(k.ids[i] as string);
      if (ids.size > k.rules.size) return undefined;
    }
    return ids;
  };
  return {
    /** Drops a prefix's rules and its counters' denials (a ban's count: keys.ts banKey). */
    forget(prefix) {
      prefixes.delete(prefix);
      for (const key of denials.keys()) if (key.startsWith(`${prefix}:{`)) denials.delete(key);
    },
    async changes(prefix, since, markMs) {
      const k = kept(prefix);
      const now = clock();
      if (markMs > 0) k.seenUntil = Math.max(k.seenUntil, now + markMs);
      const reply: RuleChanges = { version: k.version, now, full: false, entries: [] };
      if (since === k.version) return reply;
      const ids = changedSince(k, since);
      if (ids === undefined) {
        reply.full = true;
        for (const [id, value] of k.rules) if (live(value, now)) reply.entries.push([id, value]);
      } else {
        for (const id of ids) {
          const value = k.rules.get(id);
          reply.entries.push([id, value !== undefined && live(value, now) ? value : null]);
        }
      }
      return reply;
    },
    async write(prefix, id, value, ttlMs) {
      const k = kept(prefix);
      const now = clock();
      const old = k.rules.get(id);
      const existed = old !== undefined && live(old, now);
      const expiresAt = value !== null && ttlMs > 0 ? now + Math.ceil(ttlMs) : 0;
      if (value === null) k.rules.delete(id);
      else k.rules.set(id, `${expiresAt}|${value}`);
      if (expiresAt > 0) k.expiring.set(id, expiresAt);
      else k.expiring.delete(id);
      k.version++;
      log(k, id);
      for (let i = 0; i < SWEEP && k.expiring.size > 0; i++) {
        let next = k.sweep.next();
        if (next.done) {
          k.sweep = k.expiring.entries();
          next = k.sweep.next();
        }
        const [gone, at] = next.value as [string, number];
        if (at > now) continue;
        k.rules.delete(gone);
        k.expiring.delete(gone);
        log(k, gone);
      }
      for (let i = 0; i < 2 && k.ids.length - k.start > k.rules.size + LOG_SLACK; i++) k.floor = k.versions[k.start++] as number;
      if (k.start > LOG_SLACK && k.start * 2 > k.ids.length) {
        k.ids.splice(0, k.start);
        k.versions.splice(0, k.start);
        k.start = 0;
      }
      return { existed, expiresAt, version: k.version };
    },
    async seen(prefix) {
      return kept(prefix).seenUntil > clock();
    },
    async countDenials(key, n, withinMs) {
      const now = clock();
      let d = denials.get(key);
      if (d === undefined || d.until <= now) {
        // Lapsed counts go as new ones come: bounded by the keys denied within one window.
        if (d === undefined && denials.size >= 100_000) for (const [k, v] of denials) if (v.until <= now) denials.delete(k);
        d = { count: 0, until: now + Math.ceil(withinMs) };
        denials.set(key, d);
      }
      d.count += n;
      return d.count;
    },
  };
}
