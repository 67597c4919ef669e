// The one differential harness of the tests: the same operations on a limiter over Redis (the Lua scripts)
// and one over the memory store, under one testClock() (@sluice/core/testing) that both stores read. Every call is made on both;
// their decisions must be alike, and so must the stores' replies (retries to the µs, which a Decision
// rounds up to whole ms). A call refused before any store is asked (a cost past the capacity, an option out
// of bounds) must be refused by both alike, with neither store asked.
//
//   const d = differential({ client, policy: '5/1s', start: NOW });
//   await d.consume('k', { cost: 2 }); d.step(1000); await d.peek('k');   // each compared, Redis's returned
//   await d.run(ops, { refusals: ['ERR_SLUICE_COST'] });                    // a generated sequence on 'k'
import {
  createLimiter,
  type Decision,
  type Limiter,
  memoryStore,
  type PolicyInput,
  redisStore,
  type Store,
  type StoreReply,
} from '@sluice/core';
import { testClock } from '@sluice/core/testing';
import { type Policy, parsePolicy } from '../../packages/core/src/policy/policy';
import { keyTag, requestKeys } from '../../packages/core/src/store/keys';
import { uniquePrefix } from './redis';

/** One operation of a generated sequence, on one key. */
export type Op =
  | { kind: 'consume'; cost?: number; id?: string }
  | { kind: 'peek' }
  | { kind: 'adjust'; delta: number }
  /** Gives back the oldest decision still holding slots (if any), then peeks. */
  | { kind: 'release' }
  /** Moves the clock by `ms`. */
  | { kind: 'step'; ms: number }
  /**
   * A reservation (limiter.wait's store call), asked of both stores as it is: compared, and
   * skipped where wait() would not send one (a policy that cannot reserve, a cost past the capacity).
   */
  | { kind: 'reserve'; cost: number; maxWaitMs: number };

export interface DifferentialOptions {
  client: Parameters<typeof redisStore>[0]['client'];
  policy?: PolicyInput | PolicyInput[];
  /** The clock's first reading (ms); default a random instant of late 2023. */
  start?: number;
}

export interface Differential extends Pick<Limiter, 'consume' | 'peek' | 'adjust'> {
  /** A reservation of `cost` within `maxWaitMs` on `key`, asked of both stores; Redis's reply, or undefined when skipped. */
  reserve(key: string, cost: number, maxWaitMs: number): Promise<StoreReply | undefined>;
  /** The test clock both stores read, in ms: set it, or move it with step(). */
  now: number;
  step(ms: number): void;
  /**
   * Runs `ops` on `key` (default 'k'), each on both limiters and compared. A refusal whose code is in
   * `refusals` (both alike, no store asked) goes on to the next operation; any other fails the test.
   */
  run(ops: readonly Op[], options?: { key?: string; refusals?: readonly string[] }): Promise<void>;
  close(): Promise<void>;
}

/** A decision as a value: its functions (release, ...) listed by name, so that two stores' decisions compare. */
function plain(d: Decision): Record<string, unknown> {
  const value: Record<string, unknown> = {};
  const methods: string[] = [];
  for (const [k, v] of Object.entries(d)) {
    if (typeof v === 'function') methods.push(k);
    else value[k] = v;
  }
  return methods.length > 0 ? { ...value, methods: methods.sort() } : value;
}

const isDecision = (v: unknown): v is Decision => typeof v === 'object' && v !== null && 'allowed' in v && 'policies' in v;

/** `store`, calling `seen` with each reply it gives (through decide, or decideWith when it has it). */
function recorded(store: Store, seen: (reply: StoreReply) => void): Store {
  const wrapped: Store = Object.create(store);
  Object.assign(wrapped, {
    decide: async (request: Parameters<Store['decide']>[0]) => {
      const reply = await store.decide(request);
      seen(reply);
      return reply;
    },
  });
  if (store.decideWith) {
    const decideWith = store.decideWith.bind(store);
    Object.assign(wrapped, {
      decideWith: (...[request, done, deadline]: Parameters<NonNullable<Store['decideWith']>>) =>
        decideWith(
          request,
          (error, reply) => {
            if (reply !== undefined) seen(reply);
            done(error, reply);
          },
          deadline,
        ),
    });
  }
  return wrapped;
}

