// throttle(fn): fn, called no faster than a limiter allows, each call waiting its turn (limiter.wait).
import { type Duration, parseMaxWait } from './duration.js';
import { badOption } from './errors.js';
import type { Limiter, WaitOptions } from './limiter-api.js';

/** Options of throttle(). */
export interface ThrottleOptions<A extends unknown[]> {
  limiter: Limiter;
  /** The key the calls are counted under, or a function of the call's arguments. Default 'throttle'. */
  key?: string | ((...args: A) => string);
  /** Units each call costs, or a function of its arguments. Default 1. */
  cost?: number | ((...args: A) => number);
  /** The longest a call waits for its turn; past it the call rejects with ERR_SLUICE_WAIT. Default '30s'. */
  maxWait?: Duration;
}

/**
 * `fn`, called no faster than the limiter allows: same arguments, and a promise of fn's result. Calls
 * wait their turn in the order made, across every process that shares the limiter's store.
 * @example const send = throttle(sendMail, { limiter: createLimiter({ policy: '10/s', store }), maxWait: '1m' });
 */
export function throttle<A extends unknown[], R>(fn: (...args: A) => R, options: ThrottleOptions<A>): (...args: A) => Promise<Awaited<R>> {
  if (typeof fn !== 'function') badOption('throttle fn', 'a function', fn);
  if (options === null || typeof options !== 'object') badOption('throttle options', 'an object, such as { limiter }', options);
  const { limiter, key = 'throttle', cost, maxWait } = options;
  if (limiter === null || typeof limiter !== 'object' || typeof limiter.wait !== 'function')
    badOption('limiter', 'a Limiter (createLimiter)', limiter);
  if (typeof key !== 'string' && typeof key !== 'function') badOption('key', 'a string or a function of the arguments', key);
  if (cost !== undefined && typeof cost !== 'number' && typeof cost !== 'function')
    badOption('cost', 'a number or a function of the arguments', cost);
  const maxWaitMs = maxWait === undefined ? undefined : parseMaxWait(maxWait, 'maxWait');
  return async function throttled(...args: A): Promise<Awaited<R>> {
    const wait: WaitOptions = {};
    if (maxWaitMs !== undefined) wait.maxWait = maxWaitMs;
    if (cost !== undefined) wait.cost = typeof cost === 'function' ? cost(...args) : cost;
    await limiter.wait(typeof key === 'function' ? key(...args) : key, wait);
    return await fn(...args);
  };
}
