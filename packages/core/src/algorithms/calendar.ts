import type { AlgorithmStep } from './algorithm.js';
import { periodAt, periodStarts } from './calendar-periods.js';

/** Mirrors lua/calendar.lua: the period [start, end) counted in, and its count. */
export interface CalendarState {
  start: number;
  end: number;
  count: number;
}

/**
 * A calendar quota: at most `limit` units per day, ISO week or month in the policy's time zone, counted
 * like a fixed window whose bounds are the period's. The period starts come from the same computation
 * the Redis store sends to the script, made here on the memory store's clock.
 */
export const calendar: AlgorithmStep<CalendarState> = (state, now, p, cost, apply) => {
  let [start, end] = periodAt(periodStarts(p.period ?? 'day', p.timeZone ?? 'UTC', now).starts, now);
  let count = 0;
  // A clock that steps back stays in the stored period rather than opening a fresh one.
  if (state && state.start >= start) {
    start = state.start;
    end = state.end;
    count = state.count;
  }
  const endsUs = Math.max(1, Math.ceil((end - now) * 1000));
  const ends = Math.ceil(endsUs / 1000);
  const ok = count + cost <= p.limit;
  let next: { state: CalendarState; ttlMs: number } | undefined;
  if (ok && apply) {
    count = count + cost;
    next = { state: { start, end, count }, ttlMs: ends };
  }
  return {
    ok,
    remaining: Math.max(0, Math.floor(p.limit - count)),
    resetMs: ends,
    retryAfterMs: ok ? 0 : endsUs / 1000,
    next,
    windowMs: end - start,
  };
};
