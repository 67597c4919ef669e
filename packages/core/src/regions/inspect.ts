// What `sluice inspect --home` shows of a key leased across regions: its global bucket and each region's lease
// as the home counts them, and the lease a region's store holds.
import { counterKey } from '../call-checks.js';
import { badOption } from '../errors.js';
import { type PolicyInput, parsePolicies } from '../policy/policy.js';
import type { Store } from '../store/contract.js';
import { homeKey, keyTag, leaseKey } from '../store/keys.js';
import type { HomeView, LeaseStore } from '../store/leases.js';
import { bucketOf } from './tier.js';

/** A key's leases: the home's view, and the region's own record when its store is given. */
export interface LeasesInspected {
  home: HomeView;
  /** The lease in the region's store: tokens it holds, ms until it lapses (0: lapsed or none), its epoch. */
  region?: { holds: number; msLeft: number; epoch: string | undefined; staticShareInMs: number };
}

/**
 * Reads `key`'s global bucket at `home` and, with `store`, the lease that region's store holds (nothing is written).
 * @example await inspectLeases({ home, store, prefix: 'sluice', key: 'api-key-42', policy: '1000/1m' })
 */
export async function inspectLeases(o: {
  home: Store;
  store?: Store;
  prefix: string;
  key: string;
  scope?: string;
  policy: PolicyInput | PolicyInput[];
  lease?: number;
  timeout?: number;
}): Promise<LeasesInspected> {
  const [policy, more] = parsePolicies(o.policy, 'policy');
  if (policy === undefined || more !== undefined || policy.algorithm !== 'token-bucket')
    badOption('policy', 'one token-bucket policy', o.policy);
  const tag = keyTag(counterKey(o.key, o.scope));
  const bucket = bucketOf(policy);
  const times = { leaseMs: o.lease ?? 1000, timeoutMs: o.timeout ?? 1000, ttlMs: 0 };
  const home = await (o.home.leases as LeaseStore).view(homeKey(o.prefix, tag, policy.id), bucket, { ...times, count: 0 });
  if (o.store?.leases === undefined) return { home };
  const f = await o.store.leases.lease(leaseKey(o.prefix, tag, policy.id));
  const num = (name: string) => Number(f[name] ?? 0) || 0;
  const now = num('now');
  return {
    home,
    region: {
      holds: Math.max(0, num('G') - num('S')),
      msLeft: Math.max(0, num('x') - now),
      epoch: f.ep,
      staticShareInMs: Math.max(0, num('f') - now),
    },
  };
}
