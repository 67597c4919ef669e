// reset(): a key's counters forgotten everywhere this limiter keeps them: the store (one call per
// shard, since on a Cluster each shard has its own slot), the local fallback and the prefilter.

import type { Policy } from './policy/policy.js';
import type { PolicySet } from './policy-set.js';
import type { Store } from './store/contract.js';
import { fallbackTag, requestKeys, shardTag } from './store/keys.js';

export function createReset(
  prefix: string,
  store: Store,
  local: Store | undefined,
  prefilter: Policy | undefined,
): (tag: string, sets: readonly PolicySet[]) => Promise<void> {
  return async (tag, sets) => {
    if (local) {
      const fallbacks = new Set(sets.flatMap((set) => requestKeys(prefix, fallbackTag(tag), set.fallback)));
      await local.reset([...fallbacks, ...(prefilter ? requestKeys(prefix, tag, [prefilter]) : [])]);
    }
    const byShard = new Map<string, Set<string>>();
    for (const set of sets) {
      set.shards.policies.forEach((ps, s) => {
        const t = shardTag(tag, s, set.shards.count);
        const keys = byShard.get(t) ?? new Set<string>();
        byShard.set(t, keys);
        for (const k of requestKeys(prefix, t, ps)) keys.add(k);
      });
    }
    await Promise.all([...byShard.values()].map((keys) => store.reset([...keys])));
  };
}
