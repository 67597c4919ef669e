// Calendar periods in an IANA time zone: when a day (local midnight), an ISO week (Monday) or a month
// (the 1st) starts, DST and month lengths included. Lua has no time-zone database, so this side computes
// the period starts around its own clock and sends them; the script (lua/calendar.lua) picks the one
// that holds the server's now. The memory store's twin (calendar.ts) picks the same way.
import { badOption } from '../errors.js';

/** A calendar period. */
export type CalendarPeriod = 'day' | 'week' | 'month';

export const CALENDAR_PERIODS: readonly CalendarPeriod[] = ['day', 'week', 'month'];

/** Nominal lengths, for what has no clock to ask (a fail-open decision's RateLimit-Policy w). */
export const NOMINAL_MS: Readonly<Record<CalendarPeriod, number>> = { day: 86_400_000, week: 604_800_000, month: 2_592_000_000 };

const DAY_MS = 86_400_000;
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-US', { timeZone, year: 'numeric', month: 'numeric', day: 'numeric' });
    formatters.set(timeZone, f);
  }
  return f;
}

/**
 * The zone's canonical name ('utc' -> 'UTC'); throws naming `option` for a zone this runtime does not know.
 * @example canonicalZone('europe/berlin', 'policy.timeZone') // 'Europe/Berlin'
 */
export function canonicalZone(timeZone: unknown, option: string): string {
  if (typeof timeZone !== 'string' || timeZone === '') badOption(option, "an IANA time zone such as 'Europe/Berlin' or 'UTC'", timeZone);
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone }).resolvedOptions().timeZone;
  } catch {
    return badOption(option, "an IANA time zone such as 'Europe/Berlin' or 'UTC'", timeZone);
  }
}

/** The local date of instant `t` in the zone, as days since 1970-01-01. */
function localDay(t: number, timeZone: string): number {
  let y = 0;
  let m = 0;
  let d = 0;
  for (const part of formatter(timeZone).formatToParts(t)) {
    if (part.type === 'year') y = Number(part.value);
    else if (part.type === 'month') m = Number(part.value);
    else if (part.type === 'day') d = Number(part.value);
  }
  return Date.UTC(y, m - 1, d) / DAY_MS;
}

/** The first local day of the period holding local day `day`. */
function periodFirstDay(day: number, period: CalendarPeriod): number {
  if (period === 'day') return day;
  // 1970-01-01 was a Thursday: (day + 3) % 7 is the days since Monday.
  if (period === 'week') return day - ((((day + 3) % 7) + 7) % 7);
  const date = new Date(day * DAY_MS);
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1) / DAY_MS;
}

/** The first local day of the period `n` periods after the one starting on local day `first`. */
function shiftPeriod(first: number, period: CalendarPeriod, n: number): number {
  if (period === 'day') return first + n;
  if (period === 'week') return first + 7 * n;
  const date = new Date(first * DAY_MS);
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + n, 1) / DAY_MS;
}

/**
 * The first instant (epoch ms) whose local date is `day` or later: local midnight, or the first instant
 * after it when DST skips midnight. UTC offsets lie within ±18 h of the date's UTC midnight, and no zone
 * moves its date back at a transition today, so a binary search over that range finds it.
 */
function dayStart(day: number, timeZone: string): number {
  let lo = day * DAY_MS - 18 * 3_600_000; // local date before `day`
  let hi = day * DAY_MS + 18 * 3_600_000; // local date `day` or later
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (localDay(mid, timeZone) >= day) hi = mid;
    else lo = mid;
  }
  return hi;
}

/** The period starts around an instant: the previous, current and next two, ascending. */
export interface PeriodStarts {
  /** Epoch ms: starts of periods p-1, p, p+1, p+2, where p holds the instant they were computed for. */
  readonly starts: readonly number[];
  /** The same, space-separated: the spec the Lua script receives. */
  readonly arg: string;
}

interface Cached extends PeriodStarts {
  /** The instants this entry is for: the period p, [from, until). */
  from: number;
  until: number;
}

/** By period, then zone: no key string to build on every decision. */
const caches: Record<CalendarPeriod, Map<string, Cached>> = { day: new Map(), week: new Map(), month: new Map() };
const CACHE_MAX = 1000;

/**
 * The period starts around instant `t` (epoch ms) for `period` in `timeZone`, from a cache that one
 * lookup serves for the whole period: a few Intl calls once a period, per zone.
 * @example periodStarts('day', 'UTC', Date.UTC(2024, 1, 29, 12)).starts[1] === Date.UTC(2024, 1, 29)
 */
export function periodStarts(period: CalendarPeriod, timeZone: string, t: number): PeriodStarts {
  const cache = caches[period];
  const hit = cache.get(timeZone);
  if (hit !== undefined && t >= hit.from && t < hit.until) return hit;
  // The local date at t can only be the period's if t is past the period's start; check, since a
  // transition may put t's local date a day off what a naive guess says.
  let first = periodFirstDay(localDay(t, timeZone), period);
  let start = dayStart(first, timeZone);
  if (t < start) {
    first = shiftPeriod(first, period, -1);
    start = dayStart(first, timeZone);
  }
  const starts = [dayStart(shiftPeriod(first, period, -1), timeZone), start];
  for (let n = 1; n <= 2; n++) starts.push(dayStart(shiftPeriod(first, period, n), timeZone));
  const entry: Cached = { starts, arg: starts.join(' '), from: start, until: starts[2] as number };
  if (cache.size >= CACHE_MAX) cache.clear();
  cache.set(timeZone, entry);
  return entry;
}

/**
 * The period [start, end) that holds `now` among candidate `starts` (ascending, at least two). Beyond
 * them (a clock more than a period away from the one that computed them) periods go on at the length of
 * the nearest candidate period. lua/calendar.lua's choice, expression by expression.
 */
export function periodAt(starts: readonly number[], now: number): [number, number] {
  const n = starts.length;
  const first = starts[0] as number;
  const last = starts[n - 1] as number;
  if (now < first) {
    const len = (starts[1] as number) - first;
    const start = first - Math.ceil((first - now) / len) * len;
    return [start, start + len];
  }
  if (now >= last) {
    const len = last - (starts[n - 2] as number);
    const start = last + Math.floor((now - last) / len) * len;
    return [start, start + len];
  }
  let i = 0;
  while ((starts[i + 1] as number) <= now) i++;
  return [starts[i] as number, starts[i + 1] as number];
}

/**
 * The length of the period a Redis reply counted in, from the candidate starts sent with it (computed on
 * clock value `t`) and the reply's resetMs (the period's end less the server's now): the candidate
 * period whose end less resetMs lies nearest to `t`. For RateLimit-Policy's w on 23- and 25-hour days.
 */
export function periodLengthAt(period: CalendarPeriod, timeZone: string, t: number, resetMs: number): number {
  const { starts } = periodStarts(period, timeZone, t);
  let best = 0;
  let bestGap = Number.POSITIVE_INFINITY;
  for (let i = 0; i + 1 < starts.length; i++) {
    const gap = Math.abs((starts[i + 1] as number) - resetMs - t);
    if (gap < bestGap) {
      bestGap = gap;
      best = i;
    }
  }
  return (starts[best + 1] as number) - (starts[best] as number);
}

/** The spec window the script gets for a calendar policy: its candidate period starts around `t`. */
export function calendarArg(period: CalendarPeriod, timeZone: string, t: number): string {
  return periodStarts(period, timeZone, t).arg;
}
