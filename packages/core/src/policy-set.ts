// Policy sets: the policies one consume is decided by — the limiter's own, or a call's `policy` (plans,
// tiers) — with what the stages need of them, built once per distinct input and kept in a bounded cache.
import { badOption } from './errors.js';
import { isConcurrent, type Policy, parsePolicies } from './policy/policy.js';
import { createShards, type Shards } from './shards.js';

/** The policies of one consume, and what the limiter's stages need of them. */
export interface PolicySet {
  readonly policies: readonly Policy[];
  readonly shards: Shards;
  /** The local limit while the store is down: the limiter's `fallback` when given, else these policies. */
  readonly fallback: readonly Policy[];
  /**
   * '' for the limiter's own policies; else a number of this set's own, which sets its denials apart in
   * the deny cache: one plan's request is never answered from another plan's denial, not even by a
   * calendar quota whose counter the plans share. A set parsed again (after the cache let it go) gets a
   * new one, so no denial outlives the set that a reset would have cleared.
   */
  readonly id: string;
  /** The largest cost that can ever pass, and the policy that bounds it: the smallest capacity of any policy of any shard. */
  readonly capacity: { readonly cost: number; readonly policy: Policy };
  /** A consume takes a concurrent slot: a policy (or a fallback policy) counts requests in flight. */
  readonly hasSlots: boolean;
  /** How long an id's record lasts: the longest window of the rate policies. */
  readonly idTtlMs: number;
}

/** Most distinct policy inputs kept parsed; past it the oldest goes (a plan per user is parsed again). */
const MAX_SETS = 1000;

/** The options a set is built with: the limiter's shards, its explicit fallback, and whether it has a prefilter. */
export interface PolicySetOptions {
  shards: number;
  /** The limiter's `fallback` option, when given. */
  fallback: readonly Policy[] | undefined;
  prefilter: boolean;
}

/** A set for `policies`; throws naming `option` when the limiter's shards cannot split them. */
export function policySet(policies: readonly Policy[], o: PolicySetOptions, id: string, option: string): PolicySet {
  const most = Math.min(...policies.map((p) => Math.min(p.limit, Math.floor(p.burst))));
  if (o.shards > most) {
    badOption(option, `limits of at least ${o.shards} (the limiter's shards: each needs a share)`, `a limit of ${most}`);
  }
  if (policies.some(isConcurrent)) {
    // A slot lives in one place, taken and given back there: not split over shards, not behind a local tier.
    if (o.shards > 1) badOption('shards', '1 with a concurrent policy (a slot is held in one place)', o.shards);
    if (o.prefilter)
      badOption('prefilter', 'absent with a concurrent policy (its local charge is not given back with the slot)', 'a policy');
  }
  const shards = createShards(policies, o.shards);
  const fallback = o.fallback ?? policies;
  return {
    policies,
    shards,
    fallback,
    id,
    capacity: capacityOf(shards.policies),
    hasSlots: policies.some(isConcurrent) || fallback.some(isConcurrent),
    idTtlMs: longestWindow(policies),
  };
}

/**
 * The sets of calls' `policy` inputs: each distinct input parsed once. A string is its own cache key; a
 * plain object or array is keyed by its contents (so a plan object built per request still hits, and one
 * changed in place is read afresh). A call whose policies are the limiter's own gets the limiter's set.
 */
export interface PolicyCache {
  /** The set for a call's `policy` input; throws naming `policy` when it is not one. */
  get(input: unknown): PolicySet;
  /** The sets parsed so far (at most MAX_SETS of each kind). */
  sets(): IterableIterator<PolicySet>;
}

export function createPolicyCache(own: PolicySet | undefined, o: PolicySetOptions): PolicyCache {
  // Strings and contents apart, so that no string spells an object's key.
  const strings = new Map<string, PolicySet>();
  const contents = new Map<string, PolicySet>();
  const ownId = own && setId(own.policies);
  let made = 0;
  const build = (input: unknown): PolicySet => {
    const policies = parsePolicies(input, 'policy');
    return own !== undefined && setId(policies) === ownId ? own : policySet(policies, o, String(++made), 'policy');
  };
  // The plan objects seen last, by their fields: a plan object built per request matches one of them
  // field by field, with no key string built (most apps have a few plans).
  const recent: { names: string[]; values: unknown[]; set: PolicySet }[] = [];
  const get = (input: unknown): PolicySet => {
    const seen = recent.length > 0 ? recentMatch(recent, input) : undefined;
    if (seen !== undefined) return seen;
    if (typeof input === 'string') return cached(strings, input, input);
    const fields = plainFields(input);
    const key = fields !== undefined ? fieldsKey(fields) : Array.isArray(input) ? listKey(input) : undefined;
    if (key === undefined) return build(input);
    const set = cached(contents, key, input);
    if (fields !== undefined && recent.unshift({ ...fields, set }) > RECENT) recent.pop();
    return set;
  };
  const cached = (sets: Map<string, PolicySet>, key: string, input: unknown): PolicySet => {
    let set = sets.get(key);
    if (set === undefined) {
      set = build(input);
      if (sets.size >= MAX_SETS) {
        const oldest = sets.keys().next().value as string;
        const gone = sets.get(oldest);
        sets.delete(oldest);
        // A set the cache let go is not answered from memory either: a reset no longer reaches its denials.
        for (let i = recent.length - 1; i >= 0; i--) if (recent[i]?.set === gone) recent.splice(i, 1);
      }
      sets.set(key, set);
    }
    return set;
  };
  return {
    get,
    *sets() {
      yield* strings.values();
      yield* contents.values();
    },
  };
}

