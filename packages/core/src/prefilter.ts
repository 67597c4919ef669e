// The prefilter: a local per-process limit in front of the store that sheds a flood before it reaches it.
import type { Attempt } from './attempt.js';
import { type Decision, toDecision } from './decision.js';
import type { Policy } from './policy/policy.js';
import type { Store } from './store/contract.js';
import { storeKey } from './store/keys.js';

/** The prefilter's denial for an attempt, or undefined when it passes on to the store. */
export function createPrefilter(policy: Policy, prefix: string, local: Store): (attempt: Attempt) => Promise<Decision | undefined> {
  const policies = [policy];
  return async (attempt) => {
    const keys = [storeKey(prefix, attempt.tag, policy.id)];
    const reply = await local.decide({ keys, policies, cost: attempt.cost, peek: false });
    return reply.allowed ? undefined : toDecision(policies, reply, 'prefilter');
  };
}
