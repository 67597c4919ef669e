// createLimiter's `regions` option: one limit across regions. Its table, its checks, and what it asks of the
// limiter's other options (one token-bucket policy, stores with leases), all at construction.
import { type Duration, parseDuration } from '../duration.js';
import { badOption } from '../errors.js';
import { checkNames, isPositiveInteger, type OptionSpec, ownCopy, type Resolved, spec } from '../options.js';
import type { Policy } from '../policy/policy.js';
import type { Store } from '../store/contract.js';

/** createLimiter's `regions`: this limiter is one region's, and the policy is one limit over every region. */
export interface RegionsOptions {
  /** The store that holds each key's global bucket and grants tokens to the regions: a redisStore. Required. */
  home: Store;
  /** This region's name: 1 to 64 printable characters without '|'. Required. */
  region: string;
  /** How often a region may ask the home per key; a grant lasts two. Default '1s'. */
  lease?: Duration;
  /** A key's first request in this region: 'wait' for its first lease (within `timeout`), or 'share': pass within the static share. Default 'wait'. */
  noLease?: 'wait' | 'share';
  /** The number of regions, for the static share (the policy / count). Default: the regions the home has seen. */
  count?: number;
  /** ms budget of a call to the home: a cross-region round trip, apart from the store's `timeout`. Default '1s'. */
  timeout?: Duration;
}

const REGION = /^[ -{}~]{1,64}$/; // printable ASCII without '|', the home's field separator

function isLeaseStore(v: unknown, n: string): Store {
  if (v === null || typeof v !== 'object' || typeof (v as Store).decide !== 'function')
    badOption(n, 'a Store with leases, such as redisStore({ client })', v);
  if ((v as Store).leases === undefined) badOption(n, 'a Store with leases, such as redisStore({ client })', v, 'this store has none');
  return v as Store;
}

function isRegion(v: unknown, n: string): string {
  if (typeof v !== 'string' || !REGION.test(v)) badOption(n, "a name of 1 to 64 printable characters without '|'", v);
  return v;
}

function isNoLease(v: unknown, n: string): 'wait' | 'share' {
  if (v !== 'wait' && v !== 'share') badOption(n, "'wait' or 'share'", v);
  return v;
}

/** The `regions` options, each once: its check and its default. */
const REGIONS_OPTIONS = {
  home: spec(isLeaseStore),
  region: spec(isRegion),
  lease: spec(parseDuration, 1000),
  noLease: spec(isNoLease, 'wait' as const),
  count: spec(isPositiveInteger),
  timeout: spec(parseDuration, 1000),
} satisfies { [K in keyof RegionsOptions]-?: OptionSpec<unknown> };

export type ResolvedRegions = Resolved<typeof REGIONS_OPTIONS> & { home: Store; region: string };

/** `regions`, checked (names prefixed 'regions.'), defaults applied. */
export function resolveRegions(v: unknown, n: string): ResolvedRegions {
  if (v === null || typeof v !== 'object') badOption(n, '{ home, region, lease?, noLease?, count?, timeout? }', v);
  checkNames(v, Object.keys(REGIONS_OPTIONS), 'a regions option', `${n}.`);
  const given = ownCopy(v);
  for (const required of ['home', 'region'] as const)
    if (given[required] === undefined)
      badOption(
        `${n}.${required}`,
        required === 'home' ? 'a Store with leases, such as redisStore({ client })' : 'a region name',
        undefined,
      );
  const o: Record<string, unknown> = {};
  for (const [k, entry] of Object.entries(REGIONS_OPTIONS) as [string, OptionSpec<unknown>][])
    o[k] = given[k] === undefined ? entry.default : entry.check(given[k], `${n}.${k}`);
  return o as ResolvedRegions;
}

/** What `regions` asks of the rest: its own store with leases, one token-bucket policy, no shards. Throws naming the option. */
export function checkRegionsWith(o: { store: Store | undefined; policy?: Policy[]; shards: number }, regions: ResolvedRegions): void {
  if (o.store?.leases === undefined)
    badOption('store', "a Store with leases when `regions` is given (the region's own Redis: redisStore({ client }))", o.store);
  if (o.store === regions.home) badOption('regions.home', "a store apart from `store` (the region's own)", regions.home);
  const policies = o.policy;
  if (policies === undefined || policies.length !== 1 || policies[0]?.algorithm !== 'token-bucket')
    badOption(
      'policy',
      'one token-bucket policy when `regions` is given (the global budget)',
      policies === undefined ? undefined : `${policies.length} policies`,
    );
  if (o.shards !== 1) badOption('shards', '1 when `regions` is given (a key is one lease)', o.shards);
}
