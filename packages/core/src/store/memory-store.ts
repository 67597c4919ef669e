import { ALGORITHMS, type StepResult } from '../algorithms/index.js';
import { badOption } from '../errors.js';
import { checkNames, isClock, isPositiveInteger, type OptionSpec, resolve, spec } from '../options.js';
import { setImmediate } from '../timers.js';
import type { PolicyState, Store, StoreReply, StoreRequest } from './contract.js';
import { MemoryKeys } from './memory-keys.js';
import { memoryRules } from './memory-rules.js';
import { idOf, opOf, waitArg } from './protocol.js';

/** Options of memoryStore(). */
export interface MemoryStoreOptions {
  /** Most keys kept; the least recently used goes first. Default 100000. */
  maxKeys?: number;
  /** ms clock (epoch): a test's, such as testClock() of @sluice/core/testing. Default Date.now. */
  clock?: () => number;
}

const MEMORY_OPTIONS = {
  maxKeys: spec(isPositiveInteger, 100_000),
  clock: spec(isClock, Date.now),
} satisfies { [K in keyof MemoryStoreOptions]-?: OptionSpec<unknown> };
const MEMORY_OPTION_NAMES = Object.keys(MEMORY_OPTIONS);

/** A decision asked and not made yet: made at the time it was asked. */
interface Asked {
  request: StoreRequest;
  now: number;
  resolve: (reply: StoreReply) => void;
  reject: (error: unknown) => void;
}

/**
 * The embedded store: counters in this process, bounded by `maxKeys` (the least recently used go first) and by expiry, so a flood
 * of unique keys cannot grow it without limit. Same semantics as the Redis scripts.
 * The decisions asked in one turn of the event loop are made together on the next, as the Redis store sends
 * them: a server with many requests in hand then runs each stage for all of them in a row, its code still
 * hot, where a decision made on the spot runs between the stages of each request, theirs and its own gone
 * cold (bench/graphql.mjs). Each is made at the time and in the order it was asked; a reset, size and close
 * make the decisions asked before them first.
 * @example createLimiter({ policy: '100/1m', store: memoryStore({ maxKeys: 50_000 }) })
 */
export function memoryStore(options: MemoryStoreOptions = {}): Store & { readonly size: number } {
  if (options === null || typeof options !== 'object') badOption('memoryStore options', 'an object, such as { maxKeys: 10000 }', options);
  checkNames(options, MEMORY_OPTION_NAMES, 'a memoryStore option');
  const { maxKeys, clock } = resolve(MEMORY_OPTIONS, options);
  const keys = new MemoryKeys(maxKeys);
  const rules = memoryRules(clock);
  let asked: Asked[] = [];
  const decideAsked = () => {
    const due = asked;
    asked = [];
    for (const { request, now, resolve, reject } of due) {
      try {
        resolve(decideNow(keys, now, request));
      } catch (error) {
        reject(error);
      }
    }
  };
  return {
    local: true,
    get size() {
      decideAsked();
      return keys.size;
    },
    decide(request) {
      const now = clock();
      return new Promise((resolve, reject) => {
        if (asked.push({ request, now, resolve, reject }) === 1) setImmediate(decideAsked);
      });
    },
    rules,
    // A given clock is told to the limiters on this store (contract.ts); the default is not.
    clock: options.clock === undefined ? undefined : clock,
    async reset(toReset) {
      decideAsked();
      for (const key of toReset) keys.delete(key);
    },
    async resetPrefix(prefix) {
      decideAsked();
      // Every key of a prefix starts so (keys.ts): counters, ids, bans; its rules are kept by prefix.
      keys.deleteStarting(`${prefix}:{`);
      rules.forget(prefix);
    },
    async close() {
      decideAsked();
      keys.clear();
    },
  };
}

/**
 * One decision, read as protocol.ts reads it and decided as lua/decide.lua's loop decides one: an
 * adjustment moves every policy first; every policy is checked before any is charged, and one policy
 * checks and charges in one pass; a release answers zeros, an id already recorded a peek's reply; a
 * reservation is checked as a peek at its cost, and charged its place in line when its turn is near enough.
 */
