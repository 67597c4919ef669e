// The last stage: shadow mode and the denied event, once per decision that goes to the caller.
import type { Decision } from './decision.js';
import type { LimiterEvent } from './events.js';

/** A decision as the caller gets it: a denial is reported ('denied'), or in shadow mode let through ('shadow-denied'). */
export function createFinish(
  shadow: boolean,
  emit: (event: Omit<LimiterEvent, 'prefix'>) => void,
): (key: string, decision: Decision) => Decision {
  return (key, decision) => {
    if (decision.allowed) return decision;
    if (!shadow) {
      emit({ type: 'denied', key, decision });
      return decision;
    }
    emit({ type: 'shadow-denied', key, decision });
    return { ...decision, allowed: true, retryAfterMs: 0, shadowed: true };
  };
}
