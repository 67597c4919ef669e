import type { AdjustStep, AlgorithmStep } from './algorithm.js';

/** Mirrors lua/sliding-log.lua: one score per admitted unit, ascending (the sorted set's scores). */
export type SlidingLogState = number[];

/** Index of the first score > bound in ascending `scores`. */
function firstAbove(scores: SlidingLogState, bound: number): number {
  let lo = 0;
  let hi = scores.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((scores[mid] as number) > bound) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** Drops the first `n` scores, in place: the stored array is kept rather than copied per decision. */
function dropFirst(scores: SlidingLogState, n: number): void {
  if (n === 0) return;
  scores.copyWithin(0, n);
  scores.length -= n;
}

export const slidingLog: AlgorithmStep<SlidingLogState> = (state, now, p, cost, apply) => {
  const { limit, windowMs: window } = p;
  const scores = state ?? [];
  let newest = scores.length > 0 ? scores[scores.length - 1] : undefined;
  if (newest !== undefined && newest > now) now = newest;
  const live = firstAbove(scores, now - window);
  let count = scores.length - live;
  const ok = count + cost <= limit;
  let next: { state: SlidingLogState; ttlMs: number } | undefined;
  if (ok && apply) {
    dropFirst(scores, live);
    for (let i = 0; i < cost; i++) scores.push(now);
    count = count + cost;
    newest = now;
    next = { state: scores, ttlMs: Math.ceil(window) };
  }
  let resetMs = 0;
  if (count > 0) resetMs = Math.max(1, Math.ceil((newest as number) + window - now));
  let retryAfterMs = 0;
  if (!ok) {
    // resetMs is whole ms, so already whole µs
    if (cost > limit) retryAfterMs = Math.max(1, resetMs);
    else retryAfterMs = Math.max(1, Math.ceil(((scores[live + count + cost - limit - 1] as number) + window - now) * 1000)) / 1000;
  }
  return { ok, remaining: Math.max(0, limit - count), resetMs, retryAfterMs, next };
};

/** Mirrors sliding_log_adjust: delta units at now without a check, or the newest -delta units go. */
export const slidingLogAdjust: AdjustStep<SlidingLogState> = (state, now, p, delta) => {
  const scores = state ?? [];
  if (delta > 0) {
    const newest = scores[scores.length - 1];
    if (newest !== undefined && newest > now) now = newest;
    dropFirst(scores, firstAbove(scores, now - p.windowMs));
    for (let i = 0; i < delta; i++) scores.push(now);
    return { state: scores, ttlMs: Math.ceil(p.windowMs) };
  }
  if (scores.length === 0) return undefined;
  scores.length = Math.max(0, scores.length + delta);
  // The set keeps its expiry in Redis; here it lives a window more, which no decision can tell apart.
  return scores.length === 0 ? null : { state: scores, ttlMs: Math.ceil(p.windowMs) };
};
