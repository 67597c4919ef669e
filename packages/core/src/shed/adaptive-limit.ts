// The shedder's rule (shedder.ts): Netflix concurrency-limits' Gradient2 on a latency floor, with the event
// loop's delay as a second signal. Latency samples and demand in, the concurrency limit out, once a window.
import { type IntervalHistogram, monitorEventLoopDelay } from 'node:perf_hooks';

// The rule: Netflix concurrency-limits' Gradient2 (Gradient2Limit), with its defaults, on a latency floor.
export const WINDOW_MS = 100; // one adaptation per 100 ms of traffic: fast enough to follow a flood in Node
const MIN_SAMPLES = 5; // a window's latency counts once it holds this many samples (else it carries on)
const TOLERANCE = 1.5; // Gradient2's rttTolerance: latency up to 1.5x the floor is not queueing
const SMOOTHING = 0.2; // Gradient2's smoothing
const QUEUE_SIZE = 4; // Gradient2's queueSize: what the limit grows by (before smoothing) per window
const MIN_GRADIENT = 0.5; // Gradient2: one window never cuts the limit by more than half
const FLOOR_RISE = 0.01; // the floor follows a slower service by 1% of the gap per window (~10 s)

/** The rule and its window: latency samples and demand in, the concurrency limit out. */
export class AdaptiveLimit {
  limit: number;
  /** The limit before the last adaptation. */
  previous: number;
  shed = false; // something was shed in this window: demand is above the limit
  private estimate: number;
  private floor = Number.POSITIVE_INFINITY;
  private sum = 0;
  private samples = 0;
  /** The most slots held at once in this window. */
  peak = 0;
  constructor(
    private readonly bounds: { initial: number; min: number; max: number },
    private readonly targetDelay: number,
    private readonly loopDelay: () => number,
    private windowStart: number,
  ) {
    this.limit = this.previous = this.estimate = bounds.initial;
  }
  sample(latencyMs: number): void {
    this.sum += latencyMs;
    this.samples++;
  }

  /** Closes a window of WINDOW_MS (true) unless it holds too few samples and may run on. */
  adapt(now: number, inFlight: number): boolean {
    if (now - this.windowStart < WINDOW_MS) return false;
    const { min, max } = this.bounds;
    const delay = this.loopDelay();
    if (delay > this.targetDelay) {
      this.estimate = Math.max(min, this.estimate * Math.max(MIN_GRADIENT, this.targetDelay / delay));
    } else if (this.samples >= MIN_SAMPLES) {
      const latency = this.sum / this.samples;
      this.floor = latency < this.floor ? latency : this.floor + (latency - this.floor) * FLOOR_RISE;
      const gradient = Math.max(MIN_GRADIENT, Math.min(1, (TOLERANCE * this.floor) / latency));
      // Gradient2: an app-limited service (less than half the limit used, nothing refused) does not grow.
      if (gradient < 1 || this.shed || this.peak >= this.estimate / 2) {
        const next = this.estimate * gradient + QUEUE_SIZE;
        // Smoothed on the way up only: Gradient2 smooths every sample, but here a window of 100 ms holds tens of
        // them, and a flood must not run a second at a latency the rule already knows is too high.
        const smoothed = next < this.estimate ? next : this.estimate * (1 - SMOOTHING) + next * SMOOTHING;
        this.estimate = Math.max(min, Math.min(max, smoothed));
      }
    } else if (now - this.windowStart < 10 * WINDOW_MS) return false;
    this.previous = this.limit;
    this.limit = Math.max(min, Math.min(max, Math.floor(this.estimate)));
    this.windowStart = now;
    this.sum = this.samples = 0;
    this.peak = inFlight;
    this.shed = false;
    return true;
  }
}

/** The event loop's delay in ms since the last read: the histogram's max (a stall shows whole, a mean would hide it). */
export function loopDelayReader(): { read: () => number; close: () => void } {
  const h: IntervalHistogram = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  return {
    read() {
      const ms = h.count > 0 ? h.max / 1e6 : 0;
      h.reset();
      return ms;
    },
    close: () => h.disable(),
  };
}
