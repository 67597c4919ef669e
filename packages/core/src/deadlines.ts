import { performance } from 'node:perf_hooks';

interface Call {
  at: number;
  settled: boolean;
  fail(): void;
}

/**
 * Deadlines for calls that all get the same `ms`: one timer for every call in flight (they expire in
 * the order they started) instead of a timer set and cleared per call. A call whose time is up fails
 * only after the event loop's next poll for I/O, so that a reply which arrived while a busy process
 * was late to its timers still counts.
 * @example const within = createDeadlines(50, () => new Error('timed out')); await within(store.decide(r));
 */
export function createDeadlines(ms: number, timedOut: () => Error): <T>(promise: Promise<T>) => Promise<T> {
  let queue: Call[] = [];
  let head = 0;
  let inFlight = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;

  function arm(): void {
    timer = setTimeout(fire, Math.max(1, (queue[head] as Call).at - performance.now()));
  }

  function fire(): void {
    timer = undefined;
    const now = performance.now();
    const due: Call[] = [];
    while (head < queue.length && ((queue[head] as Call).at <= now || (queue[head] as Call).settled)) {
      const call = queue[head++] as Call;
      if (!call.settled) due.push(call);
    }
    if (head > 1024 && head * 2 > queue.length) {
      queue = queue.slice(head);
      head = 0;
    }
    if (head < queue.length) arm();
    if (due.length > 0) {
      setImmediate(() => {
        for (const call of due) call.fail();
      });
    }
  }

  return function within<T>(promise: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const settle = (): boolean => {
        if (call.settled) return false;
        call.settled = true;
        if (--inFlight === 0) {
          if (timer !== undefined) clearTimeout(timer);
          timer = undefined;
          queue = [];
          head = 0;
        }
        return true;
      };
      const call: Call = { at: performance.now() + ms, settled: false, fail: () => settle() && reject(timedOut()) };
      inFlight++;
      queue.push(call);
      if (timer === undefined) arm();
      promise.then(
        (value) => settle() && resolve(value),
        (error: unknown) => settle() && reject(error),
      );
    });
  };
}
