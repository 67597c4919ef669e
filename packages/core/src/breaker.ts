/** A circuit breaker: after `failures` failures in a row it opens for `cooldownMs`, then lets one probe through. */
export interface Breaker {
  /** May a call go to the store now? While half-open, only the probe may. */
  allow(now: number): boolean;
  success(now: number): void;
  failure(now: number, error: Error): void;
}

export function createBreaker(
  failures: number,
  cooldownMs: number,
  onChange: (open: boolean, error: Error | undefined, openForMs: number) => void,
): Breaker {
  let consecutive = 0;
  let openedAt = 0;
  let openUntil = 0; // 0 while closed
  let probing = false;
  return {
    allow(now) {
      if (openUntil === 0) return true;
      if (now < openUntil || probing) return false;
      probing = true;
      return true;
    },
    success(now) {
      consecutive = 0;
      if (openUntil === 0) return;
      openUntil = 0;
      probing = false;
      onChange(false, undefined, now - openedAt);
    },
    failure(now, error) {
      consecutive++;
      // Calls that were in flight when it opened fail late; only a failed probe re-opens it.
      if (openUntil === 0 ? consecutive < failures : !probing) return;
      if (openUntil === 0) {
        openedAt = now;
        onChange(true, error, 0);
      }
      openUntil = now + cooldownMs;
      probing = false;
    },
  };
}

type BreakerListener = (open: boolean, error: Error | undefined, openForMs: number) => void;
const shared = new WeakMap<object, Map<string, { breaker: Breaker; listeners: Set<BreakerListener> }>>();

/**
 * The breaker of `store` for these settings, shared by every limiter on that store: a route's limiter
 * stacked under an app's learns of an outage from the app's failures instead of waiting out its own
 * timeouts. Each limiter hears open and close through `listener` until it calls `release`.
 */
export function sharedBreaker(
  store: object,
  failures: number,
  cooldownMs: number,
  listener: BreakerListener,
): { breaker: Breaker; release: () => void } {
  let byStore = shared.get(store);
  if (byStore === undefined) {
    byStore = new Map();
    shared.set(store, byStore);
  }
  const settings = `${failures}/${cooldownMs}`;
  let entry = byStore.get(settings);
  if (entry === undefined) {
    const listeners = new Set<BreakerListener>();
    const breaker = createBreaker(failures, cooldownMs, (open, error, ms) => {
      for (const l of listeners) l(open, error, ms);
    });
    entry = { breaker, listeners };
    byStore.set(settings, entry);
  }
  const { breaker, listeners } = entry;
  listeners.add(listener);
  return { breaker, release: () => listeners.delete(listener) };
}
