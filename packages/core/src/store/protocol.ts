// The protocol between the stores and lua/decide.lua: the one place that knows the script's KEYS and
// ARGV layout and its reply. store/redis/dispatch.ts sends what encodeBatch builds and reads replies with
// decodeReply; memory-store.ts decides each request by the same reading (opOf, idOf), so both stores
// answer a request alike. protocol.test.ts pins the layout with fixed vectors, and
// test/protocol.redis.test.ts has the script and the memory store answer them.
//
// KEYS  the call guard, then per decision its n policies' keys and, for a consume with an id, the id's.
// ARGV  call number, now ('' for the server's TIME: a test clock sends its own), P, then P specs of
//       SPEC_FIELDS each (algorithm code, limit, window ms, burst, calendar period starts or ''), then
//       runs of decisions alike, RUN_FIELDS each and one spec number per policy:
//       count, op, cost, idTtl ('0': none), slots (one per decision, space-separated; '' for none), n.
// Reply per decision and policy: remaining, resetMs, retryAfterUs (whole µs; 0 when the policy passed;
// negated for a reservation that passes: its wait until its turn). A decision that needs a write Redis
// refuses, being out of memory, answers REFUSED as remaining (its policies all do): it is not decided.

import { describe } from '../errors.js';
import { calendarArg, periodLengthAt } from '../policy/calendar-periods.js';
import { ALGORITHM_CODES, type Policy } from '../policy/policy.js';
import { type PolicyState, StoreRefusal, type StoreReply, type StoreRequest } from './contract.js';

/**
 * A reply's `remaining` for a decision the script did not decide: Redis is out of memory (maxmemory,
 * noeviction) and the decision needs a write (lua/decide.lua runs such a call read-only). Nothing was charged.
 */
export const REFUSED = -1;
const OUT_OF_MEMORY =
  "OOM: Redis is out of memory (used memory > 'maxmemory') and refused the write this decision needs; nothing was charged";

/** Fields of a spec in ARGV, and of a run's head before its spec numbers. */
export const SPEC_FIELDS = 5;
export const RUN_FIELDS = 6;

/**
 * What a request asks: 'c' consume (check every policy, charge all or none), 'p' peek (check, cost 1),
 * 'a' adjust (move every policy by delta without a check, then answer as a peek), 'r' release (an
 * adjustment that gives a slot back: `delta` with `slot`; answered with zeros, which no one reads),
 * 'w' reserve (limiter.wait: `maxWaitMs`; sent as 'w' and the most wait in whole µs, see waitArg).
 */
export type Op = 'c' | 'p' | 'a' | 'r' | 'w';

/** The one reading of a request's kind, for both stores. */
export function opOf(request: StoreRequest): Op {
  if (request.maxWaitMs !== undefined) return 'w';
  if (request.delta !== undefined) return request.slot === undefined ? 'a' : 'r';
  return request.peek ? 'p' : 'c';
}

/** The id record's ttl in ms, 0 for none: a request with one has one more key, after its policies'. */
export function idOf(request: StoreRequest): number {
  return request.idTtlMs ?? 0;
}

/** A reservation's most wait in whole µs, as the op carries it ('w' and this), rounded down. */
export function waitArg(maxWaitMs: number): number {
  return Math.floor(maxWaitMs * 1000);
}

/** A call's header: the guard key and the call's number (lua/decide.lua's call guard), and its clocks. */
export interface CallHeader {
  guard: string;
  call: number;
  /** The app's ms clock, on which calendar quotas' candidate period starts are computed. */
  wall: number;
  /** A test clock's now, which the script then decides on instead of the server's TIME. */
  now?: number;
}

/**
 * The script's KEYS and ARGV for a batch of requests. Requests alike in a row (same policies, op, cost,
 * id ttl, with or without a slot) share one run.
 * @example encodeBatch([{ keys: ['k'], policies: [p], cost: 1, peek: false }], { guard: 'g', call: 1, wall: Date.now() })
 */
