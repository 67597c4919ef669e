// The fail-over load loop of the tests: workers that each call a limiter again and again (a pause of
// `pauseMs` between calls) while a test kills and promotes Redis nodes, recording every call: which
// worker, when it was made and answered (performance.now() ms), and its decision or error.
//
//   const load = startLoad(Array.from({ length: 5 }, () => ['hot', () => limiter.consume('hot')] as const));
//   ... kill, promote ...
//   await load.untilSettled(promotedAt); await load.stop();
import { performance } from 'node:perf_hooks';
import type { Decision } from '@sluice/core';
import { sleep } from './redis';
import { until } from './until';

/** One call of a worker. */
export interface Call<N extends string = string> {
  /** The worker's name. */
  name: N;
  /** performance.now() when the call was made, and when it answered. */
  start: number;
  end: number;
  /** end - start. */
  ms: number;
  decision?: Decision;
  error?: unknown;
}

export interface Load<N extends string = string> {
  /** Every call made so far, in the order they answered. */
  calls: Call<N>[];
  /** What the calls threw (none should: a limiter answers by its fail mode). */
  errors(): unknown[];
  /** The decisions of `name`'s calls (every worker's without it) among `calls`. */
  decisions(name?: N, calls?: Call<N>[]): Decision[];
  /** The last `n` decisions were all made by the store and answered after `since`. */
  settled(since: number, n?: number): boolean;
  /** Waits until settled(since, n), for at most `withinMs` after `since`; returns settled(since, n). */
  untilSettled(since: number, withinMs?: number, n?: number): Promise<boolean>;
  /** Stops the workers and waits for their calls under way. Idempotent. */
  stop(): Promise<void>;
}

/** Starts one loop per worker ([name, call]); each calls, records, pauses `pauseMs`, until stop(). */
export function startLoad<N extends string>(workers: ReadonlyArray<readonly [N, () => Promise<Decision>]>, pauseMs = 5): Load<N> {
  const calls: Call<N>[] = [];
  let stopped = false;
  const loop = async ([name, call]: readonly [N, () => Promise<Decision>]) => {
    while (!stopped) {
      const start = performance.now();
      let outcome: { decision: Decision } | { error: unknown };
      try {
        outcome = { decision: await call() };
      } catch (error) {
        outcome = { error };
      }
      const end = performance.now();
      calls.push({ name, start, end, ms: end - start, ...outcome });
      await sleep(pauseMs);
    }
  };
  const running = Promise.all(workers.map(loop));
  const load: Load<N> = {
    calls,
    errors: () => calls.filter((c) => 'error' in c).map((c) => c.error),
    decisions: (name, among = calls) =>
      among.filter((c) => c.decision !== undefined && (name === undefined || c.name === name)).map((c) => c.decision as Decision),
    settled(since, n = 20) {
      const answered = calls.filter((c) => c.decision !== undefined);
      return answered.length >= n && answered.slice(-n).every((c) => c.end > since && c.decision?.source === 'store');
    },
    untilSettled(since, withinMs = 15_000, n = 20) {
      const left = since + withinMs - performance.now();
      return until(() => load.settled(since, n), true, { withinMs: left, everyMs: 50 }).catch(() => false);
    },
    async stop() {
      stopped = true;
      await running;
    },
  };
  return load;
}