function decideNow(store: MemoryKeys, now: number, request: StoreRequest): StoreReply {
  const { keys, policies, slot = '' } = request;
  const op = opOf(request);
  const idTtl = idOf(request);
  const n = policies.length;
  if (op === 'a' || op === 'r') {
    for (let i = 0; i < n; i++) {
      const next = ALGORITHMS[policies[i]!.algorithm].adjust(store.read(keys[i]!, now) as never, now, policies[i]!, request.delta!, slot);
      if (next === null) store.write(keys[i]!, undefined, now, now);
      else if (next !== undefined) store.write(keys[i]!, next.state, now + next.ttlMs, now);
    }
  }
  if (op === 'r') return { allowed: true, states: policies.map(() => ({ remaining: 0, resetMs: 0, retryAfterMs: 0 })) };
  const replay = (op === 'c' || op === 'w') && idTtl > 0 && store.read(keys[n]!, now) !== undefined;
  const take = op === 'c' && !replay;
  const cost = op === 'c' || op === 'w' ? request.cost : 1;
  let apply = take && n === 1;
  const steps: StepResult<unknown>[] = new Array(n);
  let allowed = true;
  for (;;) {
    allowed = true;
    for (let i = 0; i < n; i++) {
      const step = ALGORITHMS[policies[i]!.algorithm].step(store.read(keys[i]!, now) as never, now, policies[i]!, cost, apply, slot);
      steps[i] = step;
      allowed &&= step.ok;
    }
    if (!allowed || !take || apply) break;
    apply = true;
  }
  if (op === 'w' && !replay) return reserve(store, now, request, steps);
  const states: PolicyState[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const { remaining, resetMs, next, windowMs } = steps[i]!;
    if (apply && next) store.write(keys[i]!, next.state, now + next.ttlMs, now);
    const retryAfterMs = replay ? 0 : steps[i]!.retryAfterMs;
    states[i] = windowMs === undefined ? { remaining, resetMs, retryAfterMs } : { remaining, resetMs, retryAfterMs, windowMs };
  }
  if (apply && allowed && idTtl > 0) store.write(keys[n]!, true, now + Math.ceil(idTtl), now);
  // A reservation's id replayed: it passes now, as decodeReply reads the script's reply.
  return op === 'w' ? { allowed: true, states, waitMs: 0 } : { allowed: allowed || replay, states };
}

/**
 * A reservation, as decide.lua's: its turn is the longest wait (whole µs) of its policies' checks. Within
 * maxWaitMs, each policy is charged its place in line and the reply passes with waitMs; else nothing.
 */
function reserve(store: MemoryKeys, now: number, request: StoreRequest, steps: readonly StepResult<unknown>[]): StoreReply {
  const { keys, policies, cost } = request;
  const n = policies.length;
  let most = 0;
  for (const step of steps) most = Math.max(most, Math.round(step.retryAfterMs * 1000));
  const states: PolicyState[] = new Array(n);
  const reserved = most <= waitArg(request.maxWaitMs as number);
  for (let i = 0; i < n; i++) {
    const { remaining, resetMs, retryAfterMs, windowMs } = steps[i]!;
    const state: PolicyState = reserved
      ? { remaining: Math.max(0, Math.floor(remaining - cost)), resetMs, retryAfterMs: 0 }
      : { remaining, resetMs, retryAfterMs };
    if (windowMs !== undefined) state.windowMs = windowMs;
    states[i] = state;
    if (!reserved) continue;
    const next = ALGORITHMS[policies[i]!.algorithm].reserve!(
      store.read(keys[i]!, now) as never,
      now,
      policies[i]!,
      cost,
      now + most / 1000,
    );
    if (next === null) store.write(keys[i]!, undefined, now, now);
    else if (next !== undefined) store.write(keys[i]!, next.state, now + next.ttlMs, now);
  }
  if (reserved && idOf(request) > 0) store.write(keys[n]!, true, now + Math.ceil(idOf(request)), now);
  return reserved ? { allowed: true, states, waitMs: most / 1000 } : { allowed: false, states, waitMs: 0 };
}
