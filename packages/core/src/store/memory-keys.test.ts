import { MemoryKeys } from './memory-keys.js';

describe('MemoryKeys', () => {
  test('a write after a read lands on the key even when keys were taken in, swept or rotated between', () => {
    const keys = new MemoryKeys(4); // generations of 2
    keys.write('a', 1, 100, 0);
    expect(keys.read('a', 0)).toBe(1);
    keys.write('b', 2, 100, 0); // `recent` is full: it becomes `older`, with a in it
    keys.write('a', 3, 100, 0);
    expect(keys.read('a', 0)).toBe(3);
    expect(keys.read('b', 0)).toBe(2);
    keys.read('a', 0);
    keys.delete('a');
    keys.write('a', 4, 100, 0);
    expect(keys.read('a', 0)).toBe(4);
    expect(keys.size).toBeLessThanOrEqual(4);
  });

  test('an expired key is written in place when it comes back, and swept once it has been expired a while', () => {
    const keys = new MemoryKeys(100_000);
    keys.write('a', 1, 1_000, 0);
    // Expired: read as absent, but its entry stays for the next write.
    expect(keys.read('a', 2_000)).toBeUndefined();
    keys.write('x', 0, 1_000_000, 2_000); // its sweep passes a: kept
    expect(keys.size).toBe(2);
    keys.write('a', 2, 3_000, 2_000);
    expect(keys.read('a', 2_500)).toBe(2);
    // Keys taken in long after a's expiry sweep it out.
    for (let i = 0; i < 10; i++) keys.write(`k${i}`, i, 1_000_000, 60_000);
    expect(keys.size).toBe(11);
    expect(keys.read('x', 60_000)).toBe(0);
  });
});
