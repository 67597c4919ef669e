import { periodAt, periodStarts } from '../policy/calendar-periods.js';
import type { Policy } from '../policy/policy.js';
import type { AdjustStep, AlgorithmStep } from './algorithm.js';

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
/** The period counted in and its count: the stored one when a clock stepped back into it. */
function current(state: CalendarState | undefined, now: number, p: Policy): CalendarState & { same: boolean } {
  const [start, end] = periodAt(periodStarts(p.period ?? 'day', p.timeZone ?? 'UTC', now).starts, now);
  if (state && state.start >= start) return { ...state, same: true };
  return { start, end, count: 0, same: false };
}

export const calendar: AlgorithmStep<CalendarState> = (state, now, p, cost, apply) => {
  const period = current(state, now, p);
  const { start, end } = period;
  let count = period.count;
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

/** Mirrors calendar_adjust: the current period's count moves by delta, never below 0. */
export const calendarAdjust: AdjustStep<CalendarState> = (state, now, p, delta) => {
  const { start, end, count } = current(state, now, p);
  const after = Math.max(0, count + delta);
  if (after === count) return undefined;
  if (after === 0) return null;
  return { state: { start, end, count: after }, ttlMs: Math.ceil(Math.max(1, Math.ceil((end - now) * 1000)) / 1000) };
};
