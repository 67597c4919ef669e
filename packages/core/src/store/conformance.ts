// The store protocol's test vectors (vectors.ts), run against any Store: a store of one's own (another
// database, a test double) proves that it decides as the memory store and the Redis scripts do.
import type { Store, StoreReply } from './contract.js';
import { NOW, VECTORS } from './vectors.js';

/** Options of runStoreVectors(). */
export interface StoreVectorsOptions {
  /** Put before every key the vectors use, for a store shared with other data or with earlier runs. Default ''. */
  prefix?: string;
}

/**
 * Runs the store protocol's test vectors against stores that `makeStore` makes, one per vector and each on a
 * fixed test clock that it must decide on (`clock()`, epoch ms): each vector's requests in order, one
 * `decide()` at a time, each reply held against the one the vectors fix (numbers to the µs; an absent
 * `windowMs` or `waitMs` is absent or undefined). Closes each store it made. Resolves with the number of
 * decisions held; rejects naming the first vector, request and field that differ.
 * @example await runStoreVectors((clock) => memoryStore({ clock }))
 * @example await runStoreVectors((clock) => redisStore({ client, clock }), { prefix: 'vectors:' })
 */
export async function runStoreVectors(
  makeStore: (clock: () => number) => Store | Promise<Store>,
  options: StoreVectorsOptions = {},
): Promise<number> {
  const prefix = options.prefix ?? '';
  let held = 0;
  for (const vector of VECTORS) {
    const store = await makeStore(() => NOW);
    try {
      for (const [i, request] of vector.requests.entries()) {
        const reply = await store.decide({ ...request, keys: request.keys.map((key) => `${prefix}${key}`) });
        const wrong = difference(reply, vector.replies[i] as StoreReply);
        if (wrong !== undefined) throw new Error(`store vector "${vector.name}", request ${i + 1}: ${wrong}`);
        held++;
      }
    } finally {
      await store.close();
    }
  }
  return held;
}

/** What differs between a reply and the one expected, or undefined when they agree. */
function difference(got: StoreReply, want: StoreReply): string | undefined {
  if (got?.allowed !== want.allowed) return `allowed is ${got?.allowed}, expected ${want.allowed}`;
  const fields = [['waitMs', got.waitMs, want.waitMs]] as [string, unknown, number | undefined][];
  if (!Array.isArray(got.states) || got.states.length !== want.states.length) {
    return `states has ${Array.isArray(got.states) ? got.states.length : 'no'} entries, expected ${want.states.length}`;
  }
  want.states.forEach((state, p) => {
    for (const name of ['remaining', 'resetMs', 'retryAfterMs', 'windowMs'] as const) {
      fields.push([`states[${p}].${name}`, got.states[p]?.[name], state[name]]);
    }
  });
  for (const [name, value, expected] of fields) {
    if (!sameMicros(value, expected)) return `${name} is ${value}, expected ${expected}`;
  }
  return undefined;
}

const sameMicros = (a: unknown, b: number | undefined): boolean =>
  b === undefined ? a === undefined : typeof a === 'number' && Math.round(a * 1000) === Math.round(b * 1000);
