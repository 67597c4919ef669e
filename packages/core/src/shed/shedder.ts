// createShedder: an adaptive concurrency limit per process, with priorities, that sheds load before the
// service collapses (shared/DESIGN.md, "Protecting the service itself"). No store, no framework.
import { performance } from 'node:perf_hooks';
import { type Duration, parseDuration, parseMaxWait } from '../duration.js';
import { badOption, SluiceError } from '../errors.js';
import { eventChannel } from '../events.js';
import { checkNames, isFunction, isPositiveInteger, resolve, spec } from '../options.js';
import { AdaptiveLimit, loopDelayReader, WINDOW_MS } from './adaptive-limit.js';

/** Who may use which part of the limit: critical all of it, normal all but the critical reserve, sheddable the rest. */
export type Priority = 'critical' | 'normal' | 'sheddable';

/** A slot held by one request: release() gives it back; calling it again does nothing. */
export interface Permit {
  release(): void;
}

export interface Shedder {
  /** Takes a slot now, or answers undefined now when `priority` may not have one (shed). Default 'normal'. */
  acquire(priority?: Priority): Permit | undefined;
  /** The current concurrency limit, an integer in [limit.min, limit.max]. */
  readonly limit: number;
  /** Slots held now. */
  readonly inFlight: number;
  /** The longest wait the `maxWait` option gives any class, in ms, for adapters (acquire itself never waits). */
  readonly maxWaitMs: number;
  /** The `name` option: this shedder's label in its events and metrics. */
  readonly name: string;
  /** Stops sampling the event loop's delay (idempotent); the limit stays where it is. */
  close(): void;
}

/** Options of createShedder(). */
export interface ShedderOptions {
  /** The concurrency limit's start and bounds. Default { initial: 20, min: 1, max: 1000 }. */
  limit?: { initial?: number; min?: number; max?: number };
  /** Event-loop delay (max over the last window) above which the limit falls. Default '100ms'. */
  targetDelay?: Duration;
  /** Fractions of the limit only higher classes may use: the top `critical` share, then `normal`. Default { critical: 0.5, normal: 0.1 }. */
  reserve?: { critical?: number; normal?: number };
  /**
   * How long an adapter lets a request wait for a slot before shedding it: one duration for every class, or
   * one per class (a class not named does not wait), e.g. { critical: '50ms' }. Default 0.
   */
  maxWait?: Duration | { critical?: Duration; normal?: Duration; sheddable?: Duration };
  /** Names this shedder in its events and in the metrics' `shedder` label, when a process has several. Default 'default'. */
  name?: string;
  /** Test hook: the ms clock. Default performance.now. */
  clock?: () => number;
  /** Test hook: the event loop's delay in ms since the last call (max). Default: monitorEventLoopDelay's max, reset each window. */
  eventLoopDelay?: () => number;
}

/** What a shedder publishes on sluice:event (only while someone subscribes). */
export type ShedderEvent =
  | { type: 'shed'; name: string; priority: Priority; limit: number; inFlight: number }
  /** Once per window of adaptation, and when the last slot is given back. */
  | { type: 'concurrency'; name: string; limit: number; inFlight: number; previousLimit: number };

// A class yields to a higher one refused within this long (one window): the slot it would take is one the higher
// class had no room for.
const YIELD_MS = WINDOW_MS;
const PRIORITIES: readonly Priority[] = ['critical', 'normal', 'sheddable'];
/** What its waiting room (waiting-room.ts) sees of a shedder: who to tell when slots come back, when a class could take one, and how long it may wait. */
interface Internals {
  freed: Set<() => void>;
  /** ms until the class could take a slot, on one reading of the clock: 0 now, Infinity until one comes back, else until its yield ends. */
  blockedFor(priority: Priority): number;
  waitMs(priority: Priority): number;
}
const internals = new WeakMap<Shedder, Internals>();

