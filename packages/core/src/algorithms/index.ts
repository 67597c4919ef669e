// The one list of algorithms. An algorithm is a lua/<name>.lua (which declares its code), a <name>.ts
// here (its TypeScript twin, for the memory store) and one line below; scripts/gen-lua.mjs generates
// the Lua dispatch and ALGORITHM_CODES from lua/, so this list type-checks only when it matches lua/.
import type { ALGORITHM_CODES } from '../lua.generated.js';
import type { Policy } from '../policy.js';
import type { StepResult } from './algorithm.js';
import { calendar } from './calendar.js';
import { fixedWindow } from './fixed-window.js';
import { slidingLog } from './sliding-log.js';
import { slidingWindow } from './sliding-window.js';
import { tokenBucket } from './token-bucket.js';

/** The algorithms a policy can use. */
export type Algorithm = keyof typeof ALGORITHM_CODES;

/** A step over a state of its own kind: the memory store hands each key's state back to its algorithm. */
type AnyStep = (state: never, now: number, p: Policy, cost: number, apply: boolean) => StepResult<unknown>;

/** Each algorithm's step, by name. */
export const ALGORITHMS: { readonly [A in Algorithm]: AnyStep } = {
  'token-bucket': tokenBucket,
  'fixed-window': fixedWindow,
  'sliding-window': slidingWindow,
  'sliding-log': slidingLog,
  calendar,
};

export type { AlgorithmStep, StepResult } from './algorithm.js';
