// The fail mode: the decision when the store cannot answer (an error, a timeout, the breaker open).
import type { Attempt } from './attempt.js';
import { type Decision, failOpenDecision, toDecision } from './decision.js';
import { fallbackTag, storeKey } from './keys.js';
import type { FailMode } from './limiter-options.js';
import type { Store } from './store.js';

/**
 * 'open': allowed, with no count known (source 'fail-open'). 'closed': the local fallback decides (source
 * 'fallback'): the limiter's `fallback` when given, else the attempt's own policies (a call's plan).
 */
export function createFailMode(
  mode: FailMode,
  prefix: string,
  local: Store | undefined,
  emit: (type: 'fail-open' | 'fallback', key: string) => void,
): (attempt: Attempt) => Promise<Decision> {
  if (mode === 'open') {
    return (attempt) => {
      emit('fail-open', attempt.key);
      return Promise.resolve(failOpenDecision(attempt.set.policies));
    };
  }
  return async (attempt) => {
    const { fallback } = attempt.set;
    const tag = fallbackTag(attempt.tag);
    const keys = fallback.map((p) => storeKey(prefix, tag, p.id));
    const reply = await (local as Store).decide({ keys, policies: fallback, cost: attempt.cost, peek: attempt.peek });
    emit('fallback', attempt.key);
    return toDecision(fallback, reply, 'fallback');
  };
}
