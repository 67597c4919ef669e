// Policy sets: the policies one consume is decided by — the limiter's own, or a call's `policy` (plans,
// tiers) — with what the stages need of them, built once per distinct input and kept in a bounded cache.
import { badOption } from './errors.js';
import { type Policy, parsePolicies } from './policy.js';
import { createShards, type Shards } from './shards.js';

/** The policies of one consume, and what the limiter's stages need of them. */
export interface PolicySet {
  readonly policies: readonly Policy[];
  readonly shards: Shards;
  /** The local limit while the store is down: the limiter's `fallback` when given, else these policies. */
  readonly fallback: readonly Policy[];
  /**
   * '' for the limiter's own policies; else their ids, which set a call's denials apart in the deny
   * cache: one plan's request is never answered from another plan's denial.
   */
  readonly id: string;
}

/** Most distinct policy inputs kept parsed; past it the oldest goes (a plan per user is parsed again). */
const MAX_SETS = 1000;

/** The options a set is built with: the limiter's shards and its explicit fallback. */
export interface PolicySetOptions {
  shards: number;
  /** The limiter's `fallback` option, when given. */
  fallback: readonly Policy[] | undefined;
}

/** A set for `policies`; throws naming `option` when the limiter's shards cannot split them. */
export function policySet(policies: readonly Policy[], o: PolicySetOptions, id: string, option: string): PolicySet {
  const most = Math.min(...policies.map((p) => Math.min(p.limit, Math.floor(p.burst))));
  if (o.shards > most) {
    badOption(option, `limits of at least ${o.shards} (the limiter's shards: each needs a share)`, `a limit of ${most}`);
  }
  return { policies, shards: createShards(policies, o.shards), fallback: o.fallback ?? policies, id };
}

/**
 * The sets of calls' `policy` inputs: each distinct input parsed once. A string is its own cache key; an
 * object or array is keyed by its contents (so a plan object built per request still hits), and one
 * holding anything but strings, numbers, booleans and null is parsed every time (its error, if any, is
 * the parser's). A call whose policies are the limiter's own gets the limiter's set.
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
  const ownIds = own?.policies.map((p) => p.id).join(',');
  const build = (input: unknown): PolicySet => {
    const policies = parsePolicies(input, 'policy');
    const id = policies.map((p) => p.id).join(',');
    return id === ownIds && own !== undefined ? own : policySet(policies, o, id, 'policy');
  };
  const get = (input: unknown): PolicySet => {
    const string = typeof input === 'string';
    const key = string ? input : contentKey(input);
    if (key === undefined) return build(input);
    const sets = string ? strings : contents;
    let set = sets.get(key);
    if (set === undefined) {
      set = build(input);
      if (sets.size >= MAX_SETS) sets.delete(sets.keys().next().value as string);
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

/** A key for a policy object or array of policies from its contents; undefined when it holds other things. */
function contentKey(input: unknown): string | undefined {
  if (input === null || typeof input !== 'object') return undefined;
  const items = Array.isArray(input) ? input : [input];
  for (const item of items) {
    if (typeof item === 'string') continue;
    if (item === null || typeof item !== 'object' || Array.isArray(item)) return undefined;
    for (const k in item) {
      const v = (item as Record<string, unknown>)[k];
      if (v !== null && v !== undefined && typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean') return undefined;
    }
  }
  return JSON.stringify(input);
}
