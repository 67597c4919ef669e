// The last stage: shadow mode and the denied event, once per decision that goes to the caller.
import type { Decision } from './decision.js';
import type { LimiterEvent } from './events.js';

/** What finishing reads of the limiter: its shadow mode, and where its events go. */
export interface FinishStage {
  readonly shadow: boolean;
  emit(event: Omit<LimiterEvent, 'prefix'>): void;
}

/** A decision as the caller gets it: a denial is reported ('denied'), or in shadow mode let through ('shadow-denied'). */
export function finish(s: FinishStage, key: string, decision: Decision): Decision {
  if (decision.allowed) return decision;
  if (!s.shadow) {
    s.emit({ type: 'denied', key, decision });
    return decision;
  }
  s.emit({ type: 'shadow-denied', key, decision });
  return { ...decision, allowed: true, retryAfterMs: 0, shadowed: true };
}
