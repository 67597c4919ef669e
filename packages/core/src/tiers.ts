// consume() with a prefilter or shards: the local first tier, then a hot key's shard, and one other
// shard before a denial.
import type { Attempt } from './attempt.js';
import type { Decision } from './decision.js';

export function createTiers(
  prefilter: ((attempt: Attempt) => Promise<Decision | undefined>) | undefined,
  decideShard: (attempt: Attempt, shard: number) => Promise<Decision>,
  finish: (key: string, decision: Decision) => Decision,
): (attempt: Attempt) => Promise<Decision> {
  return async (attempt) => {
    const { shards } = attempt.set;
    if (prefilter) {
      const denied = await prefilter(attempt);
      if (denied) return finish(attempt.key, denied);
    }
    // An id's record lives in one shard: its retries go there, and only there.
    const first = attempt.id === undefined ? shards.pick() : shards.of(attempt.id);
    const decision = await decideShard(attempt, first);
    if (
      decision.allowed ||
      shards.count === 1 ||
      attempt.id !== undefined ||
      (decision.source !== 'store' && decision.source !== 'deny-cache')
    ) {
      return finish(attempt.key, decision);
    }
    const second = await decideShard(attempt, shards.other(first));
    return finish(attempt.key, second.allowed || second.retryAfterMs < decision.retryAfterMs ? second : decision);
  };
}
