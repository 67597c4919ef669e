import type { AlgorithmStep } from './step.js';

/** Mirrors lua/fixed-window.lua. */
export interface FixedWindowState {
  idx: number;
  count: number;
}

export const fixedWindow: AlgorithmStep<FixedWindowState> = (state, now, p, cost, apply) => {
  const window = p.windowMs;
  let idx = Math.floor(now / window);
  let count = 0;
  if (state && state.idx >= idx) {
    idx = state.idx;
    count = state.count;
  }
  const ends = Math.max(1, Math.ceil((idx + 1) * window - now));
  const ok = count + cost <= p.limit;
  let next: { state: FixedWindowState; ttlMs: number } | undefined;
  if (ok && apply) {
    count = count + cost;
    next = { state: { idx, count }, ttlMs: ends };
  }
  return {
    ok,
    remaining: Math.max(0, Math.floor(p.limit - count)),
    resetMs: count > 0 ? ends : 0,
    retryAfterMs: ok ? 0 : ends,
    next,
  };
};
