import type { AdjustStep, AlgorithmStep } from './algorithm.js';

/** Mirrors lua/fixed-window.lua: the window's index (aligned) or its start in ms (start 'first-hit'), and its count. */
export interface FixedWindowState {
  idx: number;
  count: number;
}

/** Mirrors fixed_window_state: whether the key holds the window counted in (its count is then the key's, else 0). */
function isCurrent(state: FixedWindowState | undefined, now: number, window: number, firstHit: boolean): state is FixedWindowState {
  return state !== undefined && (firstHit ? now < state.idx + window : state.idx >= Math.floor(now / window));
}

/** The window counted in: the key's, else the one `now` falls in (or starts, with start 'first-hit'). */
const indexOf = (current: FixedWindowState | undefined, now: number, window: number, firstHit: boolean): number =>
  current !== undefined ? current.idx : firstHit ? now : Math.floor(now / window);

/** ms from now to the end of window `idx`; a first-hit window that starts now lasts the whole window. */
const leftOf = (current: FixedWindowState | undefined, idx: number, now: number, window: number, firstHit: boolean): number =>
  firstHit ? (current !== undefined ? idx + window - now : window) : (idx + 1) * window - now;

/** The key's state for window `idx` with `count`: the stored one updated in place when there is one. */
function counted(state: FixedWindowState | undefined, idx: number, count: number): FixedWindowState {
  if (state === undefined) return { idx, count };
  state.idx = idx;
  state.count = count;
  return state;
}

export const fixedWindow: AlgorithmStep<FixedWindowState> = (state, now, p, cost, apply) => {
  const window = p.windowMs;
  const firstHit = p.start === 'first-hit';
  const current = isCurrent(state, now, window, firstHit) ? state : undefined;
  const idx = indexOf(current, now, window, firstHit);
  let count = current?.count ?? 0;
  // The window's end in whole µs, and in whole ms from that, so that retry and reset round alike.
  const endsUs = Math.max(1, Math.ceil(leftOf(current, idx, now, window, firstHit) * 1000));
  const ends = Math.ceil(endsUs / 1000);
  const ok = count + cost <= p.limit;
  let next: { state: FixedWindowState; ttlMs: number } | undefined;
  if (ok && apply) {
    count = count + cost;
    next = { state: counted(state, idx, count), ttlMs: ends };
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
  const firstHit = p.start === 'first-hit';
  const current = isCurrent(state, now, window, firstHit) ? state : undefined;
  const idx = indexOf(current, now, window, firstHit);
  const count = current?.count ?? 0;
  const after = Math.max(0, count + delta);
  if (after === count) return undefined;
  if (after === 0) return null;
  const left = leftOf(current, idx, now, window, firstHit);
  return { state: counted(state, idx, after), ttlMs: Math.ceil(Math.max(1, Math.ceil(left * 1000)) / 1000) };
};