const fraction = (n: string) => (v: unknown) => (typeof v === 'number' && v >= 0 && v <= 1 ? v : badOption(n, 'a number from 0 to 1', v));
const count = (n: string) => (v: unknown) => isPositiveInteger(v, n);
const object = (v: unknown, n: string): object => (v !== null && typeof v === 'object' ? v : badOption(n, 'an object', v));
const LIMIT = {
  initial: spec(count('limit.initial'), 20),
  min: spec(count('limit.min'), 1),
  max: spec(count('limit.max'), 1000),
};
const RESERVE = {
  critical: spec(fraction('reserve.critical'), 0.5),
  normal: spec(fraction('reserve.normal'), 0.1),
};
const wait = (n: string) => (v: unknown) => parseMaxWait(v, n);
const WAITS = {
  critical: spec(wait('maxWait.critical'), 0),
  normal: spec(wait('maxWait.normal'), 0),
  sheddable: spec(wait('maxWait.sheddable'), 0),
};
/** maxWait as ms per class: one duration for all, or an object naming some classes (the others 0). */
function maxWaits(v: unknown, n: string): Record<Priority, number> {
  if (v === null || typeof v !== 'object') {
    const ms = wait(n)(v);
    return { critical: ms, normal: ms, sheddable: ms };
  }
  checkNames(v, PRIORITIES, 'a class', `${n}.`);
  return resolve(WAITS, v);
}
/** createShedder's options, each default once (ShedderOptions' doc comments end with the same). */
const OPTIONS = {
  limit: spec(object, {}),
  targetDelay: spec(parseDuration, 100),
  reserve: spec(object, {}),
  maxWait: spec(maxWaits, { critical: 0, normal: 0, sheddable: 0 }),
  name: spec((v, n) => (typeof v === 'string' && v !== '' ? v : badOption(n, 'a non-empty string', v)), 'default'),
  clock: spec<() => number>(isFunction),
  eventLoopDelay: spec<() => number>(isFunction),
};

function resolveShedder(options: ShedderOptions) {
  const o = resolve(OPTIONS, options);
  checkNames(options, Object.keys(OPTIONS), 'a createShedder option');
  checkNames(o.limit, Object.keys(LIMIT), 'a limit option', 'limit.');
  checkNames(o.reserve, Object.keys(RESERVE), 'a reserve option', 'reserve.');
  const limit = resolve(LIMIT, o.limit);
  if (limit.min > limit.max) badOption('limit.min', `at most limit.max (${limit.max})`, limit.min);
  if (limit.initial < limit.min || limit.initial > limit.max)
    badOption('limit.initial', `from limit.min to limit.max (${limit.min}-${limit.max})`, limit.initial);
  const reserve = resolve(RESERVE, o.reserve);
  if (reserve.critical + reserve.normal > 1) badOption('reserve', 'fractions that sum to at most 1', reserve.critical + reserve.normal);
  return { ...o, limit, reserve };
}

/**
 * An adaptive concurrency limit for this process, with priorities. Each window of 100 ms of traffic it
 * applies Netflix concurrency-limits' Gradient2 rule: gradient = clamp(1.5 x floor / latency, 0.5, 1),
 * limit = limit x gradient + 4, smoothed by 0.2, and not grown while under half the limit is used and nothing
 * was shed; `floor` is the recent minimum of window latencies (rising by 1% of the gap per window). The event
 * loop's delay (its max over the window) is the second signal: above `targetDelay` the limit falls at once by
 * targetDelay / delay (at most by half). release() gives a slot back at once, but the rule counts the requests
 * handled in one turn of the event loop as concurrent (latencies from the turn's start, a peak with the slots given
 * back in the turn): in Node they wait for each other. For 100 ms after a critical request is refused, normal
 * and sheddable ones are refused too (after a normal one, sheddable ones): a slot a lower class took would be one
 * the higher class had no room for.
 * Defaults: limit { initial: 20, min: 1, max: 1000 }, targetDelay '100ms', reserve { critical: 0.5, normal: 0.1 }, maxWait 0, name 'default'.
 * @example
 * const shedder = createShedder({ reserve: { critical: 0.2 } });
 * const permit = shedder.acquire('critical'); // undefined: answer 503
 * permit?.release();
 */
