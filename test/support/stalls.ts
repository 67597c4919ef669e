// How late this process runs its timers: a busy machine stalls the event loop, and a stalled loop runs a
// deadline late. A timing assertion adds the stalls measured while its calls were out to its margin.
//
//   const stalls = meterStalls();
//   ... await the calls ...
//   stalls.stop();
//   expect(slowestMs).toBeLessThan(timeout + 50 + stalls.total());
//   expect(callMs).toBeLessThan(timeout + 50 + stalls.within(callStart, callStart + callMs));

export interface StallMeter {
  /** The summed lateness of every tick so far, in ms. */
  total(): number;
  /** The lateness of the ticks whose stall overlaps [from, to] (performance.now() times), in ms. */
  within(from: number, to: number): number;
  /** Stops ticking; the readings stay. */
  stop(): void;
}

/** Starts a tick every `tickMs` (default 10) and records how late each one ran. */
export function meterStalls(tickMs = 10): StallMeter {
  const ticks: Array<{ at: number; late: number }> = [];
  let sum = 0;
  let lastTick = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    const late = Math.max(0, now - lastTick - tickMs);
    lastTick = now;
    sum += late;
    if (late > 0) ticks.push({ at: now, late });
  }, tickMs);
  return {
    total: () => sum,
    within: (from, to) => ticks.filter((t) => t.at >= from && t.at - t.late - tickMs <= to).reduce((a, t) => a + t.late, 0),
    stop: () => clearInterval(timer),
  };
}
