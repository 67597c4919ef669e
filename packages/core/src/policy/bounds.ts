// The bounds of a policy's numbers and the checks of its fields, for parsePolicy (policy.ts).
import { formatDuration, parseDuration } from '../duration.js';
import { badOption } from '../errors.js';
import { ALGORITHM_CODES } from '../lua.generated.js';
import { nearest } from '../options.js';

/** The algorithms a policy can use: those lua/ declares a code for (scripts/gen-lua.mjs). */
export type Algorithm = keyof typeof ALGORITHM_CODES;

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

/** A policy's limit: a positive integer up to LIMIT_MAX. */
export function checkLimit(limit: unknown, option: string): number {
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
  return limit;
}

/** A policy's algorithm (not 'concurrent', which takes { concurrent: N }), and sliding-log's bound on its limit. */
export function checkAlgorithm(algorithm: unknown, limit: number, option: string): asserts algorithm is Algorithm {
  if (typeof algorithm !== 'string' || !(algorithm in ALGORITHM_CODES) || algorithm === 'concurrent') {
    const names = Object.keys(ALGORITHM_CODES).filter((a) => a !== 'concurrent' && a !== 'calendar');
    const close = typeof algorithm === 'string' ? nearest(algorithm, names) : undefined;
    const hint = close ? `did you mean ${close}?` : 'for requests in flight: { concurrent: N }';
    badOption(`${option}.algorithm`, `one of ${names.join(', ')}`, algorithm, hint);
  }
  if (algorithm === 'sliding-log' && limit > SLIDING_LOG_MAX) {
    badOption(
      `${option}.limit`,
      `at most ${SLIDING_LOG_MAX} with 'sliding-log'`,
      limit,
      "it keeps a member per unit: use 'sliding-window' for more",
    );
  }
}

/** A window or a lease (ms) within WINDOW_MIN_MS and WINDOW_MAX_MS. */
export function checkWindow(input: unknown, option: string): number {
  const ms = parseDuration(input, option);
  if (ms < WINDOW_MIN_MS) badOption(option, `at least ${WINDOW_MIN_MS} ms`, input);
  if (ms > WINDOW_MAX_MS) badOption(option, `at most ${WINDOW_MAX_TEXT}`, input);
  return ms;
}

/** A token bucket's refill from empty within WINDOW_MAX_MS. */
export function checkTokenBucket(limit: number, burst: number, windowMs: number, option: string): void {
  if (burst * windowMs > WINDOW_MAX_MS * limit) {
    badOption(
      `${option}.burst`,
      `at most ${Math.floor((WINDOW_MAX_MS * limit) / windowMs)} with limit ${limit} over ${formatDuration(windowMs)}`,
      burst,
      `an empty bucket refills in burst / limit × window, at most ${WINDOW_MAX_TEXT}`,
    );
  }
}

export function checkName(name: unknown, option: string): string {
  if (typeof name !== 'string' || !NAME.test(name)) {
    badOption(`${option}.name`, 'printable ASCII without quotes or backslashes, 1 to 64 characters', name);
  }
  return name;
}
