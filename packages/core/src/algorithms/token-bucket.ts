import type { AlgorithmStep } from './step.js';

/** Mirrors lua/token-bucket.lua. */
export interface TokenBucketState {
  tokens: number;
  ts: number;
}

export const tokenBucket: AlgorithmStep<TokenBucketState> = (state, now, p, cost, apply) => {
  const burst = p.burst;
  let tokens = state ? state.tokens : burst;
  const ts = state ? state.ts : now;
  const rate = p.limit / p.windowMs;
  const t = Math.max(now, ts);
  tokens = Math.min(burst, tokens + (t - ts) * rate);
  const ok = tokens >= cost;
  let next: { state: TokenBucketState; ttlMs: number } | undefined;
  if (ok && apply) {
    tokens = tokens - cost;
    next = { state: { tokens, ts: t }, ttlMs: Math.ceil((burst - tokens) / rate) };
  }
  const retryAfterMs = ok ? 0 : Math.max(1, Math.ceil((cost - tokens) / rate));
  return { ok, remaining: Math.max(0, Math.floor(tokens)), resetMs: Math.ceil((burst - tokens) / rate), retryAfterMs, next };
};
