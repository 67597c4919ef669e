import type { AlgorithmStep } from './step.js';

/**
 * Mirrors lua/token-bucket.lua: GCRA, the instant the bucket is full again (TAT) as q + r / limit µs,
 * q whole, 0 <= r < limit. Redis stores it as "q" (r = 0) or "q r".
 */
export interface TokenBucketState {
  q: number;
  r: number;
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
    const dq = Math.floor(debt / limit);
    next = { state: { q: t + dq, r: debt - dq * limit }, ttlMs: Math.ceil(debt / (limit * 1000)) };
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
