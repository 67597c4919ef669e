import type { Policy } from '../policy.js';

/** What one policy says about one request; the TypeScript twin of a lua/ function's reply. */
export interface StepResult<S> {
  ok: boolean;
  remaining: number;
  resetMs: number;
  /** 0 when ok; else ms to the µs: whole µs rounded up (>= 1), / 1000, as the Lua reply's retryAfterUs. */
  retryAfterMs: number;
  /** Set when the step charged: the state to store, and for how long it matters. */
  next?: { state: S; ttlMs: number };
  /** The window in force, when it varies from one to the next (a calendar period's length). */
  windowMs?: number;
}

/**
 * One algorithm over its state. `apply` charges `cost` when it passes. Mirrors its lua/ file expression
 * by expression, so that the memory store and Redis decide the same on the same clock.
 */
export type AlgorithmStep<S> = (state: S | undefined, now: number, p: Policy, cost: number, apply: boolean) => StepResult<S>;