/** Plan objects remembered by their fields (see createPolicyCache). */
const RECENT = 4;

/** A plain object: not an array, and its prototype Object.prototype or null (not a class instance). */
function isPlain(o: unknown): o is Record<string, unknown> {
  if (o === null || typeof o !== 'object' || Array.isArray(o)) return false;
  const proto = Object.getPrototypeOf(o);
  return proto === Object.prototype || proto === null;
}

/** The first of `recent` whose fields are `input`'s, in order, with the same values; else undefined. */
function recentMatch(recent: readonly { names: string[]; values: unknown[]; set: PolicySet }[], input: unknown): PolicySet | undefined {
  if (!isPlain(input)) return undefined;
  for (const r of recent) {
    let i = 0;
    let same = true;
    for (const name in input) {
      if (r.names[i] !== name || r.values[i] !== input[name]) {
        same = false;
        break;
      }
      i++;
    }
    if (same && i === r.names.length) return r.set;
  }
  return undefined;
}

/** A plain object's field names and values when every value is a string, number, boolean, null or undefined; else undefined. */
function plainFields(input: unknown): { names: string[]; values: unknown[] } | undefined {
  if (!isPlain(input)) return undefined;
  const names: string[] = [];
  const values: unknown[] = [];
  for (const name in input) {
    const v = input[name];
    if (v !== null && typeof v === 'object') return undefined;
    if (typeof v === 'function' || typeof v === 'symbol' || typeof v === 'bigint') return undefined;
    names.push(name);
    values.push(v);
  }
  return { names, values };
}

/** What makes two sets decide alike: ids, limits and names ('"' is in none of them). */
const setId = (policies: readonly Policy[]): string => policies.map((p) => `${p.id}"${p.limit}"${p.name}`).join('"');

/**
 * The cache key of a plan object's fields, or of a list of policies (strings and plan objects); undefined
 * for a list holding anything else (a class instance, an object with a value that is not a string,
 * number, boolean, null or undefined), which is then parsed every time. Built by hand, not by
 * JSON.stringify (4x slower, and silent about functions): names and strings are length-prefixed and
 * each value tagged, so that no two contents share a key.
 */
function fieldsKey({ names, values }: { names: string[]; values: unknown[] }): string {
  let key = '{';
  for (let i = 0; i < names.length; i++) {
    const name = names[i] as string;
    const v = values[i];
    key += `${name.length}:${name}`;
    if (typeof v === 'number') key += `n${v},`;
    else if (typeof v === 'string') key += `s${v.length}:${v}`;
    else if (typeof v === 'boolean') key += v ? 't' : 'f';
    else key += v === undefined ? 'u' : 'z';
  }
  return `${key}}`;
}

function listKey(input: readonly unknown[]): string | undefined {
  let key = '[';
  for (const item of input) {
    if (typeof item === 'string') {
      key += `${item.length}'${item}`;
      continue;
    }
    const fields = plainFields(item);
    if (fields === undefined) return undefined;
    key += fieldsKey(fields);
  }
  return key;
}

/**
 * The largest cost that can ever pass: the smallest capacity of any rate policy (of any shard). A
 * concurrent policy holds one slot whatever the cost, so it bounds none.
 */
function capacityOf(shards: readonly (readonly Policy[])[]): { cost: number; policy: Policy } {
  let least = { cost: Number.POSITIVE_INFINITY, policy: shards[0]?.[0] as Policy };
  for (const ps of shards) {
    for (const p of ps) {
      if (isConcurrent(p)) continue;
      const cost = p.algorithm === 'token-bucket' ? p.burst : p.limit;
      if (cost < least.cost) least = { cost, policy: p };
    }
  }
  return least;
}

/** The longest window of the rate policies (at least 1 ms): how long an id's record lasts. */
export function longestWindow(policies: readonly Policy[]): number {
  let most = 1;
  for (const p of policies) if (!isConcurrent(p) && p.windowMs > most) most = p.windowMs;
  return most;
}
