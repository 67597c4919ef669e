// Limiter events: to the limiter's onEvent and to the diagnostics channel sluice:event.
import { channel } from 'node:diagnostics_channel';
import type { LimiterEvent } from './limiter-options.js';

/** Every LimiterEvent, as the event itself. */
const eventChannel = channel('sluice:event');

/** True when someone hears events: a limiter builds none otherwise. */
export const eventsHeard = (onEvent: unknown): boolean => onEvent !== undefined || eventChannel.hasSubscribers;

/** Publishes `event` on sluice:event and gives it to each hook; an exception a hook throws is ignored. */
export function publish(event: LimiterEvent, hooks: Iterable<((event: LimiterEvent) => void) | undefined>): void {
  if (eventChannel.hasSubscribers) eventChannel.publish(event);
  for (const hook of hooks) tell(hook, event);
}

/** Gives `event` to one hook only (not to the channel); an exception it throws is ignored. */
export function tell(hook: ((event: LimiterEvent) => void) | undefined, event: LimiterEvent): void {
  try {
    hook?.(event);
  } catch {
    // A logging hook must not turn a decision into an error.
  }
}
