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
/** The period counted in: the stored one when a clock stepped back into it (its count is then the key's, else 0). */
function current(
  state: CalendarState | undefined,
  now: number,
  p: Policy,
): { start: number; end: number; held: CalendarState | undefined } {
  const [start, end] = periodAt(periodStarts(p.period ?? 'day', p.timeZone ?? 'UTC', now).starts, now);
  if (state && state.start >= start) return { start: state.start, end: state.end, held: state };
  return { start, end, held: undefined };
}

/** The key's state: the stored one updated in place when there is one. */
function counted(state: CalendarState | undefined, start: number, end: number, count: number): CalendarState {
  if (state === undefined) return { start, end, count };
  state.start = start;
  state.end = end;
  state.count = count;
  return state;
}

export const calendar: AlgorithmStep<CalendarState> = (state, now, p, cost, apply) => {
  const { start, end, held } = current(state, now, p);
  let count = held?.count ?? 0;
  const endsUs = Math.max(1, Math.ceil((end - now) * 1000));
  const ends = Math.ceil(endsUs / 1000);
  const ok = count + cost <= p.limit;
  let next: { state: CalendarState; ttlMs: number } | undefined;
  if (ok && apply) {
    count = count + cost;
    next = { state: counted(state, start, end, count), ttlMs: ends };
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
  const { start, end, held } = current(state, now, p);
  const count = held?.count ?? 0;
  const after = Math.max(0, count + delta);
  if (after === count) return undefined;
  if (after === 0) return null;
  return { state: counted(state, start, end, after), ttlMs: Math.ceil(Math.max(1, Math.ceil((end - now) * 1000)) / 1000) };
};
