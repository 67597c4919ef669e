import type { AdjustStep, AlgorithmStep } from './algorithm.js';

/** Mirrors lua/concurrent.lua: each held slot and when its lease ends (ms). */
export type ConcurrentState = Map<string, number>;

export const concurrent: AlgorithmStep<ConcurrentState> = (state, now, p, _cost, apply, slot = '') => {
  let held = 0;
  if (state) for (const ends of state.values()) if (ends > now) held++;
  const ok = held + 1 <= p.limit;
  let next: { state: ConcurrentState; ttlMs: number } | undefined;
  if (ok && apply) {
    // The stored map, in place: the leases that ended go.
    const leases = state ?? new Map<string, number>();
    for (const [s, ends] of leases) if (ends <= now) leases.delete(s);
    // A lease ends on a whole ms, rounded up, as the Lua stores it.
    const ends = Math.ceil(now + p.windowMs);
    leases.set(slot, ends);
    held = held + 1;
    next = { state: leases, ttlMs: Math.ceil(ends - now) };
  }
  return { ok, remaining: Math.max(0, p.limit - held), resetMs: 0, retryAfterMs: ok ? 0 : 0.001, next };
};

/** Mirrors concurrent_adjust: gives `slot` back. */
export const concurrentAdjust: AdjustStep<ConcurrentState> = (state, now, _p, _delta, slot) => {
  if (!state?.has(slot)) return undefined;
  state.delete(slot);
  let last = 0;
  for (const ends of state.values()) if (ends > last) last = ends;
  return state.size === 0 ? null : { state, ttlMs: Math.max(0, last - now) };
};
