import { publish, tell } from './events.js';
import type { LimiterEvent } from './limiter-options.js';

/** A circuit breaker: after `failures` failures in a row it opens for `cooldownMs`, then lets one probe through. */
export interface Breaker {
  /** May a call go to the store now? While half-open, only the probe may. */
  allow(now: number): boolean;
  /** A call answered: closes the breaker if it was open, reading `clock` only then (for how long it was). */
  success(clock: () => number): void;
  failure(now: number, error: Error): void;
  /** A call the store could not make yet (its connection was being made): no failure, and a probe's turn passes to the next call. */
  unanswered(): void;
  /** ms until a caller refused now should try again: until the next probe while open, else one cooldown. */
  retryIn(now: number): number;
}

export function createBreaker(
  failures: number,
  cooldownMs: number,
  onChange: (open: boolean, error: Error | undefined, openForMs: number) => void,
): Breaker {
  return new CircuitBreaker(failures, cooldownMs, onChange);
}

/** A class rather than closures: its methods are on every decision's path, whichever limiter asks (bench/limiters.mjs). */
class CircuitBreaker implements Breaker {
  private consecutive = 0;
  private openedAt = 0;
  private openUntil = 0; // 0 while closed
  private probing = false;
  constructor(
    private readonly failures: number,
    private readonly cooldownMs: number,
    private readonly onChange: (open: boolean, error: Error | undefined, openForMs: number) => void,
  ) {}

  allow(now: number): boolean {
    if (this.openUntil === 0) return true;
    if (now < this.openUntil || this.probing) return false;
    this.probing = true;
    return true;
  }

  success(clock: () => number): void {
    this.consecutive = 0;
    if (this.openUntil === 0) return;
    this.openUntil = 0;
    this.probing = false;
    this.onChange(false, undefined, clock() - this.openedAt);
  }

  failure(now: number, error: Error): void {
    this.consecutive++;
    // Calls that were in flight when it opened fail late; only a failed probe re-opens it.
    if (this.openUntil === 0 ? this.consecutive < this.failures : !this.probing) return;
    if (this.openUntil === 0) {
      this.openedAt = now;
      this.onChange(true, error, 0);
    }
    this.openUntil = now + this.cooldownMs;
    this.probing = false;
  }

  unanswered(): void {
    this.probing = false;
  }

  retryIn(now: number): number {
    return this.openUntil > now ? this.openUntil - now : this.cooldownMs;
  }
}

/** A limiter on a shared breaker: the prefix its events name, and its onEvent. */
export interface BreakerMember {
  prefix: string;
  onEvent: ((event: LimiterEvent) => void) | undefined;
}

const shared = new WeakMap<object, Map<string, { breaker: Breaker; members: Set<BreakerMember> }>>();

/**
 * Announces a breaker change once: one event on the channel naming every prefix it affects (`prefix` the
 * first), and once to each distinct onEvent, under the prefix of the first limiter that gave it.
 */
function announce(members: Iterable<BreakerMember>, open: boolean, error: Error | undefined, openForMs: number): void {
  const list = [...members];
  if (list.length === 0) return;
  const prefixes = [...new Set(list.map((m) => m.prefix))];
  const event = (prefix: string): LimiterEvent =>
    open ? { type: 'breaker-open', prefix, prefixes, error } : { type: 'breaker-close', prefix, prefixes, latencyMs: openForMs };
  publish(event(prefixes[0] as string), []);
  const hooks = new Map<BreakerMember['onEvent'], string>();
  for (const m of list) if (m.onEvent !== undefined && !hooks.has(m.onEvent)) hooks.set(m.onEvent, m.prefix);
  for (const [hook, prefix] of hooks) tell(hook, event(prefix));
}

/** A breaker of a limiter's own (a test clock), announcing to it alone. */
export function ownBreaker(failures: number, cooldownMs: number, member: BreakerMember): Breaker {
  return createBreaker(failures, cooldownMs, (open, error, ms) => announce([member], open, error, ms));
}

/**
 * The breaker of `store` for these settings, shared by every limiter on that store: a route's limiter
 * stacked under an app's learns of an outage from the app's failures instead of waiting out its own
 * timeouts. A change is announced once, naming the prefixes of the limiters on it, until each calls `release`.
 */
export function sharedBreaker(
  store: object,
  failures: number,
  cooldownMs: number,
  member: BreakerMember,
): { breaker: Breaker; release: () => void } {
  let byStore = shared.get(store);
  if (byStore === undefined) {
    byStore = new Map();
    shared.set(store, byStore);
  }
  const settings = `${failures}/${cooldownMs}`;
  let entry = byStore.get(settings);
  if (entry === undefined) {
    const members = new Set<BreakerMember>();
    const breaker = createBreaker(failures, cooldownMs, (open, error, ms) => announce(members, open, error, ms));
    entry = { breaker, members };
    byStore.set(settings, entry);
  }
  const { breaker, members } = entry;
  members.add(member);
  return { breaker, release: () => members.delete(member) };
}
