import { type Duration, formatDuration } from '../duration.js';
import { badOption } from '../errors.js';
import { ALGORITHM_CODES } from '../lua.generated.js';
import { checkNames } from '../options.js';
import {
  type Algorithm,
  checkAlgorithm,
  checkLimit,
  checkName,
  checkTokenBucket,
  checkWindow,
  LIMIT_MAX,
  LIMIT_MAX_TEXT,
} from './bounds.js';
import { CALENDAR_PERIODS, type CalendarPeriod, canonicalZone, NOMINAL_MS } from './calendar-periods.js';

export type { Algorithm } from './bounds.js';
export { LIMIT_MAX, LIMIT_MAX_TEXT, SLIDING_LOG_MAX, WINDOW_MAX_MS, WINDOW_MIN_MS } from './bounds.js';
export type { CalendarPeriod } from './calendar-periods.js';
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
      /**
       * A fixed window's start: 'clock' (windows aligned to the clock) or 'first-hit' (a window opens at the
       * key's first hit, as express-rate-limit's and @fastify/rate-limit's stores count: one count per key
       * and window, whatever the limit, so a request under another limit counts on in it). Default 'clock'.
       */
      start?: WindowStart;
      /** Shown in RateLimit-Policy. Default derived from limit and window, e.g. '100-per-60s'. */
      name?: string;
    };

/** Where a fixed window starts: aligned to the clock, or at the key's first hit. */
export type WindowStart = 'clock' | 'first-hit';

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
  /** 'first-hit' for a fixed window that opens at the key's first hit; absent for one aligned to the clock. */
  readonly start?: 'first-hit';
}

const POLICY_STRING = /^\s*([-+]?\d*\.?\d+(?:e[-+]?\d+)?)\s*\/\s*(\S+)\s*$/i;
const POLICY_FIELDS = ['limit', 'window', 'algorithm', 'burst', 'name', 'timeZone', 'start'];

/**
 * Validates and normalizes one policy; throws naming `option` and the field at fault.
 * @example parsePolicy('100/1m') // { name: '100-per-60s', limit: 100, windowMs: 60000, algorithm: 'token-bucket', burst: 100, ... }
 */
export function parsePolicy(input: unknown, option = 'policy'): Policy {
  let raw: { limit?: unknown; window?: unknown; algorithm?: unknown; burst?: unknown; name?: unknown; timeZone?: unknown; start?: unknown };
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
  const limit = checkLimit(raw.limit, option);
  const firstHit = checkStart(raw.start, raw.algorithm, option);
  if (CALENDAR_PERIODS.includes(raw.window as CalendarPeriod)) return calendarPolicy(raw, limit, option);
  if (raw.timeZone !== undefined)
    badOption(`${option}.timeZone`, "used only with a calendar window ('day', 'week' or 'month')", raw.timeZone);
  const windowMs = checkWindow(raw.window, `${option}.window`);
  const algorithm = raw.algorithm ?? 'token-bucket';
  checkAlgorithm(algorithm, limit, option);
  const burst = raw.burst ?? limit;
  if (typeof burst !== 'number' || !Number.isFinite(burst) || burst < 1) {
    badOption(`${option}.burst`, 'a number >= 1', burst);
  }
  if (burst > LIMIT_MAX) badOption(`${option}.burst`, `at most ${LIMIT_MAX_TEXT}`, burst);
  if (raw.burst !== undefined && algorithm !== 'token-bucket') {
    badOption(`${option}.burst`, "used only with algorithm 'token-bucket'", raw.burst);
  }
  if (algorithm === 'token-bucket') checkTokenBucket(limit, burst, windowMs, option);
  if (algorithm === 'calendar')
    badOption(`${option}.algorithm`, "absent for a calendar quota: give window 'day', 'week' or 'month'", algorithm);
  const name = checkName(raw.name ?? `${limit}-per-${formatDuration(windowMs)}`, option);
  const code = ALGORITHM_CODES[algorithm as Algorithm];
  // A first-hit window's id names its window but not its limit, as the peers' stores count (one count of
  // hits per key, held against each request's limit): a request under another limit counts on in it.
  const id = firstHit ? `${code}/${windowMs}f` : `${code}${limit}/${windowMs}${burst === limit ? '' : `b${burst}`}`;
  const policy: Policy = { name, limit, windowMs, algorithm: algorithm as Algorithm, burst, id };
  return firstHit ? { ...policy, start: 'first-hit' } : policy;
}

/** Whether a policy's `start` is 'first-hit' (only a fixed window has a start). */
function checkStart(start: unknown, algorithm: unknown, option: string): boolean {
  if (start === undefined) return false;
  if (start !== 'clock' && start !== 'first-hit') badOption(`${option}.start`, "'clock' or 'first-hit'", start);
  if (algorithm !== 'fixed-window') badOption(`${option}.start`, "used only with algorithm 'fixed-window'", start);
  return start === 'first-hit';
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
    badOption(
      option,
      'policies that differ from each other (one calendar quota per period and zone, one first-hit fixed window per window)',
      input,
    );
  return policies;
}
