// The rules part of the memory store (store.ts RuleStore): the same steps as lua/rules.lua, in this
// process, on Date.now. One process only: rules written here are in force here.
import type { RuleStore } from './store.js';

interface Kept {
  version: number;
  /** identity -> stored value, "<expiresAt ms, 0 for none>|<JSON>" as lua/rules.lua keeps it. */
  rules: Map<string, string>;
}

const expiry = (value: string): number => Number(value.slice(0, value.indexOf('|')));

/** The memory store's rules; `clock` is the store's ms clock. */
export function memoryRules(clock: () => number): RuleStore {
  const prefixes = new Map<string, Kept>();
  const denials = new Map<string, { count: number; until: number }>();
  const kept = (prefix: string): Kept => {
    let k = prefixes.get(prefix);
    if (k === undefined) {
      k = { version: 0, rules: new Map() };
      prefixes.set(prefix, k);
    }
    return k;
  };
  return {
    async version(prefix) {
      return { version: kept(prefix).version, now: clock() };
    },
    async load(prefix) {
      const k = kept(prefix);
      const now = clock();
      const entries: [string, string][] = [];
      for (const [id, value] of k.rules) {
        const at = expiry(value);
        if (at > 0 && at <= now) k.rules.delete(id);
        else entries.push([id, value]);
      }
      return { version: k.version, now, entries };
    },
    async write(prefix, id, value, ttlMs) {
      const k = kept(prefix);
      const now = clock();
      const old = k.rules.get(id);
      const existed = old !== undefined && (expiry(old) === 0 || expiry(old) > now);
      const expiresAt = value !== null && ttlMs > 0 ? now + Math.ceil(ttlMs) : 0;
      if (value === null) k.rules.delete(id);
      else k.rules.set(id, `${expiresAt}|${value}`);
      k.version++;
      return { existed, expiresAt };
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
