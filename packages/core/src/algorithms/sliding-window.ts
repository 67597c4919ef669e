import type { AdjustStep, AlgorithmStep } from './algorithm.js';

/** Mirrors lua/sliding-window.lua. */
export interface SlidingWindowState {
  idx: number;
  cur: number;
  prev: number;
}

export const slidingWindow: AlgorithmStep<SlidingWindowState> = (state, now, p, cost, apply) => {
  const { limit, windowMs: window } = p;
  let idx = Math.floor(now / window);
  let cur = 0;
  let prev = 0;
  if (state) {
    if (state.idx >= idx) {
      idx = state.idx;
      cur = state.cur;
      prev = state.prev;
    } else if (state.idx === idx - 1) {
      prev = state.cur;
    }
  }
  const start = idx * window;
  const weight = (window - Math.max(0, now - start)) / window;
  let used = prev * weight + cur;
  const ok = used + cost <= limit;
  let next: { state: SlidingWindowState; ttlMs: number } | undefined;
  if (ok && apply) {
    cur = cur + cost;
    used = used + cost;
    next = { state: { idx, cur, prev }, ttlMs: Math.ceil(start + 2 * window - now) };
  }
  let resetMs = 0;
  if (cur > 0) resetMs = Math.ceil(start + 2 * window - now);
  else if (prev > 0) resetMs = Math.ceil(start + window - now);
  let retryAfterMs = 0;
  if (!ok) {
    let at: number;
    if (cost > limit) at = start + 2 * window;
    else if (cur + cost <= limit) at = start + window * (1 - (limit - cost - cur) / prev);
    else at = start + window + window * (1 - (limit - cost) / cur);
    retryAfterMs = Math.max(1, Math.ceil((at - now) * 1000)) / 1000;
  }
  return { ok, remaining: Math.max(0, Math.floor(limit - used)), resetMs, retryAfterMs, next };
};

/** Mirrors sliding_window_adjust: the current window's count moves by delta, never below 0. */
export const slidingWindowAdjust: AdjustStep<SlidingWindowState> = (state, now, p, delta) => {
  const window = p.windowMs;
  let idx = Math.floor(now / window);
  let cur = 0;
  let prev = 0;
  if (state) {
    if (state.idx >= idx) {
      idx = state.idx;
      cur = state.cur;
      prev = state.prev;
    } else if (state.idx === idx - 1) {
      prev = state.cur;
    }
  }
  const after = Math.max(0, cur + delta);
  if (after === cur) return undefined;
  if (after === 0 && prev === 0) return null;
  return { state: { idx, cur: after, prev }, ttlMs: Math.ceil(idx * window + 2 * window - now) };
};
