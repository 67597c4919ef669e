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
    const kept = scores.slice(live);
    for (let i = 0; i < cost; i++) kept.push(now);
    count = count + cost;
    newest = now;
    next = { state: kept, ttlMs: Math.ceil(window) };
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
    const kept = scores.slice(firstAbove(scores, now - p.windowMs));
    for (let i = 0; i < delta; i++) kept.push(now);
    return { state: kept, ttlMs: Math.ceil(p.windowMs) };
  }
  if (scores.length === 0) return undefined;
  const kept = scores.slice(0, Math.max(0, scores.length + delta));
  // The set keeps its expiry in Redis; here it lives a window more, which no decision can tell apart.
  return kept.length === 0 ? null : { state: kept, ttlMs: Math.ceil(p.windowMs) };
};
