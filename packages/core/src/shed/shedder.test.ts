import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { SluiceError } from '../errors.js';
import { createShedder, type Permit, type Priority, type Shedder, type ShedderOptions } from './shedder.js';

/** The end of the event loop's turn: the shedder adapts. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A shedder on a clock the test moves, with an event-loop delay the test sets. */
function controlled(options: ShedderOptions = {}) {
  const state = { now: 0, delay: 0 };
  const shedder = createShedder({ clock: () => state.now, eventLoopDelay: () => state.delay, ...options });
  return { shedder, state };
}

/**
 * One window of traffic with demand above the limit: takes every slot `priority` may have (and one shed), holds
 * them `latencyMs`, gives them back, and lets the rest of the 100 ms window pass. Returns the limit after it.
 */
async function window(shedder: Shedder, state: { now: number }, latencyMs: number, priority: Priority = 'normal') {
  const held: Permit[] = [];
  for (let p = shedder.acquire(priority); p !== undefined; p = shedder.acquire(priority)) held.push(p);
  state.now += latencyMs;
  for (const p of held) p.release();
  await turn();
  state.now += 100 - latencyMs;
  shedder.acquire(priority)?.release(); // the next window opens with an acquire, which adapts
  await turn();
  return shedder.limit;
}

describe('createShedder', () => {
  test('a released slot comes back at once: inFlight drops, and an acquire in the same turn takes it at the limit', () => {
    const { shedder } = controlled({ limit: { initial: 2 }, reserve: { critical: 0, normal: 0 } });
    const a = shedder.acquire() as Permit;
    shedder.acquire();
    expect(shedder.acquire()).toBeUndefined();
    a.release();
    expect(shedder.inFlight).toBe(1);
    expect(shedder.acquire()).toBeDefined();
    expect(shedder.inFlight).toBe(2);
  });

  test('a second release of one permit does nothing, in the same turn or a later one', async () => {
    const { shedder } = controlled({ limit: { initial: 3 } });
    const a = shedder.acquire() as Permit;
    const b = shedder.acquire('critical') as Permit;
    expect(shedder.inFlight).toBe(2);
    a.release();
    a.release();
    expect(shedder.inFlight).toBe(1);
    await turn();
    a.release();
    expect(shedder.inFlight).toBe(1);
    b.release();
    expect(shedder.inFlight).toBe(0);
  });

  test('answers undefined at once when the limit is full; no priority means normal', () => {
    const { shedder } = controlled({ limit: { initial: 2 }, reserve: { critical: 0, normal: 0 } });
    expect(shedder.acquire()).toBeDefined();
    expect(shedder.acquire()).toBeDefined();
    expect(shedder.acquire()).toBeUndefined();
    expect(shedder.acquire('critical')).toBeUndefined();
    expect(shedder.inFlight).toBe(2);
  });

  test('reserve fractions: sheddable uses the rest, normal all but the critical share, critical all of it', () => {
    const { shedder } = controlled({ limit: { initial: 10 }, reserve: { critical: 0.2, normal: 0.3 } });
    const taken = (p: Priority) => {
      let n = 0;
      while (shedder.acquire(p) !== undefined) n++;
      return n;
    };
    expect(taken('sheddable')).toBe(5);
    expect(taken('normal')).toBe(3);
    expect(taken('sheddable')).toBe(0);
    expect(taken('critical')).toBe(2);
    expect(shedder.inFlight).toBe(10);
  });

  test('a lower class yields for one window (100 ms) to a higher class that was refused', async () => {
    const { shedder, state } = controlled({ limit: { initial: 4 }, reserve: { critical: 0.5, normal: 0.25 } });
    const held = [0, 1, 2, 3].map(() => shedder.acquire('critical') as Permit);
    expect(shedder.acquire('critical')).toBeUndefined(); // refused: the limit is full
    for (const p of held) p.release();
    await turn();
    expect(shedder.inFlight).toBe(0);
    state.now += 99;
    expect(shedder.acquire('normal')).toBeUndefined(); // room for it, but critical was refused 99 ms ago
    expect(shedder.acquire('sheddable')).toBeUndefined();
    const critical = shedder.acquire('critical');
    expect(critical).toBeDefined(); // critical itself is not held back
    state.now += 1;
    const normal = shedder.acquire('normal') as Permit;
    expect(normal).toBeDefined(); // 100 ms on
    expect(shedder.acquire('normal')).toBeUndefined(); // its own ceiling (2 of 4): refused, so sheddable yields
    expect(shedder.acquire('sheddable')).toBeUndefined();
    critical?.release();
    normal.release();
    await turn();
    state.now += 100;
    expect(shedder.acquire('sheddable')).toBeDefined();
  });

  test('a class with a share keeps one slot at the smallest limit', () => {
    const { shedder } = controlled({ limit: { initial: 1 } });
    expect(shedder.acquire('sheddable')).toBeDefined();
  });

  test('adapts down when latency rises above its floor, and back up after', async () => {
    const { shedder, state } = controlled({ limit: { initial: 20 } });
    for (let i = 0; i < 10; i++) await window(shedder, state, 10);
    const grown = shedder.limit;
    expect(grown).toBeGreaterThan(20); // latency at its floor and demand above the limit: it grows
    for (let i = 0; i < 20; i++) await window(shedder, state, 40);
    const low = shedder.limit;
    expect(low).toBeLessThan(grown / 2);
    for (let i = 0; i < 20; i++) await window(shedder, state, 10);
    expect(shedder.limit).toBeGreaterThan(low + 10);
  });

  test("a request's latency counts from the start of its turn: requests run one after another in a turn raise it", async () => {
    const { shedder, state } = controlled({ limit: { initial: 20 }, reserve: { critical: 0, normal: 0 } });
    /** One turn of the event loop that reads `n` requests and runs each for `ms`, one after another (sync handlers). */
    const serialTurn = async (n: number, ms: number) => {
      for (let i = 0; i < n; i++) {
        const permit = shedder.acquire();
        state.now += ms;
        permit?.release();
      }
      await turn();
    };
    /** A window of 100 ms holding five such turns. */
    const window = async (n: number, ms: number) => {
      const start = state.now;
      for (let i = 0; i < 5; i++) await serialTurn(n, ms);
      state.now = start + 100;
    };
    for (let i = 0; i < 5; i++) await window(1, 2); // one request a turn: the floor is its own 2 ms
    expect(shedder.limit).toBe(20);
    // Thirty a turn, 2 ms each: each one's own time is still 2 ms, but the 20th waited 38 ms behind the others.
    for (let i = 0; i < 10; i++) await window(30, 2);
    const low = shedder.limit;
    expect(low).toBeLessThan(10);
    // Short work again, with demand above the limit: it grows back.
    for (let i = 0; i < 30; i++) await window(shedder.limit + 1, 0.1);
    expect(shedder.limit).toBeGreaterThan(low + 5);
  });

  test('does not grow while less than half the limit is used and nothing is shed (app-limited)', async () => {
    const { shedder, state } = controlled({ limit: { initial: 20 } });
    for (let i = 0; i < 20; i++) {
      const held = Array.from({ length: 6 }, () => shedder.acquire() as Permit);
      state.now += 10;
      for (const p of held) p.release();
      await turn();
      state.now += 90;
    }
    expect(shedder.limit).toBe(20);
  });

  test('falls at once when the event loop stalls past targetDelay, at most by half a window, and recovers', async () => {
    const { shedder, state } = controlled({ limit: { initial: 40 }, targetDelay: '100ms' });
    await window(shedder, state, 10);
    const before = shedder.limit;
    state.delay = 150; // max delay over the window, not a mean: one stall is enough
    await window(shedder, state, 10);
    expect(Math.abs(shedder.limit - before * (100 / 150))).toBeLessThanOrEqual(1); // at once, by target / delay
    state.delay = 1000;
    const halved = await window(shedder, state, 10);
    for (let i = 0; i < 6; i++) await window(shedder, state, 10);
    expect(shedder.limit).toBe(1); // the floor, limit.min
    expect(halved).toBeGreaterThan(1);
    state.delay = 5;
    // Back at the floor: +0.8 a window (slower while a window holds under 5 samples and waits for more).
    for (let i = 0; i < 60; i++) await window(shedder, state, 10);
    expect(shedder.limit).toBeGreaterThan(20);
  });

  test("a real stall of the event loop lowers the limit (node:perf_hooks' max, not the mean)", async () => {
    const state = { now: 0 };
    const shedder = createShedder({ clock: () => state.now, limit: { initial: 40 }, targetDelay: '100ms' });
    await new Promise((resolve) => setTimeout(resolve, 30)); // the histogram's timer is running
    const until = Date.now() + 400;
    while (Date.now() < until) {
      // a synchronous stall of 400 ms, as a CPU-bound handler makes one
    }
    await new Promise((resolve) => setTimeout(resolve, 30)); // its late tick is recorded
    state.now += 100;
    shedder.acquire()?.release();
    expect(shedder.limit).toBe(20); // halved: at most by half per window
    shedder.close();
  });

  test("publishes 'shed' and 'concurrency' on sluice:event while subscribed", async () => {
    const seen: Array<{ type: string }> = [];
    const listener = (message: unknown) => seen.push(message as { type: string });
    subscribe('sluice:event', listener);
    try {
      const { shedder, state } = controlled({ limit: { initial: 1 } });
      const p = shedder.acquire('critical') as Permit;
      expect(shedder.acquire('sheddable')).toBeUndefined();
      expect(seen).toContainEqual({ type: 'shed', name: 'default', priority: 'sheddable', limit: 1, inFlight: 1 });
      state.now += 100;
      p.release();
      await turn();
      expect(seen.filter((e) => e.type === 'concurrency').at(-1)).toMatchObject({ limit: expect.any(Number), inFlight: 0 });
    } finally {
      unsubscribe('sluice:event', listener);
    }
  });

  test.each<[string, unknown, string]>([
    ['limit.initial', { limit: { initial: 0 } }, 'limit.initial must be a positive integer, got 0'],
    ['limit.min', { limit: { min: 5, max: 2, initial: 2 } }, 'limit.min must be at most limit.max (2), got 5'],
    ['limit.initial', { limit: { initial: 2000 } }, 'limit.initial must be from limit.min to limit.max (1-1000), got 2000'],
    ['limit.mx', { limit: { mx: 3 } }, 'limit.mx must be absent'],
    ['targetDelay', { targetDelay: '-1s' }, 'targetDelay must be a positive number of ms'],
    ['reserve.critical', { reserve: { critical: 1.5 } }, 'reserve.critical must be a number from 0 to 1, got 1.5'],
    ['reserve', { reserve: { critical: 0.6, normal: 0.6 } }, 'reserve must be fractions that sum to at most 1'],
    ['maxWait', { maxWait: 'soon' }, 'maxWait must be 0 or a duration'],
    ['maxWait.critical', { maxWait: { critical: -5 } }, 'maxWait.critical must be 0 or a duration'],
    ['maxWait.urgent', { maxWait: { urgent: '5ms' } }, 'maxWait.urgent must be absent: not a class'],
    ['name', { name: '' }, 'name must be a non-empty string'],
    ['reserved', { reserved: {} }, 'reserved must be absent: not a createShedder option (did you mean reserve?)'],
  ])('refuses a bad %s at construction, by name', (_name, options, message) => {
    let error: unknown;
    try {
      createShedder(options as ShedderOptions);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(SluiceError);
    expect((error as SluiceError).code).toBe('ERR_SLUICE_OPTION');
    expect((error as Error).message).toContain(message);
  });

  test('reads options from own properties only', () => {
    const inherited = Object.create({ limit: { initial: 0 } }) as ShedderOptions;
    expect(createShedder(inherited).limit).toBe(20);
  });

  test('refuses an unknown priority', () => {
    const { shedder } = controlled();
    expect(() => shedder.acquire('urgent' as Priority)).toThrow(expect.objectContaining({ code: 'ERR_SLUICE_PRIORITY' }));
  });
});
