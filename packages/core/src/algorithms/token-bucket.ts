import type { Policy } from '../policy/policy.js';
import type { AdjustStep, AlgorithmStep, ReserveStep } from './algorithm.js';

/**
 * Mirrors lua/token-bucket.lua: GCRA, the instant the bucket is full again (TAT) as q + r / limit µs,
 * q whole, 0 <= r < limit. Redis stores it as "q" (r = 0) or "q r". The key expires at the first
 * multiple of 1/64 of the time to refill from empty at or after TAT.
 */
export interface TokenBucketState {
  q: number;
  r: number;
}

/** The key's expiry (µs) for TAT q + r / limit: the first multiple of `quantum` at or after it. */
function expiryOf(q: number, r: number, quantum: number): number {
  return Math.ceil((r > 0 ? q + 1 : q) / quantum) * quantum;
}

/** The state for `debt` at t (µs), written into the stored one when there is one, and how long it matters. */
function charged(
  state: TokenBucketState | undefined,
  t: number,
  debt: number,
  p: Policy,
  w: number,
): { state: TokenBucketState; ttlMs: number } {
  const { limit, burst } = p;
  const dq = Math.floor(debt / limit);
  const q = t + dq;
  const r = debt - dq * limit;
  const quantum = Math.max(1, Math.floor((burst * w) / limit / 64));
  // The stored state is updated in place: a new object per decision would outlive a young collection in the store.
  const next = state ?? { q, r };
  next.q = q;
  next.r = r;
  return { state: next, ttlMs: Math.ceil((expiryOf(q, r, quantum) - t) / 1000) };
}

export const tokenBucket: AlgorithmStep<TokenBucketState> = (state, now, p, cost, apply) => {
  const { limit, burst } = p;
  const t = Math.floor(now * 1000 + 0.5);
  const w = p.windowMs * 1000;
  // debt = (TAT - t) * limit = (burst - tokens) * W; a missing key is a full bucket.
  let debt = state ? Math.max(0, (state.q - t) * limit + state.r) : 0;
  const need = cost * w;
  const ok = burst * w - debt >= need;
  let next: { state: TokenBucketState; ttlMs: number } | undefined;
  if (ok && apply) {
    debt = debt + need;
    next = charged(state, t, debt, p, w);
  }
  // The shortfall, (cost - tokens) * W, refills at `limit` per µs.
  const retryAfterMs = ok ? 0 : Math.max(1, Math.ceil((need - (burst * w - debt)) / limit)) / 1000;
  return {
    ok,
    remaining: Math.max(0, Math.floor((burst * w - debt) / w)),
    resetMs: Math.ceil(debt / (limit * 1000)),
    retryAfterMs,
    next,
  };
};

/** Mirrors token_bucket_adjust: the debt moves by delta without a check; a full bucket is no key. */
export const tokenBucketAdjust: AdjustStep<TokenBucketState> = (state, now, p, delta) => {
  const { limit, burst } = p;
  const t = Math.floor(now * 1000 + 0.5);
  const w = p.windowMs * 1000;
  let debt = (state ? Math.max(0, (state.q - t) * limit + state.r) : 0) + delta * w;
  if (debt <= 0) return state ? null : undefined;
  // As the script: at most 10000 days (864e12 µs) of wait past a full refill, however many adjustments add up.
  debt = Math.min(debt, 864e12 * limit + burst * w);
  return charged(state, t, debt, p, w);
};

/** Mirrors token_bucket_reserve: a place in line is the cost charged now, past a full debt if need be. */
export const tokenBucketReserve: ReserveStep<TokenBucketState> = (state, now, p, cost) => tokenBucketAdjust(state, now, p, cost, '');
