// Fixed test vectors of the store protocol (protocol.ts): batches of requests on a test clock, the reply a
// store gives each (every store: the memory store, the Redis scripts, one of your own: conformance.ts runs
// them), and the exact KEYS and ARGV the batch encodes to for the decide script (protocol.test.ts).
import { parsePolicy } from '../policy/policy.js';
import type { PolicyState, StoreReply, StoreRequest } from './contract.js';

/** The test clock: 2026-01-15 12:00:00.250 UTC. */
export const NOW = Date.UTC(2026, 0, 15, 12, 0, 0, 250);
const DAY = 86_400_000;
const MIDNIGHT = Date.UTC(2026, 0, 15);

const tb = parsePolicy('10/1m');
const fw = parsePolicy({ limit: 3, window: '1s', algorithm: 'fixed-window' });
const fh = parsePolicy({ limit: 2, window: '1s', algorithm: 'fixed-window', start: 'first-hit' });
const sw = parsePolicy({ limit: 5, window: '10s', algorithm: 'sliding-window' });
const sl = parsePolicy({ limit: 2, window: '1s', algorithm: 'sliding-log' });
const cc = parsePolicy({ concurrent: 1, lease: '10s' });
const day = parsePolicy('2/day');
// A run joins requests whose policies are one array (a policy set's, as the limiter sends them).
const tbOnly = [tb];
const ccOnly = [cc];
const tbFw = [tb, fw];
const swSl = [sw, sl];
const tbDay = [tb, day];
const fhOnly = [fh];
const fhFw = [fh, fw];
const swOnly = [sw];

const consume = (keys: string[], policies: readonly (typeof tb)[], cost = 1, more: Partial<StoreRequest> = {}): StoreRequest => ({
  keys,
  policies,
  cost,
  peek: false,
  ...more,
});

/** A policy's state in a reply: remaining, resetMs, retryAfterMs, and windowMs when the window varies. */
const s = (remaining: number, resetMs: number, retryAfterMs: number, windowMs?: number): PolicyState =>
  windowMs === undefined ? { remaining, resetMs, retryAfterMs } : { remaining, resetMs, retryAfterMs, windowMs };
const ok = (...states: PolicyState[]): StoreReply => ({ allowed: true, states });
const no = (...states: PolicyState[]): StoreReply => ({ allowed: false, states });
/** A reservation's reply: its wait until its turn. */
const turn = (waitMs: number, reply: StoreReply): StoreReply => ({ ...reply, waitMs });

export interface Vector {
  name: string;
  requests: StoreRequest[];
  /** The reply to each request, decided one after another on a store of its own at NOW. */
  replies: StoreReply[];
  keys: string[];
  args: string[];
}

