// The fail mode: the decision when the store cannot answer (an error, a timeout, the breaker open).
import type { Attempt } from './attempt.js';
import { type Decision, toDecision, uncountedDecision } from './decision.js';
import { isConcurrent, type Policy } from './policy/policy.js';
import { longestWindow, type PolicySet } from './policy-set.js';
import type { Store, StoreRequest } from './store/contract.js';
import { fallbackTag, requestKeys } from './store/keys.js';

/** What the limiter does when its store fails or times out. */
export type FailMode = 'open' | 'closed';

/** What answers when the store cannot: a consume or peek's decision, and an adjustment's. */
export interface FailModeOf {
  (attempt: Attempt): Promise<Decision>;
  /** An adjustment of `tag`'s rate policies `ps` by `delta`: 'closed' moves the local fallback's count, 'open' knows none. */
  adjust(tag: string, ps: readonly Policy[], set: PolicySet, delta: number): Promise<Decision>;
}

/** ms a 'fail-closed' refusal asks the client to wait when no breaker says when the store is asked again. */
const RETRY_MS = 1000;

/**
 * 'open': allowed, with no count known (source 'fail-open'). 'closed': the local fallback decides (source
 * 'fallback'): the limiter's `fallback` when given, else the attempt's own policies (a call's plan).
 * 'refuse' (failMode 'closed' with `fallback: false`): refused, with no count known (source 'fail-closed'),
 * for `retryIn()` ms (the breaker's next probe), else a second.
 */
export function createFailMode(
  mode: FailMode | 'refuse',
  prefix: string,
  local: Store | undefined,
  emit: (type: 'fail-open' | 'fallback' | 'fail-closed', key: string) => void,
  retryIn: () => number | undefined,
): FailModeOf {
  const keysOf = (tag: string, ps: readonly Policy[]) => requestKeys(prefix, tag, ps);
  const refused = (ps: readonly Policy[]) => uncountedDecision(ps, 'fail-closed', Math.max(1, Math.ceil(retryIn() ?? RETRY_MS)));
  async function adjust(tag: string, ps: readonly Policy[], set: PolicySet, delta: number): Promise<Decision> {
    if (mode === 'refuse') return refused(ps);
    if (mode === 'open' || local === undefined) return uncountedDecision(ps, 'fail-open');
    const fps = set.fallback.filter((p) => !isConcurrent(p));
    if (fps.length === 0) return uncountedDecision(ps, 'fail-open');
    const reply = await local.decide({ keys: keysOf(fallbackTag(tag), fps), policies: fps, cost: 1, peek: false, delta });
    return toDecision(fps, reply, 'fallback');
  }
  if (mode !== 'closed') {
    const source = mode === 'open' ? 'fail-open' : 'fail-closed';
    const decide = mode === 'open' ? (ps: readonly Policy[]) => uncountedDecision(ps, 'fail-open') : refused;
    const uncounted = (attempt: Attempt) => {
      emit(source, attempt.key);
      return Promise.resolve(decide(attempt.set.policies));
    };
    return Object.assign(uncounted, { adjust });
  }
  const closed = async (attempt: Attempt) => {
    const { fallback } = attempt.set;
    const tag = fallbackTag(attempt.tag);
    // The local tier counts slots and ids as the store does, under the fallback tag.
    const id = attempt.peek ? undefined : attempt.id;
    const keys = requestKeys(prefix, tag, fallback, id);
    const request: StoreRequest = { keys, policies: fallback, cost: attempt.cost, peek: attempt.peek };
    if (!attempt.peek && fallback.some(isConcurrent)) request.slot = attempt.slot;
    if (id !== undefined) request.idTtlMs = longestWindow(fallback);
    const reply = await (local as Store).decide(request);
    emit('fallback', attempt.key);
    return toDecision(fallback, reply, 'fallback');
  };
  return Object.assign(closed, { adjust });
}
