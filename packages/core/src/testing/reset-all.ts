// resetAll(): a prefix's every key on a store, and what limiters hold of it locally, gone between tests.
import { badOption } from '../errors.js';
import { forgetLocally } from '../held-locally.js';
import { LIMITER_OPTIONS } from '../limiter-options.js';
import { checkNames } from '../options.js';
import type { Store } from '../store/contract.js';

/** Options of resetAll(). */
export interface ResetAllOptions {
  /** The store: memoryStore(), redisStore() (standalone, Sentinel or Cluster: every master), or one with resetPrefix. */
  store: Store;
  /** The prefix whose keys go, the limiters' `prefix` ('sluice' unless given). Required: no default. */
  prefix: string;
}

/**
 * Deletes every counter, idempotency id, ban count and rule of `prefix` on `store`, on a Redis Cluster on
 * every master, and nothing of another prefix; the limiters on the store drop what they hold of it
 * (deny cache, prefilter and fallback counts). For tests, between them: it scans the store's keys.
 * @example afterEach(() => resetAll({ store, prefix: 'sluice' }));
 */
export async function resetAll(options: ResetAllOptions): Promise<void> {
  if (options === null || typeof options !== 'object') badOption('resetAll options', 'an object { store, prefix }', options);
  checkNames(options, ['store', 'prefix'], 'a resetAll option');
  const { store, prefix } = options;
  if (prefix === undefined)
    badOption('prefix', "given: resetAll deletes one prefix's keys (the limiters' prefix, 'sluice' by default)", prefix);
  LIMITER_OPTIONS.prefix.check(prefix, 'prefix');
  if (store === null || typeof store !== 'object' || typeof store.resetPrefix !== 'function')
    badOption('store', 'a store that can delete a prefix: memoryStore(), redisStore({ client }), or one with resetPrefix()', store);
  await store.resetPrefix(prefix);
  await forgetLocally(store, prefix);
}
