// The fail mode: the decision when the store cannot answer (an error, a timeout, the breaker open).
import type { Attempt } from './attempt.js';
import { type Decision, failOpenDecision, toDecision } from './decision.js';
import { fallbackTag, idKey, storeKey } from './keys.js';
import type { FailMode } from './limiter-options.js';
import { isConcurrent, type Policy } from './policy.js';
import type { Store, StoreRequest } from './store.js';

/** How long an id's record lasts: the longest window of the rate policies (at least 1 ms). */
export function longestWindow(policies: readonly Policy[]): number {
  let most = 1;
  for (const p of policies) if (!isConcurrent(p) && p.windowMs > most) most = p.windowMs;
  return most;
}

/** 'open': allowed, with no count known (source 'fail-open'). 'closed': the local fallback decides (source 'fallback'). */
export function createFailMode(
  mode: FailMode,
  prefix: string,
  policies: readonly Policy[],
  fallback: readonly Policy[],
  local: Store | undefined,
  emit: (type: 'fail-open' | 'fallback', key: string) => void,
): (attempt: Attempt) => Promise<Decision> {
  if (mode === 'open') {
    return (attempt) => {
      emit('fail-open', attempt.key);
      return Promise.resolve(failOpenDecision(policies));
    };
  }
  const slots = fallback.some(isConcurrent);
  const idTtlMs = longestWindow(fallback);
  return async (attempt) => {
    const tag = fallbackTag(attempt.tag);
    const keys = fallback.map((p) => storeKey(prefix, tag, p.id));
    const request: StoreRequest = { keys, policies: fallback, cost: attempt.cost, peek: attempt.peek };
    // The local tier counts slots and ids as the store does, under the fallback tag.
    if (slots && !attempt.peek) request.slot = attempt.slot;
    if (attempt.id !== undefined && !attempt.peek) {
      keys.push(idKey(prefix, tag, attempt.id));
      request.idTtlMs = idTtlMs;
    }
    const reply = await (local as Store).decide(request);
    emit('fallback', attempt.key);
    return toDecision(fallback, reply, 'fallback');
  };
}
