import { performance } from 'node:perf_hooks';

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

/** Starts a call's deadline (its `at`) and returns the callback its answer goes to, which passes on only a first answer. */
export type Watch = <T>(call: Call<T>) => Settle<T>;

/** How a watched call ends: with its value, its error, or the deadline's error; exactly once. */
export type Settle<T> = (error: unknown, value?: T) => void;

/**
 * Deadlines for calls that all get the same `ms`: one timer for every call in flight (they expire in
 * the order they started) instead of a timer set and cleared per call. Calls in flight form a linked
 * list that a call leaves as soon as it settles, so nothing is held past its answer. A call whose time
 * is up fails only after the event loop's next poll for I/O, so that a reply which arrived while a busy
 * process was late to its timers still counts. Callbacks rather than a promise per call: this is on
 * every decision's path.
 * @example const watch = createDeadlines(50, () => new Error('timed out')); store.decideWith(r, watch(call)); // call: a Call, its `at` set
 */
export function createDeadlines(ms: number, timedOut: () => Error): Watch {
  let head: Call | undefined;
  let tail: Call | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;

  function unlink(call: Call): void {
    if (call.prev === undefined) head = call.next;
    else call.prev.next = call.next;
    if (call.next === undefined) tail = call.prev;
    else call.next.prev = call.prev;
    call.prev = call.next = undefined;
  }

  function fire(): void {
    timer = undefined;
    const now = performance.now();
    const due: Call[] = [];
    while (head !== undefined && head.at <= now) {
      const call = head;
      unlink(call);
      call.state = 'due';
      due.push(call);
    }
    if (head !== undefined) timer = setTimeout(fire, Math.max(1, head.at - now));
    if (due.length > 0) {
      setImmediate(() => {
        for (const call of due) if (settle(call)) call.settled(timedOut());
      });
    }
  }

  /** True for the first answer of a call still waiting or due; the call leaves the list. */
  function settle(call: Call): boolean {
    if (call.state === 'settled') return false;
    if (call.state === 'waiting') unlink(call);
    call.state = 'settled';
    if (head === undefined && timer !== undefined) {
      clearTimeout(timer);
      timer = undefined;
    }
    return true;
  }

  /** Starts a call's deadline and returns the callback its answer goes to, which passes on only a first answer. */
  return function watch<T>(call: Call<T>): Settle<T> {
    call.prev = tail;
    if (tail === undefined) head = call;
    else tail.next = call;
    tail = call;
    if (timer === undefined) timer = setTimeout(fire, ms);
    return (error, value) => {
      if (settle(call)) call.settled(error, value);
    };
  };
}
