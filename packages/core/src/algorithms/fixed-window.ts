import type { AdjustStep, AlgorithmStep } from './algorithm.js';

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
  // The window's end in whole µs, and in whole ms from that, so that retry and reset round alike.
  const endsUs = Math.max(1, Math.ceil(((idx + 1) * window - now) * 1000));
  const ends = Math.ceil(endsUs / 1000);
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
    retryAfterMs: ok ? 0 : endsUs / 1000,
    next,
  };
};

/** Mirrors fixed_window_adjust: the current window's count moves by delta, never below 0. */
export const fixedWindowAdjust: AdjustStep<FixedWindowState> = (state, now, p, delta) => {
  const window = p.windowMs;
  let idx = Math.floor(now / window);
  let count = 0;
  if (state && state.idx >= idx) {
    idx = state.idx;
    count = state.count;
  }
  const after = Math.max(0, count + delta);
  if (after === count) return undefined;
  if (after === 0) return null;
  return { state: { idx, count: after }, ttlMs: Math.ceil(Math.max(1, Math.ceil(((idx + 1) * window - now) * 1000)) / 1000) };
};
