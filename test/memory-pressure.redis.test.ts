// A full Redis (maxmemory-policy noeviction, filled until it refuses writes) still decides what writes
// nothing: a client at its limit is denied by the store, while an admission, which needs a write, goes
// to the fail mode with a store-error naming OOM. Nothing is written meanwhile, and a call already run
// is still refused (exactly once).
import { createLimiter, type LimiterEvent, redisStore } from '@sluice/core';
import Redis from 'ioredis';
import { parsePolicy } from '../packages/core/src/policy/policy';
import { StoreRefusal, type StoreRequest } from '../packages/core/src/store/contract';
import { decodeReply, encodeBatch } from '../packages/core/src/store/protocol';
import { scriptClient } from '../packages/core/src/store/redis/clients';
import { runDecide } from '../packages/core/src/store/redis/scripts';
import { type RedisServer, startServer, uniquePrefix } from './support/redis';

let server: RedisServer;
let client: Redis;

/** Writes values of 64 KB until Redis refuses one (OOM), then sets maxmemory 1 MB under what it uses. */
async function fill(): Promise<void> {
  const value = 'x'.repeat(65_536);
  for (let i = 0; ; i++) {
    const refused = await client.set(`fill:${i}`, value).then(
      () => undefined,
      (e: Error) => e,
    );
    if (refused !== undefined) {
      expect(refused.message).toMatch(/^OOM /);
      break;
    }
  }
  // Full by a margin: the few KB a connection's buffers give back cannot take it under maxmemory again.
  const used = Number(/used_memory:(\d+)/.exec(await client.info('memory'))?.[1]);
  await client.config('SET', 'maxmemory', String(used - 1_048_576));
}

const empty = async () => {
  await client.config('SET', 'maxmemory', '0');
  // SYNC: Valkey 8 frees a FLUSHDB in the background by default, and the next test would start full.
  await client.flushdb('SYNC');
  await client.config('SET', 'maxmemory', '8mb');
};

beforeAll(async () => {
  server = await startServer(['--maxmemory', '8mb', '--maxmemory-policy', 'noeviction']);
  client = new Redis(server.url);
  await new Promise((r) => client.once('ready', r));
});
afterEach(empty);
afterAll(async () => {
  client.disconnect();
  await server.stop();
});

describe('a full Redis (noeviction)', () => {
  function limiter(events: LimiterEvent[]) {
    return createLimiter({
      policy: '1/1h',
      store: redisStore({ client }),
      prefix: uniquePrefix(),
      failMode: 'open',
      timeout: 2000,
      onEvent: (e) => events.push(e),
    });
  }

  it('a client at its limit is still denied by the store while Redis is out of memory', async () => {
    const events: LimiterEvent[] = [];
    const l = limiter(events);
    expect(await l.consume('at-limit')).toMatchObject({ allowed: true, source: 'store' });
    await fill();
    expect(await l.consume('at-limit')).toMatchObject({ allowed: false, source: 'store' });
    expect(events.filter((e) => e.type === 'store-error')).toEqual([]);
    await l.close();
  });

  it('an admission goes to the fail mode with a store-error naming OOM, charging nothing, and the breaker stays closed', async () => {
    const events: LimiterEvent[] = [];
    const l = limiter(events);
    expect(await l.consume('at-limit')).toMatchObject({ allowed: true, source: 'store' });
    await fill();
    const before = await client.dbsize();
    // More admissions than the breaker's failures (5): a refusal is the store's answer, not its failure.
    for (let i = 0; i < 8; i++) expect(await l.consume(`fresh-${i}`)).toMatchObject({ allowed: true, source: 'fail-open' });
    const errors = events.filter((e) => e.type === 'store-error');
    expect(errors).toHaveLength(8);
    expect(errors[0]).toMatchObject({ key: 'fresh-0', error: expect.any(StoreRefusal) });
    expect(errors[0]?.error?.message).toMatch(/^OOM: Redis is out of memory/);
    expect(events.some((e) => e.type === 'breaker-open')).toBe(false);
    expect(await client.dbsize()).toBe(before);
    expect(await l.consume('at-limit')).toMatchObject({ allowed: false, source: 'store' });
    // Memory back: admissions come from the store again.
    await client.config('SET', 'maxmemory', '0');
    expect(await l.consume('fresh-0')).toMatchObject({ allowed: true, source: 'store' });
    await l.close();
  });

  it('in one batched call, each decision is answered alone: a denial and a peek by the store, an admission by the fail mode', async () => {
    const events: LimiterEvent[] = [];
    const l = limiter(events);
    expect(await l.consume('at-limit')).toMatchObject({ allowed: true, source: 'store' });
    await fill();
    // Asked in one turn: one script call.
    const [denied, admitted, peeked] = await Promise.all([l.consume('at-limit'), l.consume('fresh'), l.peek('other')]);
    expect(denied).toMatchObject({ allowed: false, source: 'store' });
    expect(admitted).toMatchObject({ allowed: true, source: 'fail-open' });
    expect(peeked).toMatchObject({ allowed: true, source: 'store', remaining: 1 });
    expect(events.filter((e) => e.type === 'store-error').map((e) => e.key)).toEqual(['fresh']);
    await l.close();
  });
});

