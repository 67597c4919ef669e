// consume() with a prefilter or shards: the local first tier, then a hot key's shard, and one other
// shard before a denial.
import type { Attempt } from './attempt.js';
import { decideShard, type ShardStages } from './decide-shard.js';
import type { Decision } from './decision.js';
import type { Prefilter } from './prefilter.js';
import type { RegionTier } from './regions/tier.js';

/** The stages the tiers go through: the prefilter, when there is one, and the shard's (decide-shard.ts). */
export interface TierStages extends ShardStages {
  readonly prefilter: Prefilter | undefined;
  /** With `regions` (one shard): the region's lease decides instead of the shard's store call. */
  readonly regions: RegionTier | undefined;
}

/** A consume's decision through the tiers, finished (finish.ts). */
export async function consumeTiers(s: TierStages, attempt: Attempt): Promise<Decision> {
  const { shards } = attempt.set;
  if (s.prefilter) {
    const denied = await s.prefilter.denial(attempt);
    if (denied) return s.finish(attempt.key, denied);
  }
  // An id's record lives in one shard: its retries go there, and only there.
  const first = attempt.id === undefined ? shards.pick() : shards.of(attempt.id);
  const decision = await (s.regions ? s.regions.decide(attempt) : decideShard(s, attempt, first));
  if (
    decision.allowed ||
    shards.count === 1 ||
    attempt.id !== undefined ||
    (decision.source !== 'store' && decision.source !== 'deny-cache')
  ) {
    return s.finish(attempt.key, decision);
  }
  const second = await decideShard(s, attempt, shards.other(first));
  return s.finish(attempt.key, second.allowed || second.retryAfterMs < decision.retryAfterMs ? second : decision);
}