export function encodeBatch(requests: readonly StoreRequest[], header: CallHeader): { keys: string[]; args: string[] } {
  const keys: string[] = [header.guard];
  const specArgs: string[] = [];
  const runs: string[] = [];
  const specs = new Map<Policy, string>();
  let shape: StoreRequest | undefined;
  let count = 0;
  let head = 0;
  let slots = '';
  for (const request of requests) {
    const { policies } = request;
    const n = policies.length;
    for (let i = 0; i < n; i++) keys.push(request.keys[i] as string);
    if (idOf(request) > 0) keys.push(request.keys[n] as string);
    if (shape !== undefined && alike(request, shape)) {
      count++;
      if (request.slot !== undefined) slots += ` ${request.slot}`;
      continue;
    }
    if (shape !== undefined) close(runs, head, count, slots);
    shape = request;
    count = 1;
    slots = request.slot ?? '';
    head = runs.length;
    const op = opOf(request);
    const cost = op === 'c' || op === 'w' ? request.cost : op === 'p' ? 1 : (request.delta as number);
    const opArg = op === 'w' ? `w${waitArg(request.maxWaitMs as number)}` : op;
    runs.push('', opArg, String(cost), String(idOf(request)), '', String(n));
    for (const policy of policies) {
      let spec = specs.get(policy);
      if (spec === undefined) {
        spec = String(specs.size + 1);
        specs.set(policy, spec);
        const starts = policy.period ? calendarArg(policy.period, policy.timeZone as string, header.wall) : '';
        // A first-hit fixed window sends burst 0 (a burst is >= 1 otherwise): lua/fixed-window.lua reads it so.
        const burst = policy.start === 'first-hit' ? '0' : String(policy.burst);
        specArgs.push(ALGORITHM_CODES[policy.algorithm], String(policy.limit), String(policy.windowMs), burst, starts);
      }
      runs.push(spec);
    }
  }
  if (shape !== undefined) close(runs, head, count, slots);
  const args = [String(header.call), header.now === undefined ? '' : String(header.now), String(specs.size)];
  for (const x of specArgs) args.push(x);
  for (const x of runs) args.push(x);
  return { keys, args };
}

/** Whether `request` joins the run that `shape` opened. */
function alike(request: StoreRequest, shape: StoreRequest): boolean {
  return (
    request.policies === shape.policies &&
    request.peek === shape.peek &&
    (request.peek || request.cost === shape.cost) &&
    request.delta === shape.delta &&
    request.idTtlMs === shape.idTtlMs &&
    request.maxWaitMs === shape.maxWaitMs &&
    (request.slot !== undefined) === (shape.slot !== undefined)
  );
}

function close(runs: string[], head: number, count: number, slots: string): void {
  runs[head] = String(count);
  runs[head + 4] = slots;
}

/**
 * The script's reply as one StoreReply per request (a StoreRefusal for one it did not decide), or an
 * Error naming what is wrong with its shape: three integers per (request, policy). A request is allowed
 * when no policy's retry is above 0 (a denying policy answers >= 1 µs); a reservation's passing policies
 * answer their wait negated, and its reply's waitMs is the longest. `wall` is the header's: a calendar
 * quota's period length is read from it.
 * @example decodeReply([5, 60000, 0], [request], wall) // [{ allowed: true, states: [{ remaining: 5, ... }] }]
 */
export function decodeReply(reply: unknown, requests: readonly StoreRequest[], wall: number): (StoreReply | StoreRefusal)[] | Error {
  if (!isReply(reply, requests)) return new Error(`the script's reply is malformed (${describe(reply)})`);
  const replies: (StoreReply | StoreRefusal)[] = new Array(requests.length);
  let at = 0;
  for (let d = 0; d < requests.length; d++) {
    const { policies } = requests[d] as StoreRequest;
    let allowed = true;
    let waitUs = 0;
    const n = policies.length;
    if (reply[at] === REFUSED) {
      replies[d] = new StoreRefusal(OUT_OF_MEMORY);
      at += 3 * n;
      continue;
    }
    const states: PolicyState[] = new Array(n);
    for (let i = 0; i < n; i++) {
      const remaining = reply[at] as number;
      const resetMs = reply[at + 1] as number;
      const retryAfterUs = reply[at + 2] as number;
      at += 3;
      if (retryAfterUs > 0) allowed = false;
      else if (-retryAfterUs > waitUs) waitUs = -retryAfterUs;
      const state: PolicyState = { remaining, resetMs, retryAfterMs: retryAfterUs > 0 ? retryAfterUs / 1000 : 0 };
      const { period, timeZone } = policies[i] as Policy;
      if (period) state.windowMs = periodLengthAt(period, timeZone as string, wall, resetMs);
      states[i] = state;
    }
    replies[d] =
      (requests[d] as StoreRequest).maxWaitMs === undefined
        ? { allowed, states }
        : { allowed, states, waitMs: allowed ? waitUs / 1000 : 0 };
  }
  return replies;
}

/** Whether the reply has the shape decodeReply reads: three numbers per (request, policy). */
function isReply(values: unknown, requests: readonly StoreRequest[]): values is number[] {
  if (!Array.isArray(values)) return false;
  let expected = 0;
  for (const { policies } of requests) expected += 3 * policies.length;
  if (values.length !== expected) return false;
  for (const v of values) if (typeof v !== 'number') return false;
  return true;
}
