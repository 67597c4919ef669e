// The prefilter: a local per-process limit in front of the store that sheds a flood before it reaches it.
import type { Attempt } from './attempt.js';
import { type Decision, toDecision } from './decision.js';
import type { Policy } from './policy/policy.js';
import type { Store } from './store/contract.js';
import { storeKey } from './store/keys.js';

/** A limiter's prefilter: `policy` counted in `local` under `prefix`. */
export class Prefilter {
  private readonly policies: readonly Policy[];
  constructor(
    private readonly policy: Policy,
    private readonly prefix: string,
    private readonly local: Store,
  ) {
    this.policies = [policy];
  }

  /** The prefilter's denial for an attempt, or undefined when it passes on to the store. */
  async denial(attempt: Attempt): Promise<Decision | undefined> {
    const { policies } = this;
    const keys = [storeKey(this.prefix, attempt.tag, this.policy.id)];
    const reply = await this.local.decide({ keys, policies, cost: attempt.cost, peek: false });
    return reply.allowed ? undefined : toDecision(policies, reply, 'prefilter');
  }
}
