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
