import { createLimiter } from '../limiter.js';
import { testClock } from '../testing/test-clock.js';
import { memoryStore } from './memory-store.js';

describe('memoryStore decides in a batch on the next turn', () => {
  test('each decision asked in one turn is made at the time it was asked, in the order asked', async () => {
    const clock = testClock();
    const limiter = createLimiter({ policy: { limit: 2, window: '1s', algorithm: 'fixed-window' }, store: memoryStore({ clock }) });
    clock.set(Math.ceil(clock() / 1000) * 1000); // the start of a window
    const first = limiter.consume('k');
    const second = limiter.consume('k');
    clock.advance('1s'); // the next window: a decision made now would count the third there with the first two
    const third = limiter.consume('k');
    const decisions = await Promise.all([first, second, third]);
    expect(decisions.map((d) => d.remaining)).toEqual([1, 0, 1]);
  });

  test('a reset waits for the decisions asked before it, and the ones after it count afresh', async () => {
    const store = memoryStore();
    const limiter = createLimiter({ policy: '1/1h', store });
    const before = limiter.consume('k');
    const reset = limiter.reset('k');
    const after = limiter.consume('k');
    await reset;
    expect((await before).allowed).toBe(true);
    expect((await after).allowed).toBe(true);
    expect((await limiter.consume('k')).allowed).toBe(false);
    expect(store.size).toBe(1);
  });

  test('its size counts the keys of the decisions asked so far', () => {
    const store = memoryStore();
    const limiter = createLimiter({ policy: '10/1h', store });
    void limiter.consume('a');
    void limiter.consume('b');
    expect(store.size).toBe(2);
  });

  test('a decision asked under Jest fake timers is made', async () => {
    jest.useFakeTimers();
    try {
      const limiter = createLimiter({ policy: '1/1h', store: memoryStore() });
      expect((await limiter.consume('k')).allowed).toBe(true);
      expect((await limiter.consume('k')).allowed).toBe(false);
    } finally {
      jest.useRealTimers();
    }
  });
});
