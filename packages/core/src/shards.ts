// Shards: one hot key becomes N sub-keys, each with its share of every limit.
import type { Policy } from './policy/policy.js';

/** The policies of each shard, and the factor that turns a shard's counts into the whole key's. */
export interface Shards {
  readonly count: number;
  /** shard -> its policies (shares of the limiter's). */
  readonly policies: readonly (readonly Policy[])[];
  /** shard -> per policy, whole limit / shard limit; undefined with one shard. */
  readonly scales: readonly (readonly number[] | undefined)[];
  /** A shard at random. */
  pick(): number;
  /** The shard of an idempotent consume's id: always the same one, where its record lives. */
  of(id: string): number;
  /** Another shard than `first`, at random: a hot key's shards drift apart, so one more try before a denial. */
  other(first: number): number;
}

/** Each shard's share of a policy: shares of limit and burst sum to the whole, so shards never over-admit. */
function share(p: Policy, shard: number, shards: number): Policy {
  const limit = Math.floor(p.limit / shards) + (shard < p.limit % shards ? 1 : 0);
  return { ...p, limit, burst: (p.burst * limit) / p.limit, id: `${p.id}s${shards}` };
}

export function createShards(policies: readonly Policy[], count: number): Shards {
  const each = Array.from({ length: count }, (_, s) => (count === 1 ? policies : policies.map((p) => share(p, s, count))));
  return {
    count,
    policies: each,
    scales: each.map((ps) => (count === 1 ? undefined : ps.map((p, i) => (policies[i] as Policy).limit / p.limit))),
    pick: () => (count === 1 ? 0 : Math.floor(Math.random() * count)),
    of(id) {
      // FNV-1a: any spread does, as long as one id always lands on one shard.
      let h = 0x811c9dc5;
      for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
      return (h >>> 0) % count;
    },
    other: (first) => (first + 1 + Math.floor(Math.random() * (count - 1))) % count,
  };
}
