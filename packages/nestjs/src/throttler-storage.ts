// sluiceThrottlerStorage: @nestjs/throttler's ThrottlerStorage on a sluice limiter, for apps that keep its
// module and guard. It answers as @nestjs/throttler's own (in-memory) storage does, and counts exactly across
// instances on Redis, one atomic consume per request:
// - its counting is a log of hits, each alive for `ttl`: a sliding-log policy `limit` per `ttl`;
// - a request over the limit blocks the key for `blockDuration` (counted, no hit while blocked), and the first
//   request after the block counts 1: a gate, a sliding log over `blockDuration` that every request passes
//   until a block fills it (G units added at once, so it frees when they leave: blockDuration later); the
//   log's hits are refunded then;
// - its X-RateLimit-Reset (timeToExpire) is a window that opens at a key's first hit, and a new one at the
//   first hit after it ends: a first-hit fixed window, which never refuses.
// With blockDuration <= 0 there is no gate: a request over the limit is refused, uncounted, until the oldest hit leaves.
import { createLimiter, type Decision, type Limiter, type LimiterOptions, memoryStore, type PolicyInput } from '@sluice/core';
import { badOption, nearest } from '@sluice/core/adapter';

/** What ThrottlerStorage.increment resolves to (@nestjs/throttler's ThrottlerStorageRecord). Times in seconds. */
export interface ThrottlerStorageRecord {
  totalHits: number;
  timeToExpire: number;
  isBlocked: boolean;
  timeToBlockExpire: number;
}

/** The limiter options the storage takes: where it counts, and what it does when the store cannot answer. */
export type SluiceThrottlerStorageOptions = Pick<
  LimiterOptions,
  'store' | 'prefix' | 'failMode' | 'fallback' | 'timeout' | 'breaker' | 'onEvent' | 'clock'
>;

const NAMES = ['store', 'prefix', 'failMode', 'fallback', 'timeout', 'breaker', 'onEvent', 'clock'];
/** A window that never refuses: what it counts is never near its limit. */
const NEVER = 1e12;

interface Policies {
  /** The limiter of one (ttl, limit, blockDuration): its own policies, so that a request passes none to parse. */
  limiter: Limiter;
  hits: PolicyInput;
  gate: PolicyInput | undefined;
  /** Units a block adds to the gate: more than the hits any blockDuration can admit. */
  fill: number;
}

function policiesOf(ttl: number, limit: number, blockDuration: number, make: (policy: PolicyInput[]) => Limiter): Policies {
  const hits: PolicyInput = { limit, window: ttl, algorithm: 'sliding-log', name: 'throttler' };
  const timer: PolicyInput = { limit: NEVER, window: ttl, algorithm: 'fixed-window', start: 'first-hit', name: 'throttler-window' };
  if (blockDuration <= 0) return { limiter: make([hits, timer]), hits, gate: undefined, fill: 0 };
  const fill = limit * Math.ceil(blockDuration / ttl) + 1;
  const gate: PolicyInput = { limit: fill, window: blockDuration, algorithm: 'sliding-log', name: 'throttler-block' };
  return { limiter: make([hits, timer, gate]), hits, gate, fill };
}

const seconds = (ms: number) => Math.ceil(ms / 1000);

/**
 * @nestjs/throttler's ThrottlerStorage on sluice: `ThrottlerModule.forRoot({ throttlers, storage:
 * sluiceThrottlerStorage({ store }) })`. The same statuses, headers and records as @nestjs/throttler's own
 * storage (named throttlers, its counting, blockDuration), counted in `store` (a redisStore: exact across
 * instances), with sluice's deadlines and fail mode. Limits up to 5000 per ttl (one sorted-set member per hit).
 * Bad options throw here.
 * @example ThrottlerModule.forRoot({ throttlers: [{ ttl: 60_000, limit: 10 }], storage: sluiceThrottlerStorage({ store: redisStore({ client }) }) })
 */
export function sluiceThrottlerStorage(options: SluiceThrottlerStorageOptions = {}): {
  increment(key: string, ttl: number, limit: number, blockDuration: number, throttlerName: string): Promise<ThrottlerStorageRecord>;
} {
  if (options === null || typeof options !== 'object') badOption('options', 'an object', options);
  for (const name of Object.keys(options)) {
    if (!NAMES.includes(name))
      badOption(name, `absent: not an option of sluiceThrottlerStorage (did you mean ${nearest(name, NAMES) ?? NAMES.join(', ')}?)`, name);
  }
  // One store for every limiter (a memory store made here when none is given). No deny cache: a denial read
  // from it could not tell a block from the denial that starts one.
  const given = { ...options, store: options.store ?? memoryStore(), denyCache: false };
  createLimiter(given); // bad options throw here, not at the first request
  const make = (policy: PolicyInput[]) => createLimiter({ ...given, policy });
  const cache = new Map<string, Policies>();

  async function increment(key: string, ttl: number, limit: number, blockDuration: number, throttlerName: string) {
    const id = `${ttl}/${limit}/${blockDuration}`;
    let p = cache.get(id);
    if (p === undefined) {
      p = policiesOf(ttl, limit, blockDuration, make);
      cache.set(id, p);
    }
    const scope = `throttler:${throttlerName}`;
    const d = await p.limiter.consume(key, { scope });
    const [hits, timer, gate] = d.policies;
    const timeToExpire = timer === undefined || timer.resetMs === 0 ? seconds(ttl) : seconds(timer.resetMs);
    if (d.allowed) {
      return { totalHits: hits === undefined ? 0 : limit - hits.remaining, timeToExpire, isBlocked: false, timeToBlockExpire: 0 };
    }
    const blocked = (retryAfterMs: number): ThrottlerStorageRecord => ({
      totalHits: limit + 1,
      timeToExpire,
      isBlocked: true,
      timeToBlockExpire: seconds(retryAfterMs),
    });
    // Refused by the hits alone, as the store counted them: the request that starts a block.
    const starts = p.gate !== undefined && d.source === 'store' && hits !== undefined && hits.retryAfterMs > 0 && gate?.retryAfterMs === 0;
    if (!starts) return blocked(gate !== undefined && gate.retryAfterMs > 0 ? gate.retryAfterMs : d.retryAfterMs);
    await startBlock(key, scope, p, limit);
    return blocked(blockDuration);
  }

  /** Fills the gate for blockDuration, then refunds the hits: after the block, the key counts from nothing. */
  async function startBlock(key: string, scope: string, p: Policies, limit: number): Promise<Decision> {
    await p.limiter.adjust(key, p.fill, { scope, policy: p.gate as PolicyInput });
    return p.limiter.adjust(key, -limit, { scope, policy: p.hits });
  }

  return { increment };
}
