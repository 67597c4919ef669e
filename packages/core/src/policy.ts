import { CALENDAR_PERIODS, type CalendarPeriod, canonicalZone, NOMINAL_MS } from './algorithms/calendar-periods.js';
import type { Algorithm } from './algorithms/index.js';
import { type Duration, formatDuration, parseDuration } from './duration.js';
import { badOption } from './errors.js';
import { ALGORITHM_CODES } from './lua.generated.js';
import { checkNames, nearest } from './options.js';

export type { CalendarPeriod } from './algorithms/calendar-periods.js';
export type { Algorithm } from './algorithms/index.js';
export { ALGORITHM_CODES };

/** The algorithms a policy names; 'calendar' is chosen by a calendar window ('day', 'week', 'month'), 'concurrent' by `{ concurrent }`. */
export type RateAlgorithm = Exclude<Algorithm, 'calendar' | 'concurrent'>;

/**
 * A policy: '100/1m', '10/s', '5/15m' (a bare unit means 1 of it), a calendar quota in UTC ('1000/day',
 * '5000/week', '50000/month'), an object, or a concurrent policy `{ concurrent: 5, lease: '30s' }`: at
 * most 5 requests in flight, each slot given back by Decision.release() or freed when its lease ends.
 */
export type PolicyInput =
  | `${number}/${string}`
  | {
      /** Positive integer: cost units per period. */
      limit: number;
      /** A calendar period: from local midnight, from Monday (ISO week) or from the 1st, in timeZone. */
      window: CalendarPeriod;
      /** IANA time zone of the periods, e.g. 'America/New_York'. Default 'UTC'. */
      timeZone?: string;
      /** Shown in RateLimit-Policy. Default derived, e.g. '1000-per-day' or '1000-per-day@Europe/Berlin'. */
      name?: string;
    }
  | {
      /** Most requests in flight: a positive integer. */
      concurrent: number;
      /** How long a slot not released stays held (a crashed process's slot comes back after it). Default '30s'. */
      lease?: Duration;
      /** Shown in RateLimit-Policy. Default e.g. '5-in-flight'. */
      name?: string;
    }
  | {
      /** Positive integer: cost units per window. */
      limit: number;
      /** The window, > 0. */
      window: Duration;
      /** Default 'token-bucket'. */
      algorithm?: RateAlgorithm;
      /** Token-bucket capacity, >= 1. Default: limit. */
      burst?: number;
      /** Shown in RateLimit-Policy. Default derived from limit and window, e.g. '100-per-60s'. */
      name?: string;
    };

/** A validated policy, as stores see it. */
export interface Policy {
  readonly name: string;
  /** Units per window; for a concurrent policy, slots. */
  readonly limit: number;
  /** The window; for a concurrent policy, the lease. */
  readonly windowMs: number;
  readonly algorithm: Algorithm;
  readonly burst: number;
  /** Identifies the policy's counters in a store: two policies with the same id share them. */
  readonly id: string;
  /** A calendar quota's period (algorithm 'calendar'); windowMs is then its nominal length. */
  readonly period?: CalendarPeriod;
  /** A calendar quota's canonical IANA time zone. */
  readonly timeZone?: string;
}

const POLICY_STRING = /^\s*([-+]?\d*\.?\d+(?:e[-+]?\d+)?)\s*\/\s*(\S+)\s*$/i;
const POLICY_FIELDS = ['limit', 'window', 'algorithm', 'burst', 'name', 'timeZone'];
/**
 * Most units a sliding-log policy counts: it keeps one sorted-set member per unit admitted in its
 * window, so memory and the script's time grow with the limit. Above it, use 'sliding-window'.
 */
export const SLIDING_LOG_MAX = 10_000;

