import { performance } from 'node:perf_hooks';

/** A call in flight: a node of the list of calls in flight, oldest first. */
interface Call {
  at: number;
  prev: Call | undefined;
  next: Call | undefined;
  /** 'due' once its time is up and it waits for the next I/O poll to fail. */
  state: 'waiting' | 'due' | 'settled';
  reject: (error: Error) => void;
}

/**
 * Deadlines for calls that all get the same `ms`: one timer for every call in flight (they expire in
 * the order they started) instead of a timer set and cleared per call. Calls in flight form a linked
 * list that a call leaves as soon as it settles, so nothing is held past its answer. A call whose time
 * is up fails only after the event loop's next poll for I/O, so that a reply which arrived while a busy
 * process was late to its timers still counts.
 * @example const within = createDeadlines(50, () => new Error('timed out')); await within(store.decide(r));
 */
export function createDeadlines(ms: number, timedOut: () => Error): <T>(promise: Promise<T>) => Promise<T> {
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
        for (const call of due) {
          if (call.state !== 'due') continue;
          call.state = 'settled';
          call.reject(timedOut());
        }
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

  return function within<T>(promise: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const call: Call = { at: performance.now() + ms, prev: tail, next: undefined, state: 'waiting', reject };
      if (tail === undefined) head = call;
      else tail.next = call;
      tail = call;
      if (timer === undefined) timer = setTimeout(fire, ms);
      promise.then(
        (value) => settle(call) && resolve(value),
        (error: unknown) => settle(call) && reject(error),
      );
    });
  };
}
