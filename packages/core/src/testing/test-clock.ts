// testClock(): the clock a test gives both stores, which then decide on it (and so do the limiters on them).
import { type Duration, parseMaxWait } from '../duration.js';
import { badOption } from '../errors.js';

/** A clock a test moves: callable for its time in epoch ms, as a store's `clock` is. */
export interface TestClock {
  /** The clock's time, epoch ms. */
  (): number;
  /** Moves the clock on by `duration` (ms, or '1s', '1h', '1d'; 0 leaves it), and returns its time. Never back. */
  advance(duration: Duration): number;
  /** Sets the clock to `ms` (epoch ms, or a Date), forward or back, and returns its time. */
  set(ms: number | Date): number;
}

/**
 * A clock for tests: it starts at Date.now() and moves only when told (`advance`, `set`); no global clock
 * moves with it. Give it to a store, `memoryStore({ clock })` or `redisStore({ client, clock })`: the
 * store decides on it (the Redis scripts instead of the server's TIME), and so do the limiters on that store.
 * @example
 * const clock = testClock();
 * const limiter = createLimiter({ policy: '100/1h', store: memoryStore({ clock }) });
 * clock.advance('1h'); // a window ends without a wait
 */
export function testClock(): TestClock {
  let now = Date.now();
  const clock = (() => now) as TestClock;
  clock.advance = (duration) => {
    now += parseMaxWait(duration, 'clock.advance');
    return now;
  };
  clock.set = (ms) => {
    const at = ms instanceof Date ? ms.getTime() : ms;
    if (typeof at !== 'number' || !Number.isFinite(at) || at < 0)
      badOption('clock.set', 'epoch ms (a finite number >= 0) or a valid Date', ms);
    now = at;
    return now;
  };
  return clock;
}
