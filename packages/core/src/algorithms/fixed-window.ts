import type { AdjustStep, AlgorithmStep } from './algorithm.js';

/** Mirrors lua/fixed-window.lua: the window's index (aligned) or its start in ms (start 'first-hit'), and its count. */
export interface FixedWindowState {
  idx: number;
  count: number;
}

/** Mirrors fixed_window_state: the window counted in, its count, ms from now to its end, and whether the key holds it. */
function current(
  state: FixedWindowState | undefined,
  now: number,
  window: number,
  firstHit: boolean,
): { idx: number; count: number; left: number; same: boolean } {
  if (firstHit) {
    if (state && now < state.idx + window) return { ...state, left: state.idx + window - now, same: true };
    return { idx: now, count: 0, left: window, same: false };
  }
  const idx = Math.floor(now / window);
  if (state && state.idx >= idx) return { ...state, left: (state.idx + 1) * window - now, same: true };
  return { idx, count: 0, left: (idx + 1) * window - now, same: false };
}

export const fixedWindow: AlgorithmStep<FixedWindowState> = (state, now, p, cost, apply) => {
  const counted = current(state, now, p.windowMs, p.start === 'first-hit');
  const { idx } = counted;
  let count = counted.count;
  // The window's end in whole µs, and in whole ms from that, so that retry and reset round alike.
  const endsUs = Math.max(1, Math.ceil(counted.left * 1000));
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
  const { idx, count, left } = current(state, now, p.windowMs, p.start === 'first-hit');
  const after = Math.max(0, count + delta);
  if (after === count) return undefined;
  if (after === 0) return null;
  return { state: { idx, count: after }, ttlMs: Math.ceil(Math.max(1, Math.ceil(left * 1000)) / 1000) };
};