export function createShedder(options: ShedderOptions = {}): Shedder {
  if (options === null || typeof options !== 'object') badOption('options', 'an object', options);
  const o = resolveShedder(options);
  const clock = o.clock ?? (() => performance.now());
  const loop = o.eventLoopDelay === undefined ? loopDelayReader() : { read: o.eventLoopDelay, close() {} };
  const rule = new AdaptiveLimit(o.limit, o.targetDelay, loop.read, clock());
  const share = { critical: 1, normal: 1 - o.reserve.critical, sheddable: 1 - o.reserve.critical - o.reserve.normal };
  const ceiling = (p: Priority) => Math.max(share[p] > 0 ? 1 : 0, Math.floor(rule.limit * share[p] + 1e-9));
  // When a class was last refused: while a higher class has no room, a lower one takes no slot (it yields).
  const refusedAt = { critical: Number.NEGATIVE_INFINITY, normal: Number.NEGATIVE_INFINITY };
  /** ms until class `p` could take a slot: 0 now, Infinity while none is free for it, else until it stops yielding. */
  const blockedFor = (p: Priority, now: number) =>
    inFlight >= ceiling(p)
      ? Number.POSITIVE_INFINITY
      : p === 'critical'
        ? 0
        : Math.max(0, refusedAt.critical + YIELD_MS - now, p === 'sheddable' ? refusedAt.normal + YIELD_MS - now : 0);
  const freed = new Set<() => void>();
  let inFlight = 0;
  // Node runs the requests one turn of the event loop read one after another: a request's latency counts from
  // the turn's first acquire, so that the wait behind those before it (Node's own queue) is in its sample.
  let turnStart = -1;
  // Slots given back since the turn's first acquire: admission does not count them, the rule's peak does (the
  // requests a turn runs one after another wait for each other, as concurrent as Node lets them be).
  let givenBack = 0;
  let adaptScheduled = false;
  const turnEnded = () => {
    turnStart = -1;
  };
  const concurrency = (): ShedderEvent => ({
    type: 'concurrency',
    name: o.name,
    limit: rule.limit,
    inFlight,
    previousLimit: rule.previous,
  });
  const tick = (now: number) => {
    if (rule.adapt(now, inFlight + givenBack) && eventChannel.hasSubscribers) eventChannel.publish(concurrency());
  };
  // Once the turn that gave slots back ends, the rule adapts, and the waiting room looks again (the limit may be larger).
  function endOfTurn(): void {
    adaptScheduled = false;
    tick(clock());
    for (const listener of freed) listener();
    if (inFlight === 0 && eventChannel.hasSubscribers) eventChannel.publish(concurrency());
  }
  const shedder: Shedder = {
    acquire(priority = 'normal') {
      if (!PRIORITIES.includes(priority))
        throw new SluiceError('ERR_SLUICE_PRIORITY', "priority must be 'critical', 'normal' or 'sheddable'");
      const now = clock();
      if (turnStart < 0) {
        turnStart = now;
        givenBack = 0;
        setImmediate(turnEnded);
      }
      tick(now);
      if (blockedFor(priority, now) > 0) {
        if (priority !== 'sheddable') refusedAt[priority] = now;
        rule.shed = true;
        if (eventChannel.hasSubscribers) eventChannel.publish({ type: 'shed', name: o.name, priority, limit: rule.limit, inFlight });
        return undefined;
      }
      if (++inFlight + givenBack > rule.peak) rule.peak = inFlight + givenBack;
      const start = turnStart;
      let held = true;
      return {
        release() {
          if (!held) return;
          held = false;
          inFlight--;
          rule.sample(clock() - start); // the request's latency (Gradient2's rtt), from the start of its turn
          givenBack++;
          if (!adaptScheduled) {
            adaptScheduled = true;
            setImmediate(endOfTurn);
          }
          for (const listener of freed) listener(); // to a request waiting for a slot (in its waiting room), before a later one
        },
      };
    },
    get limit() {
      return rule.limit;
    },
    get inFlight() {
      return inFlight;
    },
    maxWaitMs: Math.max(o.maxWait.critical, o.maxWait.normal, o.maxWait.sheddable),
    name: o.name,
    close: () => loop.close(), // idempotent: disabling a disabled histogram does nothing
  };
  internals.set(shedder, {
    freed,
    blockedFor: (p) => blockedFor(p, clock()),
    waitMs: (p) => o.maxWait[p],
  });
  return shedder;
}

/** For its waiting room: a shedder's listeners for given-back slots, and whether a class would get a slot now. */
export function shedderInternals(shedder: Shedder): Internals {
  const found = internals.get(shedder);
  if (found === undefined) badOption('shedder', 'a Shedder from createShedder()', shedder);
  return found;
}
