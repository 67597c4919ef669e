import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { type Call, Deadlines, type Settle } from './deadlines.js';

/** A Call from a callback, its time up `ms` from now. */
const callOf = <T>(ms: number, settled: Settle<T>): Call<T> => ({
  at: performance.now() + ms,
  prev: undefined,
  next: undefined,
  state: 'waiting',
  settled,
});

/** Watches `promise` under `watched`: its outcome goes to the callback the deadline returned, as a store's does. */
function watchPromise<T>(watched: Deadlines, ms: number, promise: Promise<T>, done: (error: unknown, value?: T) => void): void {
  const answer = watched.watch<T>(callOf(ms, done));
  promise.then((value) => answer(undefined, value), answer);
}

/** The deadlines as a function from a promise to a promise, for these tests. */
function deadlines(ms: number) {
  const watched = new Deadlines(ms, () => new Error('timed out'));
  return <T>(promise: Promise<T>) =>
    new Promise<T>((resolve, reject) =>
      watchPromise(watched, ms, promise, (error, value) => (error === undefined ? resolve(value as T) : reject(error))),
    );
}

const never = () => new Promise<never>(() => {});
const later = <T>(ms: number, value: T) => new Promise<T>((r) => setTimeout(() => r(value), ms));
/** A promise settled by the test, not by a timer, so that a busy machine cannot reorder it with a deadline. */
function manual<T>() {
  let resolve = (_: T) => {};
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe('Deadlines', () => {
  it('passes values and errors through, and fails calls past their deadline, in order', async () => {
    const within = deadlines(40);
    await expect(within(Promise.resolve(7))).resolves.toBe(7);
    await expect(within(Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    const t = performance.now();
    const first = within(never()).catch(() => performance.now() - t);
    await later(15, null);
    const second = within(never()).catch(() => performance.now() - t);
    const fast = within(later(5, 'ok'));
    await expect(fast).resolves.toBe('ok');
    const [a, b] = await Promise.all([first, second]);
    expect(a).toBeGreaterThanOrEqual(39);
    expect(b).toBeGreaterThanOrEqual(54);
    expect(b).toBeGreaterThan(a as number);
  });

  it('a slow call among fast ones still times out, and a late reply after that is ignored', async () => {
    const within = deadlines(20);
    const slow = manual<string>();
    const calls = [within(slow.promise), ...Array.from({ length: 100 }, (_, i) => within(Promise.resolve(i)))];
    const results = await Promise.allSettled(calls);
    slow.resolve('late');
    await later(5, null);
    expect(results[0]).toMatchObject({ status: 'rejected' });
    expect(results.slice(1).every((r) => r.status === 'fulfilled')).toBe(true);
  });

  it('answers each call exactly once', async () => {
    const watched = new Deadlines(10, () => new Error('timed out'));
    const calls: unknown[][] = [[], [], []];
    const slow = manual<string>();
    watchPromise(watched, 10, Promise.resolve(1), (...args) => calls[0]?.push(args));
    watchPromise(watched, 10, Promise.reject(new Error('boom')), (...args) => calls[1]?.push(args));
    watchPromise(watched, 10, slow.promise, (...args) => calls[2]?.push(args));
    while (calls[2]?.length === 0) await later(5, null);
    slow.resolve('late'); // a reply after its deadline's answer is not a second answer
    await later(5, null);
    expect(calls[0]).toEqual([[undefined, 1]]);
    expect(calls[1]).toEqual([[new Error('boom')]]);
    expect(calls[2]).toEqual([[new Error('timed out')]]);
  });

  it('holds nothing of a call once it has settled, however long its deadline', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const within = deadlines(60_000);
    let end = (_: string) => {};
    const pending = within(new Promise<string>((r) => (end = r))); // keeps the timer armed
    let refs: WeakRef<object>[] = [];
    for (let i = 0; i < 100; i++) {
      const reply = { payload: new Array(1000).fill(i) };
      refs.push(new WeakRef(reply));
      await within(Promise.resolve(reply));
    }
    await new Promise((r) => setImmediate(r));
    gc();
    refs = refs.filter((r) => r.deref() !== undefined);
    // The engine may keep the last one or two in reach; a call held until its deadline keeps all 100.
    expect(refs.length).toBeLessThan(5);
    end('done');
    await expect(pending).resolves.toBe('done');
  });
});
