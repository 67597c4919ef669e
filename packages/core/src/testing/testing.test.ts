import { createLimiter } from '../limiter.js';
import { createRules } from '../rules/rules.js';
import type { Store } from '../store/contract.js';
import { memoryStore } from '../store/memory-store.js';
import { resetAll } from './reset-all.js';
import { testClock } from './test-clock.js';

/** A memory store the limiter treats as remote: so it keeps a deny cache, a breaker and a fallback in front of it. */
const remote = (store: Store): Store => Object.assign(Object.create(store) as Store, { local: false });

async function listed<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

describe('testClock', () => {
  it('starts at Date.now() and moves only when told', () => {
    const before = Date.now();
    const clock = testClock();
    expect(clock()).toBeGreaterThanOrEqual(before);
    expect(clock()).toBeLessThanOrEqual(Date.now());
    const start = clock();
    expect(clock.advance('1h')).toBe(start + 3_600_000);
    expect(clock.advance(250)).toBe(start + 3_600_250);
    expect(clock.advance(0)).toBe(start + 3_600_250);
    expect(clock.set(Date.UTC(2026, 0, 31, 23, 59))).toBe(Date.UTC(2026, 0, 31, 23, 59));
    expect(clock.set(new Date(Date.UTC(2026, 1, 1)))).toBe(Date.UTC(2026, 1, 1));
    expect(clock()).toBe(Date.UTC(2026, 1, 1));
  });

  it('moves no global clock', () => {
    const clock = testClock();
    clock.advance('1d');
    expect(Math.abs(Date.now() - clock() + 86_400_000)).toBeLessThan(60_000);
  });

  test.each([-1, '-1s', 'soon', '10 min', Number.NaN, Number.POSITIVE_INFINITY, undefined, null, {}])(
    'advance(%p) is refused naming clock.advance',
    (duration) => {
      const clock = testClock();
      const at = clock();
      expect(() => clock.advance(duration as never)).toThrow(
        expect.objectContaining({ code: 'ERR_SLUICE_OPTION', message: expect.stringMatching(/^clock\.advance must be/) }),
      );
      expect(clock()).toBe(at);
    },
  );

  test.each(['2026-01-01', -5, Number.NaN, new Date('nope'), undefined])('set(%p) is refused naming clock.set', (ms) => {
    expect(() => testClock().set(ms as never)).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_OPTION', message: expect.stringMatching(/^clock\.set must be/) }),
    );
  });

  test.each([[{ now: 1 }], [new Date()], [1_700_000_000_000], ['Date.now']])(
    'a clock that is not a function (%p) is refused naming clock',
    (clock) => {
      const refused = expect.objectContaining({
        code: 'ERR_SLUICE_OPTION',
        message: expect.stringMatching(/^clock must be a function returning epoch ms, such as testClock\(\)/),
      });
      expect(() => memoryStore({ clock: clock as never })).toThrow(refused);
      expect(() => createLimiter({ policy: '1/1m', clock: clock as never })).toThrow(refused);
    },
  );
});

describe("a limiter follows its store's clock, given to the store alone", () => {
  it('the deny cache lets a denial go when the test clock passes its end', async () => {
    const clock = testClock();
    const limiter = createLimiter({ policy: { limit: 2, window: '1m', algorithm: 'fixed-window' }, store: remote(memoryStore({ clock })) });
    clock.set(Date.UTC(2026, 0, 15, 12));
    await limiter.consume('k');
    await limiter.consume('k');
    const denied = await limiter.consume('k');
    expect(denied).toMatchObject({ allowed: false, retryAfterMs: 60_000 });
    expect(await limiter.consume('k')).toMatchObject({ allowed: false, source: 'deny-cache' });
    clock.advance('1m');
    expect(await limiter.consume('k')).toMatchObject({ allowed: true, source: 'store' });
    await limiter.close();
  });

  it("the fallback counts on the store's clock while the store fails", async () => {
    const clock = testClock();
    const failing: Store = { ...remote(memoryStore({ clock })), clock, decide: () => Promise.reject(new Error('down')) };
    const limiter = createLimiter({ policy: '1/1h', store: failing, breaker: false });
    expect(await limiter.consume('k')).toMatchObject({ allowed: true, source: 'fallback' });
    expect(await limiter.consume('k')).toMatchObject({ allowed: false, source: 'fallback' });
    clock.advance('1h');
    expect(await limiter.consume('k')).toMatchObject({ allowed: true, source: 'fallback' });
    await limiter.close();
  });

  it('a store without a clock leaves the limiter on its own', async () => {
    const limiter = createLimiter({ policy: '1/1m', store: remote(memoryStore()) });
    await limiter.consume('k');
    expect(await limiter.consume('k')).toMatchObject({ allowed: false });
    expect(await limiter.consume('k')).toMatchObject({ allowed: false, source: 'deny-cache' });
    await limiter.close();
  });
});

describe('resetAll on the memory store', () => {
  it("deletes a prefix's counters, ids, rules and bans, and what its limiters hold, and nothing of another prefix", async () => {
    const clock = testClock();
    const store = memoryStore({ clock });
    const policy = { limit: 1, window: '1h' } as const;
    const mine = createLimiter({ policy, store, prefix: 'app' });
    const near = createLimiter({ policy, store, prefix: 'app-2' });
    const rules = createRules({ store, prefix: 'app' });
    await rules.deny('banned', { reason: 'test' });
    for (const l of [mine, near]) {
      await l.consume('k', { id: 'once' });
      expect((await l.consume('k')).allowed).toBe(false);
    }
    expect(await listed(rules.list())).toHaveLength(1);

    await resetAll({ store, prefix: 'app' });

    expect(await mine.consume('k', { id: 'once' })).toMatchObject({ allowed: true, remaining: 0 }); // the id is gone: charged again
    expect(await listed(rules.list())).toEqual([]);
    expect((await near.consume('k')).allowed).toBe(false);
    expect(await near.peek('k')).toMatchObject({ remaining: 0 });
    for (const l of [mine, near]) await l.close();
    await rules.close();
  });

  it("the limiter's deny cache is forgotten: the next consume asks the store", async () => {
    const clock = testClock();
    const store = remote(memoryStore({ clock }));
    const limiter = createLimiter({ policy: '1/1h', store });
    await limiter.consume('k');
    expect(await limiter.consume('k')).toMatchObject({ allowed: false, source: 'store' });
    expect(await limiter.consume('k')).toMatchObject({ allowed: false, source: 'deny-cache' });
    await resetAll({ store, prefix: 'sluice' });
    expect(await limiter.consume('k')).toMatchObject({ allowed: true, source: 'store' });
    await limiter.close();
  });

  test.each<[unknown, RegExp]>([
    [{ store: memoryStore() }, /^prefix must be given: resetAll deletes one prefix's keys/],
    [{ store: memoryStore(), prefix: '' }, /^prefix must be a string of 1 to 64/],
    [{ store: memoryStore(), prefix: 'a*{' }, /^prefix must be a string of 1 to 64/],
    [{ prefix: 'sluice' }, /^store must be a store that can delete a prefix/],
    [{ store: { decide() {} }, prefix: 'sluice' }, /^store must be a store that can delete a prefix/],
    [{ store: memoryStore(), prefix: 'sluice', prefx: 'x' }, /prefx/],
    [undefined, /^resetAll options must be an object/],
  ])('%p is refused with ERR_SLUICE_OPTION', async (options, message) => {
    await expect(resetAll(options as never)).rejects.toMatchObject({ code: 'ERR_SLUICE_OPTION', message: expect.stringMatching(message) });
  });
});
