// Events and the diagnostics channels, each channel made here only: sluice:event (every LimiterEvent, and the
// shedders' events) and sluice:decision (every decision). A limiter's events also go to its onEvent.
import { channel } from 'node:diagnostics_channel';
import type { Decision } from './decision.js';

/** Something worth a log line or a metric. */
export interface LimiterEvent {
  /** 'settle-error': an adapter's settle (or its refund) failed after a response; the response was not touched. */
  /**
   * 'forwarded-untrusted': once per middleware, a request carried X-Forwarded-For while the framework does not
   * trust proxies (the default key is then the proxy's address); `error.message` names the fix.
   */
  /**
   * 'rule-change': a process' copy of the rules changed (createRules; `version`, `rules` the count); 'rule-error':
   * a refresh of the rules failed (the last known rules stay in force) or a ban could not be counted or written.
   */
  /**
   * 'lease-granted': the home granted this region `tokens` of `key`'s global bucket; 'lease-returned': a lease
   * that went quiet gave `tokens` back; 'home-unreachable': the home did not answer an ask (`error`): the
   * region spends what it holds, then its static share, until the home answers (createLimiter's `regions`).
   */
  type:
    | 'store-error'
    | 'breaker-open'
    | 'breaker-close'
    | 'fallback'
    | 'fail-open'
    | 'fail-closed'
    | 'denied'
    | 'shadow-denied'
    | 'settle-error'
    | 'rule-change'
    | 'rule-error'
    | 'forwarded-untrusted'
    | 'lease-granted'
    | 'lease-returned'
    | 'home-unreachable';
  /** The limiter's key namespace (its `prefix`): for a breaker event, the prefix of the limiter whose onEvent hears it (on the channel sluice:event, the first of `prefixes`). */
  prefix: string;
  /** breaker-open and breaker-close: the prefixes of every limiter on the breaker, which is shared by the limiters on one store (announced once per change). */
  prefixes?: string[];
  /** The caller's key, when the event is about one request. */
  key?: string;
  error?: Error;
  /** ms the store call took (store-error), or how long the breaker was open (breaker-close). */
  latencyMs?: number;
  decision?: Decision;
  /** lease-granted, lease-returned and home-unreachable: this region's name. */
  region?: string;
  /** lease-granted and lease-returned: the tokens granted, or given back. */
  tokens?: number;
  /** rule-change: the version of the rules now in force in this process, and how many there are. */
  version?: number;
  rules?: number;
}

/** Every LimiterEvent (and the shedders' events, shed/shedder.ts), as the event itself. */
export const eventChannel = channel('sluice:event');

/** Every decision, as { prefix, key, decision, durationMs }; nothing is built while no one subscribes. */
export const decisionChannel = channel('sluice:decision');

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

/**
 * A limiter's own emit, under a symbol (createLimiter sets it): how the adapter kit reports an event through
 * the limiter that counted the request (its onEvent and sluice:event) without a method on the public Limiter.
 */
export const REPORT = Symbol.for('sluice.report');

/** Reports `event` through `limiter`'s emit; a limiter not from createLimiter publishes on sluice:event only. */
export function reportEvent(limiter: object, event: Omit<LimiterEvent, 'prefix'>): void {
  const emit = (limiter as { [REPORT]?: (e: Omit<LimiterEvent, 'prefix'>) => void })[REPORT];
  if (emit !== undefined) emit(event);
  else if (eventChannel.hasSubscribers) eventChannel.publish({ prefix: '', ...event });
}
