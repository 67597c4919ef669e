// The store protocol's test vectors, run through the one exported function a store of one's own runs:
// the memory store passes them, and a store that decides otherwise is named where it does.

import { runStoreVectors } from './conformance.js';
import type { Store } from './contract.js';
import { memoryStore } from './memory-store.js';
import { VECTORS } from './vectors.js';

const decisions = VECTORS.reduce((n, v) => n + v.requests.length, 0);

describe('runStoreVectors', () => {
  it('the memory store on the test clock decides every vector as fixed', async () => {
    await expect(runStoreVectors((clock) => memoryStore({ clock }))).resolves.toBe(decisions);
  });

  it('a store that allows what it should deny is refused, naming the vector, the request and the field', async () => {
    let closed = 0;
    const allowsAll = (clock: () => number): Store => {
      const inner = memoryStore({ clock });
      return {
        local: true,
        decide: async (request) => ({ ...(await inner.decide(request)), allowed: true }),
        reset: (keys) => inner.reset(keys),
        close: () => {
          closed++;
          return inner.close();
        },
      };
    };
    await expect(runStoreVectors(allowsAll)).rejects.toThrow(
      `store vector "${VECTORS[0]?.name}", request 5: allowed is true, expected false`,
    );
    expect(closed).toBe(1);
  });

  it('puts its prefix before every key', async () => {
    const keys: string[] = [];
    const seen = (clock: () => number): Store => {
      const inner = memoryStore({ clock });
      return {
        ...inner,
        local: true,
        decide: (r) => {
          keys.push(...r.keys);
          return inner.decide(r);
        },
        close: () => inner.close(),
      };
    };
    await runStoreVectors(seen, { prefix: 'p:' });
    expect(keys.length).toBeGreaterThan(decisions);
    expect(keys.every((k) => k.startsWith('p:{'))).toBe(true);
  });
});
