import type { AdjustStep, AlgorithmStep, ReserveStep } from './algorithm.js';

/** Mirrors lua/sliding-window.lua. */
export interface SlidingWindowState {
  idx: number;
  cur: number;
  prev: number;
}

/** Mirrors sliding_window_state: the window counted in; the key's, else the one `now` falls in. */
const indexOf = (state: SlidingWindowState | undefined, now: number, window: number): number => {
  const idx = Math.floor(now / window);
  return state && state.idx >= idx ? state.idx : idx;
};

/** The count of window `idx` from the key's state, and (previous) the count of the window before it. */
function countOf(state: SlidingWindowState | undefined, idx: number, previous: boolean): number {
  if (state === undefined) return 0;
  if (state.idx === idx) return previous ? state.prev : state.cur;
  return previous && state.idx === idx - 1 ? state.cur : 0;
}

/** The key's state: the stored one updated in place when there is one. */
function counted(state: SlidingWindowState | undefined, idx: number, cur: number, prev: number): SlidingWindowState {
  if (state === undefined) return { idx, cur, prev };
  state.idx = idx;
  state.cur = cur;
  state.prev = prev;
  return state;
}

export const slidingWindow: AlgorithmStep<SlidingWindowState> = (state, now, p, cost, apply) => {
  const { limit, windowMs: window } = p;
  const idx = indexOf(state, now, window);
  const prev = countOf(state, idx, true);
  let cur = countOf(state, idx, false);
  const start = idx * window;
  const weight = (window - Math.max(0, now - start)) / window;
  let used = prev * weight + cur;
  const ok = used + cost <= limit;
  let next: { state: SlidingWindowState; ttlMs: number } | undefined;
  if (ok && apply) {
    cur = cur + cost;
    used = used + cost;
    next = { state: counted(state, idx, cur, prev), ttlMs: Math.ceil(start + 2 * window - now) };
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
  const idx = indexOf(state, now, window);
  const cur = countOf(state, idx, false);
  const prev = countOf(state, idx, true);
  const after = Math.max(0, cur + delta);
  if (after === cur) return undefined;
  if (after === 0 && prev === 0) return null;
  return { state: counted(state, idx, after, prev), ttlMs: Math.ceil(idx * window + 2 * window - now) };
};

/** Mirrors sliding_window_reserve: the cost counts in the window its turn `at` falls in (this one or a later one). */
export const slidingWindowReserve: ReserveStep<SlidingWindowState> = (state, now, p, cost, at) => {
  const window = p.windowMs;
  let idx = indexOf(state, now, window);
  let cur = countOf(state, idx, false);
  let prev = countOf(state, idx, true);
  const turn = Math.floor(at / window);
  if (turn > idx) {
    prev = turn === idx + 1 ? cur : 0;
    idx = turn;
    cur = 0;
  }
  return { state: counted(state, idx, cur + cost, prev), ttlMs: Math.ceil(idx * window + 2 * window - now) };
};