/** A Redis-store limiter and a memory-store limiter on one clock, asked the same and compared at each call. */
export function differential(o: DifferentialOptions): Differential {
  const clock = testClock();
  clock.set(o.start ?? 1_700_000_000_000 + Math.floor(Math.random() * 1e9));
  const prefix = uniquePrefix();
  // Each store's reply to the call under way: [Redis, memory].
  const replies: Array<StoreReply | undefined> = [undefined, undefined];
  const store = (s: Store, i: number) =>
    recorded(s, (reply) => {
      replies[i] = reply;
    });
  const stores: [Store, Store] = [store(redisStore({ client: o.client, clock }), 0), store(memoryStore({ clock }), 1)];
  const policies: Policy[] = o.policy === undefined ? [] : (Array.isArray(o.policy) ? o.policy : [o.policy]).map((p) => parsePolicy(p));
  const reservable = policies.length > 0 && policies.every((p) => p.algorithm === 'token-bucket' || p.algorithm === 'sliding-window');
  const capacity = Math.min(...policies.map((p) => (p.algorithm === 'token-bucket' ? p.burst : p.limit)));
  const limiters: [Limiter, Limiter] = [
    createLimiter({
      policy: o.policy,
      store: stores[0],
      prefix,
      denyCache: false,
      timeout: 5000,
    }),
    createLimiter({ policy: o.policy, store: stores[1], prefix }),
  ];

  /**
   * Makes one call on each side and compares: a refusal, the stores' replies, the result. A Decision comes
   * back as Redis's, each of its functions (release, adjust) making its call on both sides the same way.
   */
  async function both<T>(onRedis: () => Promise<T>, inMemory: () => Promise<T>): Promise<T> {
    replies.fill(undefined);
    const [a, b] = [...(await Promise.allSettled([onRedis(), inMemory()]))] as [PromiseSettledResult<T>, PromiseSettledResult<T>];
    if (a.status === 'rejected') {
      // Refused before any store is asked, by both alike.
      expect(b).toEqual(a);
      expect(replies).toEqual([undefined, undefined]);
      throw a.reason;
    }
    // A refusal by the memory store alone: its reason.
    expect(b.status === 'rejected' ? b.reason : undefined).toBeUndefined();
    const [x, y] = [a.value, (b as PromiseFulfilledResult<T>).value];
    expect(replies[0]).toEqual(replies[1]);
    if (!isDecision(x) || !isDecision(y)) {
      expect(y).toEqual(x);
      return x;
    }
    expect(replies[0]).toBeDefined();
    expect(plain(y)).toEqual(plain(x));
    const out: Record<string, unknown> = { ...(x as Decision) };
    for (const [k, f] of Object.entries(x)) {
      const g = (y as unknown as Record<string, unknown>)[k];
      if (typeof f === 'function' && typeof g === 'function') {
        out[k] = (...args: unknown[]) =>
          both<unknown>(
            async () => Reflect.apply(f, x, args),
            async () => Reflect.apply(g, y, args),
          );
      }
    }
    return out as T;
  }

  const sides = <T>(call: (l: Limiter) => Promise<T>) => [() => call(limiters[0]), () => call(limiters[1])] as const;
  const d: Differential = {
    get now() {
      return clock();
    },
    set now(ms) {
      clock.set(ms);
    },
    step(ms) {
      clock.advance(ms);
    },
    consume: (key, options) => both(...sides((l) => l.consume(key, options))),
    peek: (key, options) => both(...sides((l) => l.peek(key, options))),
    adjust: (key, delta, options) => both(...sides((l) => l.adjust(key, delta, options))),
    async reserve(key, cost, maxWaitMs) {
      if (!reservable || cost > capacity) return undefined;
      const request = { keys: requestKeys(prefix, keyTag(key), policies), policies, cost, peek: false, maxWaitMs };
      const [a, b] = await Promise.all(stores.map((s) => s.decide(request)));
      expect(b).toEqual(a);
      return a;
    },
    async run(ops, { key = 'k', refusals = [] } = {}) {
      const held: Decision[] = [];
      for (const op of ops) {
        try {
          if (op.kind === 'step') d.step(op.ms);
          else if (op.kind === 'peek') await d.peek(key);
          else if (op.kind === 'adjust') await d.adjust(key, op.delta);
          else if (op.kind === 'reserve') await d.reserve(key, op.cost, op.maxWaitMs);
          else if (op.kind === 'release') {
            await held.shift()?.release?.();
            await d.peek(key);
          } else {
            const decision = await d.consume(key, {
              ...(op.cost === undefined ? {} : { cost: op.cost }),
              ...(op.id === undefined ? {} : { id: op.id }),
            });
            if (decision.release) held.push(decision);
          }
        } catch (error) {
          const code = (error as { code?: unknown }).code;
          // An assertion that failed, or a refusal this sequence does not expect: the test fails.
          if (typeof code !== 'string' || !code.startsWith('ERR_SLUICE_')) throw error;
          expect(refusals).toContain(code);
        }
      }
    },
    close: async () => {
      await Promise.all(limiters.map((l) => l.close()));
    },
  };
  return d;
}
