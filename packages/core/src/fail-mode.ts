// The fail mode: the decision when the store cannot answer (an error, a timeout, the breaker open).
import type { Attempt } from './attempt.js';
import { type Decision, failOpenDecision, toDecision } from './decision.js';
import { fallbackTag, idKey, storeKey } from './keys.js';
import type { FailMode } from './limiter-options.js';
import { isConcurrent } from './policy.js';
import { longestWindow } from './policy-set.js';
import type { Store, StoreRequest } from './store.js';

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
    const request: StoreRequest = { keys, policies: fallback, cost: attempt.cost, peek: attempt.peek };
    // The local tier counts slots and ids as the store does, under the fallback tag.
    if (!attempt.peek && fallback.some(isConcurrent)) request.slot = attempt.slot;
    if (attempt.id !== undefined && !attempt.peek) {
      keys.push(idKey(prefix, tag, attempt.id));
      request.idTtlMs = longestWindow(fallback);
    }
    const reply = await (local as Store).decide(request);
    emit('fallback', attempt.key);
    return toDecision(fallback, reply, 'fallback');
  };
}
