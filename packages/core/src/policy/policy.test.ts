import { parsePolicies, parsePolicy } from './policy.js';

describe('parsePolicy', () => {
  it('parses strings with a default name', () => {
    expect(parsePolicy('100/1m')).toMatchObject({
      name: '100-per-60s',
      limit: 100,
      windowMs: 60_000,
      algorithm: 'token-bucket',
      burst: 100,
    });
    expect(parsePolicy('10/s')).toMatchObject({ limit: 10, windowMs: 1000 });
    expect(parsePolicy('5/15m')).toMatchObject({ limit: 5, windowMs: 900_000 });
    expect(parsePolicy({ limit: 3, window: '500ms' }).name).toBe('3-per-500ms');
  });
  it.each([
    [{ limit: -1, window: '1s' }, 'policy.limit must be a positive integer, got -1'],
    [{ limit: 1.5, window: '1s' }, 'policy.limit must be a positive integer, got 1.5'],
    [{ limit: 1, window: 0 }, 'policy.window must be'],
    [{ limit: 1, window: -5 }, 'policy.window must be'],
    [{ limit: 1, window: '3 fortnights' }, 'policy.window must be'],
    [{ limit: 1, window: '1s', algorithm: 'leaky' }, 'policy.algorithm must be one of'],
    [{ limit: 1, window: '1s', burst: 0.5 }, 'policy.burst must be a number >= 1, got 0.5'],
    ['100 per minute', "policy must be a string like '100/1m'"],
  ])('rejects %j', (input, message) => {
    expect(() => parsePolicy(input)).toThrow(message);
  });
});

describe("a fixed window's start", () => {
  it("'first-hit' is a policy of its own (its counters are not the clock-aligned window's)", () => {
    const first = parsePolicy({ limit: 5, window: '1m', algorithm: 'fixed-window', start: 'first-hit' });
    const clock = parsePolicy({ limit: 5, window: '1m', algorithm: 'fixed-window', start: 'clock' });
    expect(first.start).toBe('first-hit');
    expect(clock.start).toBeUndefined();
    expect(first.id).not.toBe(clock.id);
    expect(clock.id).toBe(parsePolicy({ limit: 5, window: '1m', algorithm: 'fixed-window' }).id);
  });

  it("'first-hit' counts one window per key whatever the limit: its counter is named by the window alone", () => {
    const input = (limit: number, window = '1m') => ({ limit, window, algorithm: 'fixed-window', start: 'first-hit' }) as const;
    expect(parsePolicy(input(1)).id).toBe(parsePolicy(input(3)).id);
    expect(parsePolicy(input(1)).id).not.toBe(parsePolicy(input(1, '2m')).id);
    // One of them in a set: two would be one counter counted twice.
    expect(() => parsePolicies([input(1), input(3)])).toThrow(/one first-hit fixed window per window/);
  });

  it.each([
    [{ limit: 5, window: '1m', start: 'first-hit' }, /policy.start must be used only with algorithm 'fixed-window'/],
    [
      { limit: 5, window: '1m', algorithm: 'sliding-window', start: 'first-hit' },
      /policy.start must be used only with algorithm 'fixed-window'/,
    ],
    [{ limit: 5, window: 'day', start: 'first-hit' }, /policy.start must be used only with algorithm 'fixed-window'/],
    [{ limit: 5, window: '1m', algorithm: 'fixed-window', start: 'now' }, /policy.start must be 'clock' or 'first-hit'/],
  ])('%j is refused naming policy.start', (input, message) => {
    expect(() => parsePolicy(input)).toThrow(message);
  });
});
