// The store's log of rule changes (store.ts RuleStore.changes), lua/rules.lua on a real Redis and the memory
// store held against the same claims: a copy that reads the changes since its version holds what a full
// read holds, whatever the writes, removals and ttls in between; a copy the log no longer reaches back to
// reads every rule; writes sweep lapsed rules out, and copies drop them; a store written by a script that
// kept no log is read in full, then change by change.
import { memoryStore, type RuleStore, redisStore, type Store } from '@sluice/core';
import fc from 'fast-check';
import Redis from 'ioredis';
import { type RedisServer, sleep, startRedis, uniquePrefix } from './support/redis';

jest.setTimeout(60_000);

/** A copy as rule-copy.ts keeps one, reduced to its identities and values. */
class Copy {
  version = -1;
  held = new Map<string, string>();

  async follow(rs: RuleStore, prefix: string): Promise<{ full: boolean; entries: number }> {
    const c = await rs.changes(prefix, this.version, 0);
    if (c.full) this.held = new Map();
    for (const [id, value] of c.entries) {
      if (value === null) this.held.delete(id);
      else this.held.set(id, value);
    }
    this.version = c.version;
    return { full: c.full, entries: c.entries.length };
  }

  /** The rules held that are in force at `now`, sorted. */
  live(now: number): [string, string][] {
    return [...this.held].filter(([, v]) => inForce(v, now)).sort(([a], [b]) => a.localeCompare(b));
  }
}

const inForce = (value: string, now: number): boolean => {
  const at = Number(value.slice(0, value.indexOf('|')));
  return at === 0 || at > now;
};

/** Every rule in force, as a full read answers it, sorted; and the store's time of the read. */
async function fullRead(rs: RuleStore, prefix: string): Promise<{ now: number; entries: [string, string | null][] }> {
  const c = await rs.changes(prefix, -1, 0);
  expect(c.full).toBe(true);
  return { now: c.now, entries: [...c.entries].sort(([a], [b]) => a.localeCompare(b)) };
}

const id = (n: number) => JSON.stringify(['deny', '', `k${n}`]);

let server: RedisServer;
let client: Redis;
beforeAll(async () => {
  server = await startRedis();
  client = new Redis({ port: server.port });
});
afterAll(async () => {
  client.disconnect();
  await server.stop();
});

const stores: [string, () => Store][] = [
  ['memory', () => memoryStore()],
  ['Redis', () => redisStore({ client })],
];

describe.each(stores)('the log of rule changes, %s store', (_, makeStore) => {
  let rs: RuleStore;
  beforeAll(() => {
    rs = makeStore().rules as RuleStore;
  });

  it('a copy that follows the changes holds what a full read holds, on random writes, removals and ttls', async () => {
    const op = fc.record({
      op: fc.constantFrom('write', 'write', 'remove', 'follow'),
      n: fc.nat(7),
      ttl: fc.constantFrom(0, 0, 1, 3_600_000),
      copy: fc.nat(1),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 40 }), async (ops) => {
        const prefix = uniquePrefix();
        const copies = [new Copy(), new Copy()];
        for (const { op, n, ttl, copy } of ops) {
          if (op === 'write') await rs.write(prefix, id(n), JSON.stringify({ reason: `r${n}` }), ttl);
          else if (op === 'remove') await rs.write(prefix, id(n), null, 0);
          else await copies[copy]?.follow(rs, prefix);
        }
        // A 1 ms ttl has lapsed by now, on either clock.
        await sleep(3);
        for (const copy of copies) {
          await copy.follow(rs, prefix);
          const full = await fullRead(rs, prefix);
          expect(copy.live(full.now)).toEqual(full.entries);
        }
      }),
      { numRuns: 30 },
    );
  });

  it('a copy the log no longer reaches back to reads every rule; one up to date reads the change alone', async () => {
    const prefix = uniquePrefix();
    const behind = new Copy();
    await behind.follow(rs, prefix);
    // 3,000 rules written and removed: more changes than the log keeps beyond the rules in force.
    for (let n = 0; n < 3000; n++) await rs.write(prefix, id(n), '{}', 0);
    for (let n = 0; n < 3000; n++) await rs.write(prefix, id(n), null, 0);
    for (let n = 0; n < 5; n++) await rs.write(prefix, id(n), '{}', 0);
    expect(await behind.follow(rs, prefix)).toEqual({ full: true, entries: 5 });
    const full = await fullRead(rs, prefix);
    expect(behind.live(full.now)).toEqual(full.entries);
    await rs.write(prefix, id(7), '{}', 0);
    expect(await behind.follow(rs, prefix)).toEqual({ full: false, entries: 1 });
    expect(behind.held.size).toBe(6);
  });

  it('writes sweep lapsed rules out of the store, and a copy that follows drops them', async () => {
    const prefix = uniquePrefix();
    const copy = new Copy();
    for (let n = 0; n < 300; n++) await rs.write(prefix, id(n), '{}', 0);
    for (let n = 300; n < 450; n++) await rs.write(prefix, id(n), '{}', 500);
    await copy.follow(rs, prefix);
    await sleep(600);
    for (let n = 1000; n < 1040; n++) await rs.write(prefix, id(n), '{}', 0);
    expect((await copy.follow(rs, prefix)).full).toBe(false);
    // Dropped, not merely lapsed: the copy holds the 340 rules in force and nothing else.
    expect(copy.held.size).toBe(340);
    expect((await fullRead(rs, prefix)).entries).toHaveLength(340);
  });
});

describe('the log of rule changes on a Redis written by a script that kept no log', () => {
  it('a copy reads such writes in full, and the logged ones change by change', async () => {
    const rs = redisStore({ client }).rules as RuleStore;
    const prefix = uniquePrefix();
    const [v, set] = [`${prefix}:{#rules}:v`, `${prefix}:{#rules}:set`];
    const oldWrite = async (n: number) => {
      await client.hset(set, id(n), '0|{}');
      await client.incr(v);
    };
    for (let n = 0; n < 3; n++) await oldWrite(n);
    const copy = new Copy();
    expect(await copy.follow(rs, prefix)).toEqual({ full: true, entries: 3 });
    await rs.write(prefix, id(3), '{}', 0);
    expect(await copy.follow(rs, prefix)).toEqual({ full: false, entries: 1 });
    await oldWrite(4);
    expect(await copy.follow(rs, prefix)).toEqual({ full: true, entries: 5 });
    await rs.write(prefix, id(0), null, 0);
    expect(await copy.follow(rs, prefix)).toEqual({ full: false, entries: 1 });
    const full = await fullRead(rs, prefix);
    expect(copy.live(full.now)).toEqual(full.entries);
  });
});
