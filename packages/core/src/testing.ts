// @sluice/core/testing: what a test of an app's limits needs (docs/testing.md): a clock it moves, given
// to the store, and a prefix's every key gone between tests. Not for production code.

export { type ResetAllOptions, resetAll } from './testing/reset-all.js';
export { type TestClock, testClock } from './testing/test-clock.js';
