// The store protocol on a real Redis: the script answers each of the fixed vectors (store/vectors.ts) as they
// fix it, a whole batch in one call, and the Redis store passes runStoreVectors as the memory store does; a
// script error names the lua/ file it comes from; and redisStore({ clock }), the test kit, drives the script's clock.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createLimiter, memoryStore, redisStore, runStoreVectors } from '@sluice/core';
import type Redis from 'ioredis';
import { DECIDE_SCRIPT } from '../packages/core/src/lua.generated';
import { parsePolicy } from '../packages/core/src/policy/policy';
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

  it.each(VECTORS.map((v) => [v.name, v] as const))('the script answers the vector "%s" in one call as fixed', async (_name, vector) => {
    const prefix = uniquePrefix();
    // The batch under keys of this test's own: the prefix goes before each key's hash tag.
    const requests = vector.requests.map((r) => ({ ...r, keys: r.keys.map((k) => `${prefix}${k}`) }));
    const { keys, args } = encodeBatch(requests, { guard: `${prefix}:guard`, call: 1, wall: NOW, now: NOW });
    expect(decodeReply(await client.eval(DECIDE_SCRIPT, keys.length, ...keys, ...args), requests, NOW)).toEqual(vector.replies);
  });

  it('the Redis store passes the store vectors, one decision at a time', async () => {
    const decisions = VECTORS.reduce((n, v) => n + v.requests.length, 0);
    await expect(runStoreVectors((clock) => redisStore({ client, clock }), { prefix: uniquePrefix() })).resolves.toBe(decisions);
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
    // A generous timeout: a first call loads the script, which a loaded machine may take more than 50 ms for.
    const onRedis = createLimiter({ policy, store: redisStore({ client, clock }), prefix, denyCache: false, timeout: 5000 });
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
