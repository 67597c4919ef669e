// A call's input, checked before any stage runs: its options (own names only, "did you mean"), its key
// and scope, its cost and its id. Bad input throws; the limiter turns that into a rejected promise.
import { badOption, describe, SluiceError } from './errors.js';
import { checkNames, ownCopy } from './options.js';
import { LIMIT_MAX, LIMIT_MAX_TEXT, type Policy } from './policy/policy.js';
import type { PolicySet } from './policy-set.js';
import { scopedKey } from './store/keys.js';

/** The names each call's options may have. */
export const CONSUME_OPTIONS = ['cost', 'policy', 'id', 'scope', 'ip'];
export const CALL_OPTIONS = ['policy', 'scope', 'ip'];

/**
 * A call's options, undefined or an object: a name the call does not take is refused ("did you mean"), and only own
 * properties are read. Cheap on the hot path: the names are looked at in full only when one is not a known own one.
 */
export function callOptions<T extends object>(options: T | undefined, known: readonly string[], call: string): T | undefined {
  if (options === undefined) return undefined;
  if (options === null || typeof options !== 'object') badOption(`${call} options`, 'an object', options);
  for (const name in options) {
    if (!known.includes(name) || !Object.hasOwn(options, name)) {
      checkNames(options, known, `a ${call} option`);
      return ownCopy(options) as T; // an inherited name: a polluted Object.prototype
    }
  }
  return options;
}

/** The key a counter is kept under: the caller's, in its scope when one is given (store/keys.ts scopedKey). */
export function counterKey(key: unknown, scope: unknown): string {
  checkKey(key);
  if (scope === undefined) return key as string;
  if (typeof scope !== 'string' || scope === '') badOption('scope', 'a non-empty string', scope);
  return scopedKey(scope, key as string);
}

export function checkKey(key: unknown): string {
  if (typeof key !== 'string') throw new SluiceError('ERR_SLUICE_KEY', `key must be a string, got ${describe(key)}`);
  // An empty key would count every such caller in one shared bucket.
  if (key === '') throw new SluiceError('ERR_SLUICE_KEY', 'key must be a non-empty string, got ""');
  return key;
}

export function checkId(id: unknown, concurrent: boolean): void {
  if (typeof id !== 'string' || id === '') badOption('id', 'a non-empty string', id);
  if (concurrent) badOption('id', 'absent on a limiter with a concurrent policy (a retry of a charged id would hold no slot)', id);
}

export function checkCost(cost: unknown, policies: readonly Policy[], capacity: PolicySet['capacity']): number {
  if (cost === undefined) return 1;
  if (typeof cost !== 'number' || !Number.isFinite(cost) || cost <= 0) {
    throw new SluiceError('ERR_SLUICE_COST', `cost must be a positive finite number, got ${describe(cost)}`);
  }
  if (!Number.isInteger(cost) && policies.some((p) => p.algorithm === 'sliding-log')) {
    throw new SluiceError('ERR_SLUICE_COST', `cost must be a whole number with a 'sliding-log' policy, got ${cost}`);
  }
  // Not a denial: a Retry-After would promise that it passes later, and it never does.
  if (cost > capacity.cost) {
    throw new SluiceError(
      'ERR_SLUICE_COST',
      `cost ${cost} can never pass: it is above the capacity ${capacity.cost} of policy "${capacity.policy.name}"`,
    );
  }
  // Only concurrent policies bound no capacity: the bound of every count still holds (policy/bounds.ts).
  if (cost > LIMIT_MAX) throw new SluiceError('ERR_SLUICE_COST', `cost must be at most ${LIMIT_MAX_TEXT}, got ${cost}`);
  return cost;
}