// The bounds of a policy's numbers, one constant each, checked here at construction (and in limiter.ts and
// adjust.ts: a call's cost and delta against LIMIT_MAX, a token bucket's delta as a wait against
// WINDOW_MAX_MS). Why: both stores compute in doubles (Lua's numbers, JS's), exact on integers below 2^53
// (~9.007e15); Redis turns a Lua number in a reply, or a `%d` for PX, into a 64-bit integer, and past 2^63
// it wraps (a '99999999d' window answered retryAfterMs -9223372036854778; PX fails, 'ERR invalid expire
// time'); RateLimit fields q, r, t, w are RFC 9651 sf-integers, at most 15 digits (< 1e15).
// - LIMIT_MAX = 1e12 (limit, burst, concurrent slots; a cost never passes above them): q and r are at
//   most a limit, so < 1e15; a count is a sum of costs, exact below 2^53; and below 1e12 (< 2^40) a count
//   keeps 2^-13 (~0.0001) of precision, so a fractional cost like 0.01 still counts near the limit (at
//   1e15 the step is 0.125, and it would round away).
// - WINDOW_MAX_MS = 10000 days = 8.64e14 µs (window, lease, and a token bucket's refill from empty,
//   burst / limit × window): the scripts work in µs; a retry reaches two windows (sliding-window: the end
//   of the next one), 1.7e15 < 2^53; the token bucket stores its full-again instant in µs since the epoch,
//   now + 8.64e14 < 2^53 until about 2228; TTLs in ms stay far below 2^63; t and w stay under 1e9 s.
// - WINDOW_MIN_MS = 1: floor(now / window) indexes fixed and sliding windows, and past 2^53 (a window under
//   ~0.001 ms; 1e-300 gives an infinite index) it is wrong; TTLs are whole ms anyway.
// - A token bucket scales tokens by the window in µs, so its sums reach burst × window × 1000: exact
//   integers below 9e12 units × ms ('100000/1d'); above, a charge rounds by at most 1e-9 of a token
//   ('1000000/1d' may report one unit fewer remaining), never admitting a whole unit more. Common
//   policies are above it, so it is not refused.
/** Most units a limit or a token-bucket burst may be, most slots of a concurrent policy; the most a cost or a delta may be. */
export const LIMIT_MAX = 1e12;
/** Longest window, lease or token-bucket refill: 10000 days. */
export const WINDOW_MAX_MS = 10_000 * 86_400_000;
/** Shortest window or lease. */
export const WINDOW_MIN_MS = 1;
/** LIMIT_MAX as messages write it. */
export const LIMIT_MAX_TEXT = `${LIMIT_MAX} (${LIMIT_MAX.toExponential()})`;
const WINDOW_MAX_TEXT = `${WINDOW_MAX_MS / 86_400_000} days (${WINDOW_MAX_MS} ms)`;
const NAME = /^[!#-[\]-~]{1,64}$/; // printable ASCII without '"' and '\', so it fits an sf-string as is

/**
 * Validates and normalizes one policy; throws naming `option` and the field at fault.
 * @example parsePolicy('100/1m') // { name: '100-per-60s', limit: 100, windowMs: 60000, algorithm: 'token-bucket', burst: 100, ... }
 */
export function parsePolicy(input: unknown, option = 'policy'): Policy {
  let raw: { limit?: unknown; window?: unknown; algorithm?: unknown; burst?: unknown; name?: unknown; timeZone?: unknown };
  if (typeof input === 'string') {
    const m = POLICY_STRING.exec(input);
    if (!m) badOption(option, "a string like '100/1m' or an object { limit, window }", input);
    raw = { limit: Number(m[1]), window: m[2] };
  } else if (input !== null && typeof input === 'object' && !Array.isArray(input)) {
    if ('concurrent' in input) return parseConcurrent(input, option);
    // A plain object's fields are all the policy's; a class instance may hold others (getters read below).
    const proto = Object.getPrototypeOf(input);
    if (proto === Object.prototype || proto === null) checkNames(input, POLICY_FIELDS, 'a policy field', `${option}.`);
    raw = input;
  } else {
    return badOption(option, "a string like '100/1m' or an object { limit, window }", input);
  }
  const limit = raw.limit;
  if (typeof limit === 'number' && limit > LIMIT_MAX) badOption(`${option}.limit`, `at most ${LIMIT_MAX_TEXT}`, limit);
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1) {
    const why =
      typeof limit !== 'number' || Number.isNaN(limit)
        ? undefined
        : limit < 0
          ? 'a limit counts units per window: it cannot be negative'
          : !Number.isInteger(limit)
            ? 'a limit counts whole units: for 1.5 per minute, write 3/2m'
            : 'a limit of 0 would refuse every request; to count without denying, use shadow: true';
    badOption(`${option}.limit`, 'a positive integer', limit, why);
  }
  if (CALENDAR_PERIODS.includes(raw.window as CalendarPeriod)) return calendarPolicy(raw, limit, option);
  if (raw.timeZone !== undefined)
    badOption(`${option}.timeZone`, "used only with a calendar window ('day', 'week' or 'month')", raw.timeZone);
  const windowMs = checkWindow(raw.window, `${option}.window`);
  const algorithm = raw.algorithm ?? 'token-bucket';
  if (typeof algorithm !== 'string' || !(algorithm in ALGORITHM_CODES) || algorithm === 'concurrent') {
    const names = Object.keys(ALGORITHM_CODES).filter((a) => a !== 'concurrent' && a !== 'calendar');
    const close = typeof algorithm === 'string' ? nearest(algorithm, names) : undefined;
    const hint = close ? `did you mean ${close}?` : 'for requests in flight: { concurrent: N }';
    badOption(`${option}.algorithm`, `one of ${names.join(', ')}`, algorithm, hint);
  }
  if (algorithm === 'sliding-log' && (limit as number) > SLIDING_LOG_MAX) {
    badOption(
      `${option}.limit`,
      `at most ${SLIDING_LOG_MAX} with 'sliding-log'`,
      limit,
      "it keeps a member per unit: use 'sliding-window' for more",
    );
  }
  const burst = raw.burst ?? limit;
  if (typeof burst !== 'number' || !Number.isFinite(burst) || burst < 1) {
    badOption(`${option}.burst`, 'a number >= 1', burst);
  }
  if (burst > LIMIT_MAX) badOption(`${option}.burst`, `at most ${LIMIT_MAX_TEXT}`, burst);
  if (raw.burst !== undefined && algorithm !== 'token-bucket') {
    badOption(`${option}.burst`, "used only with algorithm 'token-bucket'", raw.burst);
  }
  if (algorithm === 'token-bucket') checkTokenBucket(limit as number, burst, windowMs, option);
  if (algorithm === 'calendar')
    badOption(`${option}.algorithm`, "absent for a calendar quota: give window 'day', 'week' or 'month'", algorithm);
  const name = checkName(raw.name ?? `${limit}-per-${formatDuration(windowMs)}`, option);
  const code = ALGORITHM_CODES[algorithm as Algorithm];
  const id = `${code}${limit}/${windowMs}${burst === limit ? '' : `b${burst}`}`;
  return { name, limit, windowMs, algorithm: algorithm as Algorithm, burst, id };
}

