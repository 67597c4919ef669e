// The store protocol on a real Redis: fixed vectors (test/protocol.vectors.ts) encode to exact KEYS and
// ARGV, and the script and the memory store answer each batch alike on one test clock; a script error
// names the lua/ file it comes from; and redisStore({ clock }), the test kit, drives the script's clock.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createLimiter, memoryStore, redisStore } from '@sluice/core';
import type Redis from 'ioredis';
import { DECIDE_SCRIPT } from '../packages/core/src/lua.generated';
import { parsePolicy } from '../packages/core/src/policy/policy';
import type { StoreReply } from '../packages/core/src/store/contract';
import { decodeReply, encodeBatch } from '../packages/core/src/store/protocol';
import { scriptClient } from '../packages/core/src/store/redis/clients';
import { runDecide } from '../packages/core/src/store/redis/scripts';
import { NOW, VECTORS } from '../packages/core/src/store/vectors';
import { type startRedis, uniquePrefix } from './support/redis';
import { startRedisWithClient, stopRedisWithClient } from './support/redis-client';

/** The 1-based line of lua/<file> that holds `text`. */
function lineOf(file: string, text: string): number {
  const lines = readFileSync(join(__dirname, '..', 'lua', file), 'utf8').split('\n');
  const at = lines.findIndex((line) => line.includes(text));
  if (at < 0) throw new Error(`lua/${file} has no line with ${text}`);
  return at + 1;
}

describe('the store protocol on a real Redis', () => {
  let server: Awaited<ReturnType<typeof startRedis>>;
  let client: Redis;
  beforeAll(async () => {
    ({ server, client } = await startRedisWithClient());
  });
  afterAll(() => stopRedisWithClient({ server, client }));

  describe.each(VECTORS.map((v) => [v.name, v] as const))('%s', (_name, vector) => {
    it('encodes to its fixed KEYS and ARGV', () => {
      expect(encodeBatch(vector.requests, { guard: 'g', call: 1, wall: NOW, now: NOW })).toEqual({ keys: vector.keys, args: vector.args });
    });

    it('the script on Redis and the memory store answer it alike', async () => {
      const prefix = uniquePrefix();
      // The same batch under keys of this test's own: the prefix goes before each key's hash tag.
      const requests = vector.requests.map((r) => ({ ...r, keys: r.keys.map((k) => `${prefix}${k}`) }));
      const { keys, args } = encodeBatch(requests, { guard: `${prefix}:guard`, call: 1, wall: NOW, now: NOW });
      const onRedis = decodeReply(await client.eval(DECIDE_SCRIPT, keys.length, ...keys, ...args), requests, NOW);
      const store = memoryStore({ clock: () => NOW });
      const inMemory: StoreReply[] = [];
      for (const request of requests) inMemory.push(await store.decide(request));
      expect(onRedis).toEqual(inMemory);
    });
  });

  it('the vectors hold a denial, a replay and a release: the decisions they pin', async () => {
    const answers = await Promise.all(
      VECTORS.map(async (v) => {
        const store = memoryStore({ clock: () => NOW });
        const replies: StoreReply[] = [];
        for (const request of v.requests) replies.push(await store.decide(request));
        return replies.map((r) => r.allowed);
      }),
    );
    expect(answers).toEqual([
      [true, true, true, true, false],
      [true, true, true, false],
      [true, false, true, true],
      // An adjustment answers as a peek after it: past the limit, a peek is refused.
      [true, true, false, false],
      [true, true, false],
      // A first-hit window: refused at its limit, a refund lets one more through.
      [true, true, false, true, true, false],
      // Reservations: in line, refused past maxWait, an id's, its replay, a sliding window's.
      [true, true, false, true, true, true, true],
    ]);
  });

  it.each([
    ['token-bucket', 'prelude.lua', "return call('GET', key)"],
    ['sliding-log', 'sliding-log.lua', "local newest = call('ZRANGE', key, '-1', '-1', 'WITHSCORES')[2]"],
  ] as const)('a script error on a %s key of the wrong type names lua/%s and its line', async (algorithm, file, text) => {
    const key = `${uniquePrefix()}:{k}:p`;
    await client.hset(key, 'not', 'a counter');
    const policy = parsePolicy({ limit: 5, window: '1m', algorithm });
    const request = { keys: [key], policies: [policy], cost: 1, peek: false };
    const { keys, args } = encodeBatch([request], { guard: `${key}:guard`, call: 1, wall: NOW });
    const error = (await runDecide(
      scriptClient(client, () => true),
      keys,
      args,
      () => '2',
    ).catch((e: unknown) => e)) as Error;
    expect(error.message).toContain('WRONGTYPE');
    expect(error.message).toContain(`lua/${file}:${lineOf(file, text)} (user_script:`);
  });

  it('a malformed ARGV through the raw script names lua/decide.lua', async () => {
    const guard = `${uniquePrefix()}:guard`;
    const error = (await runDecide(
      scriptClient(client, () => true),
      [guard],
      ['1', '', 'two'],
      () => '2',
    ).catch((e: unknown) => e)) as Error;
    expect(error.message).toMatch(/lua\/decide\.lua:\d+ \(user_script:\d+\)/);
  });

  it("the test kit: redisStore({ clock }) decides on the test's clock, exactly, as memoryStore({ clock }) does", async () => {
    let now = NOW;
    const clock = () => now;
    const prefix = uniquePrefix();
    const policy = { limit: 2, window: '1m', algorithm: 'fixed-window' } as const;
    const onRedis = createLimiter({ policy, store: redisStore({ client, clock }), prefix, denyCache: false });
    const inMemory = createLimiter({ policy, store: memoryStore({ clock }), prefix });
    const both = async () => {
      const [a, b] = await Promise.all([onRedis.consume('k'), inMemory.consume('k')]);
      expect(a).toMatchObject({ allowed: b.allowed, remaining: b.remaining, resetMs: b.resetMs, retryAfterMs: b.retryAfterMs });
      return a;
    };
    await both();
    await both();
    // The window is [12:00:00, 12:01:00) on the test clock: 59.75 s left, to the ms.
    expect(await both()).toMatchObject({ allowed: false, retryAfterMs: 59_750 });
    now += 59_750;
    expect(await both()).toMatchObject({ allowed: true, remaining: 1 });
  });
});
