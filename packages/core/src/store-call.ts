// The store call: a deadline on every call, and the circuit breaker in front of the store.
import { performance } from 'node:perf_hooks';
import { type Breaker, type BreakerMember, ownBreaker, sharedBreaker } from './breaker.js';
import { type Call, Deadlines } from './deadlines.js';
import type { ResolvedLimiterOptions } from './limiter-options.js';
import { type Store, StoreRefusal, type StoreReply, type StoreRequest } from './store/contract.js';
import { fakeTick } from './timers.js';

export class StoreTimeoutError extends Error {
  constructor(ms: number) {
    super(`store call timed out after ${ms} ms${fakeTick()}`);
    this.name = 'StoreTimeoutError';
  }
}

/**
 * Who hears how a store call ends: with the reply (latencyMs 0), or with the error (a failure or the
 * deadline) and how long it took. An object with a method rather than a callback, so that the caller's
 * one object per call can be its own listener (decide-shard.ts's StoreAsk).
 */
export interface StoreListener {
  answered(error: Error | undefined, reply: StoreReply | undefined, latencyMs: number): void;
}

export interface StoreCall {
  /** May a call go to the store now? False while the breaker is open: the fail mode answers instead. */
  allow(now: number): boolean;
  /** ms until a caller the store could not answer now should try again (the breaker's next probe); undefined without a breaker. */
  retryIn(now: number): number | undefined;
  /** Calls the store, under its deadline; the breaker learns the outcome. Answers `listener` exactly once. */
  decide(request: StoreRequest, now: number, listener: StoreListener): void;
  /** Leaves the shared breaker. */
  close(): void;
}

/** Reports a store call that could not be answered ('store-error'), naming the caller's key when there is one. */
export type ReportError = (key: string | undefined, error: Error | undefined, latencyMs: number) => void;

/**
 * How an operation asks the store (adjust, release; consume and peek take the same steps written out in
 * decide-shard.ts, a measured fast path): under the deadline and the breaker, `answer` reads the
 * reply; when the store cannot answer (the breaker open, an error, the deadline), the error is reported and
 * `without` answers (the fail mode). Not async: one promise per call.
 */
export function ask<T>(
  call: StoreCall,
  report: ReportError,
  key: string | undefined,
  request: StoreRequest,
  now: number,
  answer: (reply: StoreReply) => T,
  without: () => T | Promise<T>,
): Promise<T> {
  if (!call.allow(now)) return Promise.resolve(without());
  return new Promise<T>((resolve, reject) => {
    call.decide(request, now, {
      answered(error, reply, latencyMs) {
        if (reply === undefined) {
          report(key, error, latencyMs);
          resolve(without());
          return;
        }
        try {
          resolve(answer(reply));
        } catch (e) {
          // A store's reply that cannot be read: the caller hears of it rather than waiting forever.
          reject(e);
        }
      },
    });
  });
}

/**
 * The store call for a store that is not in this process: a deadline (`timeout`) and a breaker, shared
 * by the limiters on one store with the same settings (a test clock gets one of its own). An in-process
 * store is called as it is.
 */
export function createStoreCall(
  store: Store,
  o: Pick<ResolvedLimiterOptions, 'timeout' | 'breaker' | 'clock' | 'testClock'>,
  member: BreakerMember,
): StoreCall {
  if (store.local) return new LocalCall(store);
  const { failures, cooldown } = o.breaker;
  const held =
    failures > 0
      ? o.testClock
        ? { breaker: ownBreaker(failures, cooldown, member), release() {} }
        : sharedBreaker(store, failures, cooldown, member)
      : undefined;
  return new GuardedCall(store, held, o);
}

// Classes, declared once, rather than closures made per limiter: their methods are on every decision's
// path, and code that each limiter reaches through closures of its own runs slower once there are
// several (bench/limiters.mjs).

/** An in-process store, called as it is. */
class LocalCall implements StoreCall {
  constructor(private readonly store: Store) {}
  allow(): boolean {
    return true;
  }
  retryIn(): undefined {
    return undefined;
  }
  decide(request: StoreRequest, _now: number, listener: StoreListener): void {
    this.store.decide(request).then(
      (reply) => listener.answered(undefined, reply, 0),
      (e: unknown) => listener.answered(asError(e), undefined, 0),
    );
  }
  close(): void {}
}

/** A store elsewhere: each call under its deadline, the breaker in front. */
class GuardedCall implements StoreCall {
  readonly breaker: Breaker | undefined;
  readonly clock: () => number;
  private readonly release: (() => void) | undefined;
  private readonly timeout: number;
  private readonly testClock: boolean;
  private readonly deadlines: Deadlines;

  constructor(
    readonly store: Store,
    held: { breaker: Breaker; release: () => void } | undefined,
    o: Pick<ResolvedLimiterOptions, 'timeout' | 'clock' | 'testClock'>,
  ) {
    this.breaker = held?.breaker;
    this.release = held?.release;
    this.clock = o.clock;
    this.timeout = o.timeout;
    this.testClock = o.testClock;
    this.deadlines = new Deadlines(o.timeout, () => new StoreTimeoutError(o.timeout));
  }

  allow(now: number): boolean {
    return this.breaker === undefined || this.breaker.allow(now);
  }

  retryIn(now: number): number | undefined {
    return this.breaker?.retryIn(now);
  }

  decide(request: StoreRequest, now: number, listener: StoreListener): void {
    const { store } = this;
    // `now` is performance.now() unless a test clock gives it: then the deadline reads its own.
    const deadline = (this.testClock ? performance.now() : now) + this.timeout;
    const answered = this.deadlines.watch(new Asked(this, deadline, request, now, listener));
    try {
      if (store.decideWith !== undefined) store.decideWith(request, answered, deadline);
      else store.decide(request).then((reply) => answered(undefined, reply), answered);
    } catch (error) {
      answered(error);
    }
  }

  close(): void {
    this.release?.();
  }
}

/** One call: its deadline's node, and how its end reaches the breaker and the listener. One object per call. */
class Asked implements Call<StoreReply> {
  prev: Call<never> | undefined = undefined;
  next: Call<never> | undefined = undefined;
  state: Call['state'] = 'waiting';
  constructor(
    readonly call: GuardedCall,
    readonly at: number,
    readonly request: StoreRequest,
    readonly now: number,
    readonly listener: StoreListener,
  ) {}

  // The clock is read for a failure only (its latency, the breaker's count); an answer reads it only if
  // it closes the breaker.
  settled(e: unknown, reply?: StoreReply): void {
    const { store, breaker, clock } = this.call;
    if (reply === undefined || !fits(reply, this.request)) {
      const end = clock();
      const error = reply === undefined ? asError(e) : new Error('the store answered a reply of the wrong shape');
      // A store still making its connection has not failed: its late calls do not open the breaker.
      if (store.connecting?.()) breaker?.unanswered();
      // A store that refused one decision (out of memory) answered: it is up, and still denies.
      else if (error instanceof StoreRefusal) breaker?.success(clock);
      else breaker?.failure(end, error);
      this.listener.answered(error, undefined, end - this.now);
    } else {
      breaker?.success(clock);
      this.listener.answered(undefined, reply, 0);
    }
  }
}

/** Whether a store's reply has the shape a Decision is made from: one state per policy. */
function fits(reply: StoreReply, request: StoreRequest): boolean {
  return typeof reply === 'object' && reply !== null && Array.isArray(reply.states) && reply.states.length === request.policies.length;
}

function asError(e: unknown): Error {
  return e instanceof Error ? e : new Error(String(e));
}