/** A window or a lease (ms) within WINDOW_MIN_MS and WINDOW_MAX_MS. */
function checkWindow(input: unknown, option: string): number {
  const ms = parseDuration(input, option);
  if (ms < WINDOW_MIN_MS) badOption(option, `at least ${WINDOW_MIN_MS} ms`, input);
  if (ms > WINDOW_MAX_MS) badOption(option, `at most ${WINDOW_MAX_TEXT}`, input);
  return ms;
}

/** A token bucket's refill from empty within WINDOW_MAX_MS. */
function checkTokenBucket(limit: number, burst: number, windowMs: number, option: string): void {
  if (burst * windowMs > WINDOW_MAX_MS * limit) {
    badOption(
      `${option}.burst`,
      `at most ${Math.floor((WINDOW_MAX_MS * limit) / windowMs)} with limit ${limit} over ${formatDuration(windowMs)}`,
      burst,
      `an empty bucket refills in burst / limit × window, at most ${WINDOW_MAX_TEXT}`,
    );
  }
}

function checkName(name: unknown, option: string): string {
  if (typeof name !== 'string' || !NAME.test(name)) {
    badOption(`${option}.name`, 'printable ASCII without quotes or backslashes, 1 to 64 characters', name);
  }
  return name;
}

/**
 * A calendar quota. Its id names the period and the zone but not the limit: a key's count in the period
 * is its usage whatever the plan, so a plan change carries it on under the new limit (an upgrade keeps
 * what was used, a downgrade past it denies until the period ends), and flipping plans gains nothing.
 */
function calendarPolicy(
  raw: { window?: unknown; algorithm?: unknown; burst?: unknown; name?: unknown; timeZone?: unknown },
  limit: number,
  option: string,
): Policy {
  const period = raw.window as CalendarPeriod;
  if (raw.algorithm !== undefined) badOption(`${option}.algorithm`, `absent with window '${period}' (a calendar quota)`, raw.algorithm);
  if (raw.burst !== undefined) badOption(`${option}.burst`, `absent with window '${period}' (a calendar quota)`, raw.burst);
  const timeZone = raw.timeZone === undefined ? 'UTC' : canonicalZone(raw.timeZone, `${option}.timeZone`);
  const name = checkName(raw.name ?? `${limit}-per-${period}${timeZone === 'UTC' ? '' : `@${timeZone}`}`, option);
  const id = `${ALGORITHM_CODES.calendar}${period}@${timeZone}`;
  return { name, limit, windowMs: NOMINAL_MS[period], algorithm: 'calendar', burst: limit, id, period, timeZone };
}

const LEASE_MS = 30_000;

/** `{ concurrent, lease?, name? }`: slots as its limit, the lease as its window. */
function parseConcurrent(raw: { concurrent?: unknown; lease?: unknown; name?: unknown }, option: string): Policy {
  checkNames(raw, ['concurrent', 'lease', 'name'], 'a field of a concurrent policy', `${option}.`);
  const limit = raw.concurrent;
  if (typeof limit === 'number' && limit > LIMIT_MAX) badOption(`${option}.concurrent`, `at most ${LIMIT_MAX_TEXT}`, limit);
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1) {
    badOption(`${option}.concurrent`, 'a positive integer (most requests in flight)', limit);
  }
  const windowMs = raw.lease === undefined ? LEASE_MS : checkWindow(raw.lease, `${option}.lease`);
  const name = checkName(raw.name ?? `${limit}-in-flight`, option);
  return { name, limit, windowMs, algorithm: 'concurrent', burst: limit, id: `${ALGORITHM_CODES.concurrent}${limit}/${windowMs}` };
}

/** True for a policy that counts requests in flight. */
export const isConcurrent = (p: Policy): boolean => p.algorithm === 'concurrent';

/** Validates one policy or a non-empty list of them. */
export function parsePolicies(input: unknown, option = 'policy'): Policy[] {
  if (!Array.isArray(input)) return [parsePolicy(input, option)];
  if (input.length === 0) badOption(option, 'a policy or a non-empty array of policies', input);
  const policies = input.map((p, i) => parsePolicy(p, `${option}[${i}]`));
  const ids = new Set(policies.map((p) => p.id));
  if (ids.size !== policies.length)
    badOption(option, 'policies that differ from each other (and one calendar quota per period and zone)', input);
  return policies;
}
