import type { Algorithm } from './algorithms/index.js';
import { type Duration, formatDuration, parseDuration } from './duration.js';
import { badOption } from './errors.js';
import { ALGORITHM_CODES } from './lua.generated.js';
import { checkNames } from './options.js';

export type { Algorithm } from './algorithms/index.js';
export { ALGORITHM_CODES };

/** The algorithms of rate policies (a concurrent policy is `{ concurrent }`). */
export type RateAlgorithm = Exclude<Algorithm, 'concurrent'>;

/**
 * A policy: '100/1m', '10/s', '5/15m' (a bare unit means 1 of it), an object, or a concurrent policy
 * `{ concurrent: 5, lease: '30s' }`: at most 5 requests in flight, each slot given back by
 * Decision.release() or freed when its lease ends.
 */
export type PolicyInput =
  | `${number}/${string}`
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
}

const POLICY_STRING = /^\s*(\d+)\s*\/\s*(\S+)\s*$/;
const NAME = /^[!#-[\]-~]{1,64}$/; // printable ASCII without '"' and '\', so it fits an sf-string as is

/**
 * Validates and normalizes one policy; throws naming `option` and the field at fault.
 * @example parsePolicy('100/1m') // { name: '100-per-60s', limit: 100, windowMs: 60000, algorithm: 'token-bucket', burst: 100, ... }
 */
export function parsePolicy(input: unknown, option = 'policy'): Policy {
  let raw: { limit?: unknown; window?: unknown; algorithm?: unknown; burst?: unknown; name?: unknown };
  if (typeof input === 'string') {
    const m = POLICY_STRING.exec(input);
    if (!m) badOption(option, "a string like '100/1m' or an object { limit, window }", input);
    raw = { limit: Number(m[1]), window: m[2] };
  } else if (input !== null && typeof input === 'object' && !Array.isArray(input)) {
    if ('concurrent' in input) return parseConcurrent(input, option);
    raw = input;
  } else {
    return badOption(option, "a string like '100/1m' or an object { limit, window }", input);
  }
  const limit = raw.limit;
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1) {
    badOption(`${option}.limit`, 'a positive integer', limit);
  }
  const windowMs = parseDuration(raw.window, `${option}.window`);
  const algorithm = raw.algorithm ?? 'token-bucket';
  if (typeof algorithm !== 'string' || !(algorithm in ALGORITHM_CODES) || algorithm === 'concurrent') {
    const names = Object.keys(ALGORITHM_CODES).filter((a) => a !== 'concurrent');
    badOption(`${option}.algorithm`, `one of ${names.join(', ')} (for requests in flight: { concurrent: N })`, algorithm);
  }
  const burst = raw.burst ?? limit;
  if (typeof burst !== 'number' || !Number.isFinite(burst) || burst < 1) {
    badOption(`${option}.burst`, 'a number >= 1', burst);
  }
  if (raw.burst !== undefined && algorithm !== 'token-bucket') {
    badOption(`${option}.burst`, "used only with algorithm 'token-bucket'", raw.burst);
  }
  const name = raw.name ?? `${limit}-per-${formatDuration(windowMs)}`;
  if (typeof name !== 'string' || !NAME.test(name)) {
    badOption(`${option}.name`, 'printable ASCII without quotes or backslashes, 1 to 64 characters', name);
  }
  const code = ALGORITHM_CODES[algorithm as Algorithm];
  const id = `${code}${limit}/${windowMs}${burst === limit ? '' : `b${burst}`}`;
  return { name, limit, windowMs, algorithm: algorithm as Algorithm, burst, id };
}

const LEASE_MS = 30_000;

/** `{ concurrent, lease?, name? }`: slots as its limit, the lease as its window. */
function parseConcurrent(raw: { concurrent?: unknown; lease?: unknown; name?: unknown }, option: string): Policy {
  checkNames(raw, ['concurrent', 'lease', 'name'], 'a field of a concurrent policy', `${option}.`);
  const limit = raw.concurrent;
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1) {
    badOption(`${option}.concurrent`, 'a positive integer (most requests in flight)', limit);
  }
  const windowMs = raw.lease === undefined ? LEASE_MS : parseDuration(raw.lease, `${option}.lease`);
  const name = raw.name ?? `${limit}-in-flight`;
  if (typeof name !== 'string' || !NAME.test(name)) {
    badOption(`${option}.name`, 'printable ASCII without quotes or backslashes, 1 to 64 characters', name);
  }
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
  if (ids.size !== policies.length) badOption(option, 'policies that differ from each other', input);
  return policies;
}