describe('the script on a full Redis', () => {
  const tb = [parsePolicy('2/1h')];
  const tbFw = [parsePolicy('2/1h'), parsePolicy({ limit: 5, window: '1m', algorithm: 'fixed-window' })];
  const cc = [parsePolicy({ concurrent: 1, lease: '1m' })];
  const run = async (requests: StoreRequest[], guard: string, call: number) => {
    const { keys, args } = encodeBatch(requests, { guard, call, wall: Date.now() });
    return runDecide(
      scriptClient(client, () => true),
      keys,
      args,
      () => String(call + 1000),
    );
  };
  /** Every key under `prefix` with its value (DUMP) and TTL. */
  const snapshot = async (prefix: string) => {
    const keys = (await client.keys(`${prefix}*`)).sort();
    return Promise.all(keys.map(async (k) => [k, await client.dumpBuffer(k), (await client.pttl(k)) > 0]));
  };

  it('answers what writes nothing, refuses what would write, and writes nothing at all', async () => {
    const p = uniquePrefix();
    const guard = `${p}:guard`;
    const consume = (tag: string, policies = tb, more: Partial<StoreRequest> = {}): StoreRequest => ({
      keys: [...policies.map((_, i) => `${p}{${tag}}:${i}`), ...(more.idTtlMs ? [`${p}{${tag}}:id`] : [])],
      policies,
      cost: 1,
      peek: false,
      ...more,
    });
    // Before Redis is full: a bucket at its limit, an id recorded, a slot taken.
    const setup = [
      consume('full', tb, { cost: 2 }),
      consume('ided', tb, { idTtlMs: 60_000 }),
      consume('slot', cc, { slot: 's1' }),
      consume('two', tbFw, { cost: 2 }),
    ];
    const charged = decodeReply(await run(setup, guard, 1), setup, Date.now()) as { allowed: boolean }[];
    expect(charged.map((r) => r.allowed)).toEqual([true, true, true, true]);
    await fill();
    const before = await snapshot(p);
    const requests = [
      consume('full'), // denied: answered
      consume('fresh'), // admitted: refused
      { ...consume('fresh'), peek: true }, // a peek: answered
      consume('ided', tb, { idTtlMs: 60_000 }), // the id's replay: answered, allowed
      consume('ided2', tb, { idTtlMs: 60_000 }), // a new id: refused
      consume('full', tb, { maxWaitMs: 1000 }), // a reservation past its most wait: answered, denied
      consume('fresh', tb, { maxWaitMs: 1000 }), // a place in line: refused
      consume('full', tb, { delta: -1 }), // an adjustment: refused
      consume('slot', cc, { delta: -1, slot: 's1' }), // a release: refused
      consume('slot', cc, { slot: 's2' }), // a slot taken by another: denied, answered
      consume('two', tbFw), // the bucket denies: answered
    ];
    const replies = decodeReply(await run(requests, guard, 2), requests, Date.now()) as unknown[];
    expect(replies.map((r) => (r instanceof StoreRefusal ? 'refused' : (r as { allowed: boolean }).allowed))).toEqual([
      false,
      'refused',
      true,
      true,
      'refused',
      false,
      'refused',
      'refused',
      'refused',
      false,
      false,
    ]);
    expect(replies[0]).toMatchObject({ states: [{ remaining: 0, retryAfterMs: expect.any(Number) }] });
    expect(replies[2]).toMatchObject({ states: [{ remaining: 2 }] });
    expect(await snapshot(p)).toEqual(before);
    // Exactly once: a call already run is refused, full or not.
    await expect(run(requests, guard, 1)).rejects.toThrow(/^SLUICE_AGAIN/);
  });
});
