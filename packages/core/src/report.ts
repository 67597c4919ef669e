// How the adapter kit reports an event through the limiter that counted the request (its onEvent and
// the sluice:event channel), without a method on the public Limiter.
import { channel } from 'node:diagnostics_channel';
import type { LimiterEvent } from './limiter-options.js';

/** The limiter's own emit, under a symbol: createLimiter sets it. */
export const REPORT = Symbol.for('sluice.report');

const eventChannel = channel('sluice:event');

/** Reports `event` through `limiter`'s emit; a limiter not from createLimiter publishes on sluice:event only. */
export function reportEvent(limiter: object, event: Omit<LimiterEvent, 'prefix'>): void {
  const emit = (limiter as { [REPORT]?: (e: Omit<LimiterEvent, 'prefix'>) => void })[REPORT];
  if (emit !== undefined) emit(event);
  else if (eventChannel.hasSubscribers) eventChannel.publish({ prefix: '', ...event });
}
