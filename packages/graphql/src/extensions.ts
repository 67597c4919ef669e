// What a response says of its cost (Shopify's `extensions.cost`), and the refusals, neutral of any server:
// each server turns a Refusal into its own error, status and headers.
import type { Decision } from '@sluice/core';

/** The budget after an operation, in points. */
export interface ThrottleStatus {
  /** The budget's policy limit (the binding policy's, when there are several). */
  maximumAvailable: number;
  /** Points left, after the refund of what the operation did not use. */
  currentlyAvailable: number;
  /** Points the budget regains per second (its limit over its window). */
  restoreRate: number;
}

/** `extensions.cost` of a response. */
export interface QueryCost {
  /** The cost from the document, the variables and the schema, charged before the operation ran. */
  requestedQueryCost: number;
  /** The cost from the result (the lists' real lengths); null when the operation did not run. */
  actualQueryCost: number | null;
  throttleStatus: ThrottleStatus;
}

/** Why an operation did not run, neutral of the server. */
export interface Refusal {
  message: string;
  /** `extensions.code` of the error. */
  code: 'THROTTLED' | 'FORBIDDEN' | 'UNAVAILABLE' | 'MAX_COST_EXCEEDED' | 'GRAPHQL_VALIDATION_FAILED';
  /** The HTTP status, where the server lets a plugin set it. */
  status: number;
  /** THROTTLED, FORBIDDEN and UNAVAILABLE: ms until it could pass (`extensions.retryAfterMs`; `Retry-After` in whole seconds). */
  retryAfterMs?: number;
  /** THROTTLED and MAX_COST_EXCEEDED: the response's `extensions.cost`. */
  cost?: QueryCost;
}

/** The last restore rate worked out, by its policy's limit and window: a budget's policy is the same each time. */
const last = { limit: Number.NaN, windowMs: Number.NaN, rate: 0 };

/** Points a second that a policy of `limit` per `windowMs` regains, to six digits. */
function restoreRate(limit: number, windowMs: number): number {
  if (limit !== last.limit || windowMs !== last.windowMs) {
    last.limit = limit;
    last.windowMs = windowMs;
    last.rate = windowMs <= 0 ? 0 : sixDigits((limit * 1000) / windowMs);
  }
  return last.rate;
}

/** The budget as a decision leaves it. */
export function throttleStatus(decision: Decision): ThrottleStatus {
  const { policies } = decision;
  let binding = policies[0];
  if (policies.length > 1) for (const p of policies) if (p.name === decision.policy) binding = p;
  const rate = binding === undefined || binding.name !== decision.policy ? 0 : restoreRate(binding.limit, binding.windowMs);
  return { maximumAvailable: decision.limit, currentlyAvailable: decision.remaining, restoreRate: rate };
}

/** `x` to six significant digits (16.6667 points a second, not 16.666666666666668). */
function sixDigits(x: number): number {
  if (x === 0) return 0;
  const digits = 5 - Math.floor(Math.log10(x));
  return digits >= 0 ? Math.round(x * 10 ** digits) / 10 ** digits : Math.round(x / 10 ** -digits) * 10 ** -digits;
}

/**
 * A denial: THROTTLED (429), FORBIDDEN (403) when a deny rule or a ban refused it, or UNAVAILABLE (503) when
 * the store cannot answer and the limiter fails closed (`fallback: false`), as the HTTP adapters answer it.
 */
export function denied(decision: Decision, requested: number): Refusal {
  const cost = { requestedQueryCost: requested, actualQueryCost: null, throttleStatus: throttleStatus(decision) };
  if (decision.source === 'rule')
    return { message: 'Forbidden', code: 'FORBIDDEN', status: 403, retryAfterMs: decision.retryAfterMs, cost };
  if (decision.source === 'fail-closed')
    return { message: 'Service Unavailable', code: 'UNAVAILABLE', status: 503, retryAfterMs: decision.retryAfterMs, cost };
  return { message: 'Throttled', code: 'THROTTLED', status: 429, retryAfterMs: decision.retryAfterMs, cost };
}

/** An operation that costs more than `most` (maxCost), or than the budget can ever hold (`most` undefined): refused before it runs, charged nothing. */
export function tooCostly(requested: number, most: number | undefined, budget: Decision): Refusal {
  const limit = most === undefined ? 'the budget can ever hold' : `the maximum cost of ${most}`;
  return {
    message: `Query cost is ${requested}, which exceeds ${limit}`,
    code: 'MAX_COST_EXCEEDED',
    status: 400,
    cost: { requestedQueryCost: requested, actualQueryCost: null, throttleStatus: throttleStatus(budget) },
  };
}

/** An operation sluice cannot cost: the server's validation error. */
export function invalid(message: string): Refusal {
  return { message: `Cannot cost the operation: ${message}`, code: 'GRAPHQL_VALIDATION_FAILED', status: 400 };
}

/** `Retry-After` for a refusal: whole seconds, rounded up, at least 1; on a 429 always, else only when it says a time. */
export function retryAfter(refusal: Refusal): string | undefined {
  const ms = refusal.retryAfterMs ?? 0;
  if (refusal.status !== 429 && ms <= 0) return undefined;
  return String(Math.max(1, Math.ceil(ms / 1000)));
}

/** The refusal's `extensions` on its error, without the cost (which goes on the response). */
export function errorExtensions(refusal: Refusal): Record<string, unknown> {
  return refusal.retryAfterMs === undefined ? { code: refusal.code } : { code: refusal.code, retryAfterMs: refusal.retryAfterMs };
}
