import type { Policy } from '../policy/policy.js';

/** What one policy says about one request; the TypeScript twin of a lua/ function's reply. */
export interface StepResult<S> {
  ok: boolean;
  remaining: number;
  resetMs: number;
  /** 0 when ok; else ms to the µs: whole µs rounded up (>= 1), / 1000, as the Lua reply's retryAfterUs. */
  retryAfterMs: number;
  /**
   * Set when the step charged: the state to store, and for how long it matters. A stored state is
   * updated in place and handed back (a new object per decision outlives a young collection in the
   * memory store); a step that does not charge leaves it as it was.
   */
  next?: { state: S; ttlMs: number };
  /** The window in force, when it varies from one to the next (a calendar period's length). */
  windowMs?: number;
}

/**
 * One algorithm over its state. `apply` charges `cost` when it passes. Mirrors its lua/ file expression
 * by expression, so that the memory store and Redis decide the same on the same clock.
 */
export type AlgorithmStep<S> = (
  state: S | undefined,
  now: number,
  p: Policy,
  cost: number,
  apply: boolean,
  /** The concurrent slot to take (the Lua's SLOT); only concurrent.ts reads it. */
  slot?: string,
) => StepResult<S>;

/**
 * The twin of a lua/ file's <name>_adjust: charges `delta` without a check, or refunds (delta < 0)
 * never past full; a concurrent policy gives `slot` back. Returns the state to store (the given one,
 * updated in place, when there is one) and for how long, null when the key goes (as a DEL), undefined
 * when nothing changes.
 */
export type AdjustStep<S> = (
  state: S | undefined,
  now: number,
  p: Policy,
  delta: number,
  slot: string,
) => { state: S; ttlMs: number } | null | undefined;

/**
 * The twin of a lua/ file's <name>_reserve (limiter.wait): charges `cost` as a place in line whose turn
 * is `at` (ms, on the same clock as now). Only the algorithms that can reserve have one.
 */
export type ReserveStep<S> = (
  state: S | undefined,
  now: number,
  p: Policy,
  cost: number,
  at: number,
) => { state: S; ttlMs: number } | null | undefined;
