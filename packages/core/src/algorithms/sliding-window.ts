import type { AdjustStep, AlgorithmStep, ReserveStep } from './algorithm.js';

/** Mirrors lua/sliding-window.lua. */
export interface SlidingWindowState {
  idx: number;
  cur: number;
  prev: number;
}

/** Mirrors sliding_window_state: the window counted in, its count and the previous window's. */
function current(state: SlidingWindowState | undefined, now: number, window: number): SlidingWindowState {
  const idx = Math.floor(now / window);
  if (state && state.idx >= idx) return { ...state };
  return { idx, cur: 0, prev: state && state.idx === idx - 1 ? state.cur : 0 };
}

export const slidingWindow: AlgorithmStep<SlidingWindowState> = (state, now, p, cost, apply) => {
  const { limit, windowMs: window } = p;
  const counted = current(state, now, window);
  const { idx, prev } = counted;
  let cur = counted.cur;
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
  const { idx, cur, prev } = current(state, now, window);
  const after = Math.max(0, cur + delta);
  if (after === cur) return undefined;
  if (after === 0 && prev === 0) return null;
  return { state: { idx, cur: after, prev }, ttlMs: Math.ceil(idx * window + 2 * window - now) };
};

/** Mirrors sliding_window_reserve: the cost counts in the window its turn `at` falls in (this one or a later one). */
export const slidingWindowReserve: ReserveStep<SlidingWindowState> = (state, now, p, cost, at) => {
  const window = p.windowMs;
  let { idx, cur, prev } = current(state, now, window);
  const turn = Math.floor(at / window);
  if (turn > idx) {
    prev = turn === idx + 1 ? cur : 0;
    idx = turn;
    cur = 0;
  }
  return { state: { idx, cur: cur + cost, prev }, ttlMs: Math.ceil(idx * window + 2 * window - now) };
};
