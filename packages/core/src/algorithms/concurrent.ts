import type { AdjustStep, AlgorithmStep } from './algorithm.js';

/** Mirrors lua/concurrent.lua: each held slot and when its lease ends (ms). */
export type ConcurrentState = ReadonlyMap<string, number>;

export const concurrent: AlgorithmStep<ConcurrentState> = (state, now, p, _cost, apply, slot = '') => {
  let held = 0;
  if (state) for (const ends of state.values()) if (ends > now) held++;
  const ok = held + 1 <= p.limit;
  let next: { state: ConcurrentState; ttlMs: number } | undefined;
  if (ok && apply) {
    const leases = new Map<string, number>();
    if (state) for (const [s, ends] of state) if (ends > now) leases.set(s, ends);
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
  const leases = new Map(state);
  leases.delete(slot);
  let last = 0;
  for (const ends of leases.values()) if (ends > last) last = ends;
  return leases.size === 0 ? null : { state: leases, ttlMs: Math.max(0, last - now) };
};
