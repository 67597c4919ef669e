import type { Algorithm } from '../policy.js';
import { fixedWindow } from './fixed-window.js';
import { slidingLog } from './sliding-log.js';
import { slidingWindow } from './sliding-window.js';
import type { AlgorithmStep } from './step.js';
import { tokenBucket } from './token-bucket.js';

export type { Step } from './step.js';

/** The TypeScript twin of each lua/ script, by algorithm. */
export const ALGORITHM_STEPS: Readonly<Record<Algorithm, AlgorithmStep<unknown>>> = {
  'token-bucket': tokenBucket as AlgorithmStep<unknown>,
  'fixed-window': fixedWindow as AlgorithmStep<unknown>,
  'sliding-window': slidingWindow as AlgorithmStep<unknown>,
  'sliding-log': slidingLog as AlgorithmStep<unknown>,
};
