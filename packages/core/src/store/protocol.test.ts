// The protocol's reading of a request and of a reply, and the fixed vectors' KEYS and ARGV. The script on
// Redis answers the vectors in test/protocol.redis.test.ts.

import { LUA_LINES } from '../lua.generated.js';
import { parsePolicy } from '../policy/policy.js';
import type { StoreRequest } from './contract.js';
import { StoreRefusal } from './contract.js';
import { decodeReply, encodeBatch, opOf, REFUSED } from './protocol.js';
import { luaSource, sourceLines } from './redis/scripts.js';
import { NOW, VECTORS } from './vectors.js';

const tb = parsePolicy('10/1m');
const day = parsePolicy({ limit: 5, window: 'day' });
const tbOnly = [tb];
const consume = (key: string, cost = 1): StoreRequest => ({ keys: [key], policies: tbOnly, cost, peek: false });

describe('protocol', () => {
  it('reads a request as one op: consume, peek, adjust, release (an adjustment with a slot)', () => {
    expect(opOf(consume('k'))).toBe('c');
    expect(opOf({ ...consume('k'), peek: true })).toBe('p');
    expect(opOf({ ...consume('k'), delta: -1 })).toBe('a');
    expect(opOf({ ...consume('k'), delta: -1, slot: 's' })).toBe('r');
  });

  it('decodes three numbers per (request, policy); a calendar state carries its period length', () => {
    const wall = Date.UTC(2026, 0, 15, 12);
    const requests = [consume('a'), { keys: ['b'], policies: [day], cost: 1, peek: false }];
    const replies = decodeReply([9, 6000, 0, 0, 43_200_000, 43_200_000_000], requests, wall);
    expect(replies).toEqual([
      { allowed: true, states: [{ remaining: 9, resetMs: 6000, retryAfterMs: 0 }] },
      { allowed: false, states: [{ remaining: 0, resetMs: 43_200_000, retryAfterMs: 43_200_000, windowMs: 86_400_000 }] },
    ]);
  });

  it('a decision answered REFUSED (Redis out of memory) is a StoreRefusal naming OOM; the others of its call decode as ever', () => {
    const requests = [consume('a'), { keys: ['b', 'c'], policies: [tb, day], cost: 1, peek: false }, consume('d')];
    const replies = decodeReply([0, 6000, 6_000_000, REFUSED, 0, 0, REFUSED, 0, 0, 9, 6000, 0], requests, 0) as unknown[];
    expect(replies[0]).toEqual({ allowed: false, states: [{ remaining: 0, resetMs: 6000, retryAfterMs: 6000 }] });
    expect(replies[1]).toBeInstanceOf(StoreRefusal);
    expect((replies[1] as Error).message).toMatch(/^OOM: .*nothing was charged/);
    expect(replies[2]).toEqual({ allowed: true, states: [{ remaining: 9, resetMs: 6000, retryAfterMs: 0 }] });
  });

  it.each([
    ['not an array', 'OK'],
    ['too short', [1, 2]],
    ['a string among the numbers', [1, '2', 3]],
  ])("a reply %s is an Error naming the script's reply, not a decision", (_what, reply) => {
    const decoded = decodeReply(reply, [consume('a')], 0);
    expect(decoded).toBeInstanceOf(Error);
    expect((decoded as Error).message).toMatch(/^the script's reply is malformed/);
  });

  it.each(VECTORS.map((v) => [v.name, v] as const))('encodes the vector "%s" to its fixed KEYS and ARGV', (_name, vector) => {
    expect(encodeBatch(vector.requests, { guard: 'g', call: 1, wall: NOW, now: NOW })).toEqual({ keys: vector.keys, args: vector.args });
  });

  it('puts requests alike in a row into one run, and a spec once per policy', () => {
    const { keys, args } = encodeBatch([consume('a'), consume('b'), consume('c', 2)], { guard: 'g', call: 7, wall: 0 });
    expect(keys).toEqual(['g', 'a', 'b', 'c']);
    expect(args).toEqual(['7', '', '1', 'tb', '10', '60000', '10', '', '2', 'c', '1', '0', '', '1', '1', '1', 'c', '2', '0', '', '1', '1']);
  });
});

describe('the generated script maps its lines back to lua/', () => {
  it('every file of lua/ has its lines, in order, and gen-lua lines (markers, dispatch) map to none', () => {
    expect(LUA_LINES.map(([, file]) => file)).toContain('lua/decide.lua');
    const [first, file, line] = LUA_LINES[0] as readonly [number, string, number, number];
    expect(luaSource(first)).toBe(`${file}:${line}`);
    expect(luaSource(first - 1)).toBeUndefined();
  });

  it("rewrites Redis' user_script:<line> and leaves other errors alone", () => {
    const [first, file, , lines] = LUA_LINES[1] as readonly [number, string, number, number];
    const error = sourceLines(new Error(`ERR user_script:${first + lines - 1}: boom script: abc, on @user_script:${first + lines - 1}.`));
    expect((error as Error).message).toBe(
      `ERR ${file}:${lines} (user_script:${first + lines - 1}): boom script: abc, on @${file}:${lines} (user_script:${first + lines - 1}).`,
    );
    const frozen = Object.freeze(new Error(`ERR user_script:${first}: boom`));
    const mapped = sourceLines(frozen) as Error;
    expect(mapped).not.toBe(frozen);
    expect(mapped).toMatchObject({ message: `ERR ${file}:1 (user_script:${first}): boom`, cause: frozen });
    const other = new Error('NOSCRIPT No matching script');
    expect(sourceLines(other)).toBe(other);
    expect(other.message).toBe('NOSCRIPT No matching script');
  });
});
