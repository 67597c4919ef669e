import { performance } from 'node:perf_hooks';
import { clearTimeout, setImmediate, setTimeout } from './timers.js';

/**
 * A call in flight: a node of the list of calls in flight, oldest first, and who hears how it ends. A
 * caller may make its own object one (store-call.ts does: one object per call on the decision path).
 */
export interface Call<T = never> {
  /** performance.now() ms at which its time is up. */
  at: number;
  prev: Call<never> | undefined;
  next: Call<never> | undefined;
  /** 'due' once its time is up and it waits for the next I/O poll to fail. */
  state: 'waiting' | 'due' | 'settled';
  /** Hears the call's first answer, or the deadline's error. */
  settled(error: unknown, value?: T): void;
}

/** How a watched call ends: with its value, its error, or the deadline's error; exactly once. */
export type Settle<T> = (error: unknown, value?: T) => void;

/**
 * Deadlines for calls that all get the same `ms`: one timer for every call in flight (they expire in
 * the order they started) instead of a timer set and cleared per call. Calls in flight form a linked
 * list that a call leaves as soon as it settles, so nothing is held past its answer. A call whose time
 * is up fails only after the event loop's next poll for I/O, so that a reply which arrived while a busy
 * process was late to its timers still counts. Callbacks rather than a promise per call: this is on
 * every decision's path; and a class rather than closures, so that every limiter's deadlines run the
 * same code (bench/limiters.mjs).
 * @example const deadlines = new Deadlines(50, () => new Error('timed out')); store.decideWith(r, deadlines.watch(call)); // call: a Call, its `at` set
 */
export class Deadlines {
  private head: Call | undefined = undefined;
  private tail: Call | undefined = undefined;
  private timer: ReturnType<typeof setTimeout> | undefined = undefined;

  constructor(
    private readonly ms: number,
    private readonly timedOut: () => Error,
  ) {}

  /** Starts a call's deadline (its `at`) and returns the callback its answer goes to, which passes on only a first answer. */
  watch<T>(call: Call<T>): Settle<T> {
    call.prev = this.tail;
    if (this.tail === undefined) this.head = call;
    else this.tail.next = call;
    this.tail = call;
    if (this.timer === undefined) this.timer = setTimeout(this.fire, this.ms);
    return (error, value) => {
      if (this.settle(call)) call.settled(error, value);
    };
  }

  private unlink(call: Call): void {
    if (call.prev === undefined) this.head = call.next;
    else call.prev.next = call.next;
    if (call.next === undefined) this.tail = call.prev;
    else call.next.prev = call.prev;
    call.prev = call.next = undefined;
  }

  private readonly fire = (): void => {
    this.timer = undefined;
    const now = performance.now();
    const due: Call[] = [];
    while (this.head !== undefined && this.head.at <= now) {
      const call = this.head;
      this.unlink(call);
      call.state = 'due';
      due.push(call);
    }
    if (this.head !== undefined) this.timer = setTimeout(this.fire, Math.max(1, this.head.at - now));
    if (due.length > 0) {
      setImmediate(() => {
        for (const call of due) if (this.settle(call)) call.settled(this.timedOut());
      });
    }
  };

  /** True for the first answer of a call still waiting or due; the call leaves the list. */
  private settle(call: Call): boolean {
    if (call.state === 'settled') return false;
    if (call.state === 'waiting') this.unlink(call);
    call.state = 'settled';
    if (this.head === undefined && this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    return true;
  }
}