// KEYS: the guard 'g', then per request its keys. ARGV: call 1, the test clock, P specs (code, limit,
// window, burst, starts), then runs (count, op, cost, idTtl, slots, n, spec numbers).
export const VECTORS: Vector[] = [
  {
    name: 'consumes and a peek under several policies of several algorithms',
    requests: [
      consume(['{a}tb', '{a}fw'], tbFw),
      consume(['{a}tb', '{a}fw'], tbFw),
      { keys: ['{a}tb', '{a}fw'], policies: tbFw, cost: 1, peek: true },
      consume(['{b}sw', '{b}sl'], swSl, 2),
      consume(['{b}sw', '{b}sl'], swSl, 1),
    ],
    replies: [
      ok(s(9, 6000, 0), s(2, 750, 0)),
      ok(s(8, 12000, 0), s(1, 750, 0)),
      ok(s(8, 12000, 0), s(1, 750, 0)),
      ok(s(3, 19750, 0), s(0, 1000, 0)),
      no(s(3, 19750, 0), s(0, 1000, 1000)),
    ],
    keys: ['g', '{a}tb', '{a}fw', '{a}tb', '{a}fw', '{a}tb', '{a}fw', '{b}sw', '{b}sl', '{b}sw', '{b}sl'],
    args: [
      ...['1', String(NOW), '4'],
      ...['tb', '10', '60000', '10', '', 'fw', '3', '1000', '3', '', 'sw', '5', '10000', '5', '', 'sl', '2', '1000', '2', ''],
      ...['2', 'c', '1', '0', '', '2', '1', '2'],
      ...['1', 'p', '1', '0', '', '2', '1', '2'],
      ...['1', 'c', '2', '0', '', '2', '3', '4'],
      ...['1', 'c', '1', '0', '', '2', '3', '4'],
    ],
  },
  {
    name: 'an id: charged once, answered as a replay after, and a consume without it',
    requests: [
      consume(['{c}tb', '{c}id'], tbOnly, 4, { idTtlMs: 60_000 }),
      consume(['{c}tb', '{c}id'], tbOnly, 4, { idTtlMs: 60_000 }),
      consume(['{c}tb'], tbOnly, 4),
      consume(['{c}tb'], tbOnly, 4),
    ],
    replies: [ok(s(6, 24000, 0)), ok(s(6, 24000, 0)), ok(s(2, 48000, 0)), no(s(2, 48000, 12000))],
    keys: ['g', '{c}tb', '{c}id', '{c}tb', '{c}id', '{c}tb', '{c}tb'],
    args: [
      ...['1', String(NOW), '1', 'tb', '10', '60000', '10', ''],
      ...['2', 'c', '4', '60000', '', '1', '1'],
      ...['2', 'c', '4', '0', '', '1', '1'],
    ],
  },
  {
    name: 'a slot taken, refused, given back, taken again',
    requests: [
      consume(['{d}cc'], ccOnly, 1, { slot: 's1' }),
      consume(['{d}cc'], ccOnly, 1, { slot: 's2' }),
      consume(['{d}cc'], ccOnly, 1, { delta: -1, slot: 's1' }),
      consume(['{d}cc'], ccOnly, 1, { slot: 's3' }),
    ],
    replies: [ok(s(0, 0, 0)), no(s(0, 0, 0.001)), ok(s(0, 0, 0)), ok(s(0, 0, 0))],
    keys: ['g', '{d}cc', '{d}cc', '{d}cc', '{d}cc'],
    args: [
      ...['1', String(NOW), '1', 'cc', '1', '10000', '1', ''],
      ...['2', 'c', '1', '0', 's1 s2', '1', '1'],
      ...['1', 'r', '-1', '0', 's1', '1', '1'],
      ...['1', 'c', '1', '0', 's3', '1', '1'],
    ],
  },
  {
    name: 'adjustments: a refund, a charge past the limit, then a consume refused',
    requests: [
      consume(['{e}tb', '{e}fw'], tbFw, 3),
      consume(['{e}tb', '{e}fw'], tbFw, 1, { delta: -2 }),
      consume(['{e}tb'], tbOnly, 1, { delta: 12 }),
      consume(['{e}tb'], tbOnly, 1),
    ],
    replies: [ok(s(7, 18000, 0), s(0, 750, 0)), ok(s(9, 6000, 0), s(2, 750, 0)), no(s(0, 78000, 24000)), no(s(0, 78000, 24000))],
    keys: ['g', '{e}tb', '{e}fw', '{e}tb', '{e}fw', '{e}tb', '{e}tb'],
    args: [
      ...['1', String(NOW), '2', 'tb', '10', '60000', '10', '', 'fw', '3', '1000', '3', ''],
      ...['1', 'c', '3', '0', '', '2', '1', '2'],
      ...['1', 'a', '-2', '0', '', '2', '1', '2'],
      ...['1', 'a', '12', '0', '', '1', '1'],
      ...['1', 'c', '1', '0', '', '1', '1'],
    ],
  },
  {
    name: 'a calendar quota beside a token bucket: its spec carries the period starts',
    requests: [consume(['{f}tb', '{f}day'], tbDay), consume(['{f}tb', '{f}day'], tbDay), consume(['{f}tb', '{f}day'], tbDay)],
    replies: [
      ok(s(9, 6000, 0), s(1, 43199750, 0, 86400000)),
      ok(s(8, 12000, 0), s(0, 43199750, 0, 86400000)),
      no(s(8, 12000, 0), s(0, 43199750, 43199750, 86400000)),
    ],
    keys: ['g', '{f}tb', '{f}day', '{f}tb', '{f}day', '{f}tb', '{f}day'],
    args: [
      ...['1', String(NOW), '2', 'tb', '10', '60000', '10', ''],
      ...['ca', '2', String(DAY), '2', [MIDNIGHT - DAY, MIDNIGHT, MIDNIGHT + DAY, MIDNIGHT + 2 * DAY].join(' ')],
      ...['3', 'c', '1', '0', '', '2', '1', '2'],
    ],
  },
  {
    name: "a fixed window from the first hit (burst '0'): charged, refused, refunded, charged again, beside a clock-aligned one",
    requests: [
      consume(['{g}fh', '{g}fw'], fhFw),
      consume(['{g}fh', '{g}fw'], fhFw),
      consume(['{g}fh', '{g}fw'], fhFw),
      consume(['{g}fh'], fhOnly, 1, { delta: -1 }),
      consume(['{g}fh'], fhOnly),
      { keys: ['{g}fh'], policies: fhOnly, cost: 1, peek: true },
    ],
    replies: [
      ok(s(1, 1000, 0), s(2, 750, 0)),
      ok(s(0, 1000, 0), s(1, 750, 0)),
      no(s(0, 1000, 1000), s(1, 750, 0)),
      ok(s(1, 1000, 0)),
      ok(s(0, 1000, 0)),
      no(s(0, 1000, 1000)),
    ],
    keys: ['g', '{g}fh', '{g}fw', '{g}fh', '{g}fw', '{g}fh', '{g}fw', '{g}fh', '{g}fh', '{g}fh'],
    args: [
      ...['1', String(NOW), '2', 'fw', '2', '1000', '0', '', 'fw', '3', '1000', '3', ''],
      ...['3', 'c', '1', '0', '', '2', '1', '2'],
      ...['1', 'a', '-1', '0', '', '1', '1'],
      ...['1', 'c', '1', '0', '', '1', '1'],
      ...['1', 'p', '1', '0', '', '1', '1'],
    ],
  },
  {
    name: "reservations ('w', limiter.wait): a place in line within maxWait, a refusal past it, an id replayed, a sliding window's next window",
    requests: [
      consume(['{h}tb'], tbOnly, 10),
      // The bucket refills one every 6 s: the first reservation's turn is in 6 s, the next's 12 s is past 10 s.
      consume(['{h}tb'], tbOnly, 1, { maxWaitMs: 10_000 }),
      consume(['{h}tb'], tbOnly, 1, { maxWaitMs: 10_000 }),
      consume(['{h}tb', '{h}id'], tbOnly, 1, { maxWaitMs: 20_000, idTtlMs: 60_000 }),
      consume(['{h}tb', '{h}id'], tbOnly, 1, { maxWaitMs: 20_000, idTtlMs: 60_000 }),
      consume(['{i}sw'], swOnly, 5),
      consume(['{i}sw'], swOnly, 2, { maxWaitMs: 20_000 }),
    ],
    replies: [
      ok(s(0, 60000, 0)),
      turn(6000, ok(s(0, 60000, 0))),
      turn(0, no(s(0, 66000, 12000))),
      turn(12000, ok(s(0, 66000, 0))),
      turn(0, ok(s(0, 72000, 0))),
      ok(s(0, 19750, 0)),
      turn(13750, ok(s(0, 19750, 0))),
    ],
    keys: ['g', '{h}tb', '{h}tb', '{h}tb', '{h}tb', '{h}id', '{h}tb', '{h}id', '{i}sw', '{i}sw'],
    args: [
      ...['1', String(NOW), '2', 'tb', '10', '60000', '10', '', 'sw', '5', '10000', '5', ''],
      ...['1', 'c', '10', '0', '', '1', '1'],
      ...['2', 'w10000000', '1', '0', '', '1', '1'],
      ...['2', 'w20000000', '1', '60000', '', '1', '1'],
      ...['1', 'c', '5', '0', '', '1', '2'],
      ...['1', 'w20000000', '2', '0', '', '1', '2'],
    ],
  },
];
