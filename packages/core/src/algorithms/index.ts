// The one list of algorithms. An algorithm is a lua/<name>.lua (which declares its code), a <name>.ts
// here (its TypeScript twin, for the memory store) and one line below; scripts/gen-lua.mjs generates
// the Lua dispatch and ALGORITHM_CODES from lua/, so this list type-checks only when it matches lua/.
import type { Algorithm, Policy } from '../policy/policy.js';
import type { StepResult } from './algorithm.js';
import { calendar, calendarAdjust } from './calendar.js';
import { concurrent, concurrentAdjust } from './concurrent.js';
import { fixedWindow, fixedWindowAdjust } from './fixed-window.js';
import { slidingLog, slidingLogAdjust } from './sliding-log.js';
import { slidingWindow, slidingWindowAdjust, slidingWindowReserve } from './sliding-window.js';
import { tokenBucket, tokenBucketAdjust, tokenBucketReserve } from './token-bucket.js';

/** A step over a state of its own kind: the memory store hands each key's state back to its algorithm. */
type AnyStep = (state: never, now: number, p: Policy, cost: number, apply: boolean, slot?: string) => StepResult<unknown>;
/** An adjustment (charge without a check, refund, or a slot given back) over a state of its own kind. */
type AnyAdjust = (
  state: never,
  now: number,
  p: Policy,
  delta: number,
  slot: string,
) => { state: unknown; ttlMs: number } | null | undefined;

/** A reservation of a place in line whose turn is `at`, over a state of its own kind. */
type AnyReserve = (state: never, now: number, p: Policy, cost: number, at: number) => { state: unknown; ttlMs: number } | null | undefined;

/**
 * Each algorithm's step and adjustment (its lua/ file's <name> and <name>_adjust), and its reservation
 * (<name>_reserve) when it can take one, by name.
 */
export const ALGORITHMS: {
  readonly [A in Algorithm]: { readonly step: AnyStep; readonly adjust: AnyAdjust; readonly reserve?: AnyReserve };
} = {
  'token-bucket': { step: tokenBucket, adjust: tokenBucketAdjust, reserve: tokenBucketReserve },
  'fixed-window': { step: fixedWindow, adjust: fixedWindowAdjust },
  'sliding-window': { step: slidingWindow, adjust: slidingWindowAdjust, reserve: slidingWindowReserve },
  'sliding-log': { step: slidingLog, adjust: slidingLogAdjust },
  calendar: { step: calendar, adjust: calendarAdjust },
  concurrent: { step: concurrent, adjust: concurrentAdjust },
};

export type { AdjustStep, AlgorithmStep, ReserveStep, StepResult } from './algorithm.js';
