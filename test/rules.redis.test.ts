// Rules operators change at run time, on a real Redis, standalone and Cluster, with two
// processes: this one (the sources, through jest) and a child on the built packages (pnpm build first),
// test/consumers/rules-child.cjs, whose limiter refreshes its rules every second. A rule written in one
// is in force in the other within refresh + 500 ms; bans add up across processes; ttl lapses everywhere;
// 10,000 writes are read back at the cost of the writes; 100,000 rules load.
import { type ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import { createLimiter, createRules, type Decision, type Rule, redisStore, type Store } from '@sluice/core';
import Redis, { Cluster } from 'ioredis';
import { CLIENT_KINDS } from './support/clients';
import { type RedisCluster, type RedisServer, sleep, startCluster, startRedis, uniquePrefix } from './support/redis';
import { msUntil, until } from './support/until';

jest.setTimeout(120_000);

const REFRESH_MS = 1000;
/** The bound the design sets: refresh plus one round trip, with 500 ms for the round trip. */
const IN_FORCE_MS = REFRESH_MS + 500;

interface Seen {
  allowed: boolean;
  source: Decision['source'];
  limit: number;
  rule: Rule | null;
  at: number;
}

/** The child process and a request/answer over its IPC channel. */
class Child {
  private readonly proc: ChildProcess;
  private next = 0;
  private readonly waiting = new Map<number, (m: Record<string, unknown>) => void>();
  readonly ready: Promise<void>;

  constructor(mode: 'standalone' | 'cluster', ports: number[], prefix: string) {
    this.proc = fork(join(__dirname, 'consumers', 'rules-child.cjs'), [mode, ports.join(','), prefix], { timeout: 110_000 });
    this.ready = new Promise((resolve) => {
      this.proc.on('message', (m: Record<string, unknown>) => {
        if (m.ready) resolve();
        else this.waiting.get(m.id as number)?.(m);
      });
    });
  }

  private ask(message: Record<string, unknown>): Promise<Record<string, unknown>> {
    const id = ++this.next;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, (m) => (m.error ? reject(new Error(String(m.error))) : resolve(m)));
      this.proc.send({ ...message, id });
    });
  }

  consume(key: string, more: { ip?: string; scope?: string } = {}): Promise<Seen> {
    return this.ask({ op: 'consume', key, ...more }) as Promise<unknown> as Promise<Seen>;
  }

  /** A peek: what a consume would see, charging nothing (so polling counts no denials toward a ban). */
  peek(key: string, more: { ip?: string; scope?: string } = {}): Promise<Seen> {
    return this.ask({ op: 'peek', key, ...more }) as Promise<unknown> as Promise<Seen>;
  }

  async write(op: 'deny' | 'allow' | 'override' | 'remove', ...args: unknown[]): Promise<void> {
    await this.ask({ op, args });
  }

  async close(): Promise<void> {
    const gone = new Promise((r) => this.proc.once('exit', r));
    this.proc.send({ op: 'close' });
    await Promise.race([gone, sleep(5000)]);
    this.proc.kill();
  }
}

interface Setup {
  client: Redis | Cluster;
  ports: number[];
  stop(): Promise<void>;
}

const setups: Record<'standalone' | 'cluster', () => Promise<Setup>> = {
  async standalone() {
    const server: RedisServer = await startRedis();
    const client = new Redis({ port: server.port });
    await new Promise((r) => client.once('ready', r));
    return {
      client,
      ports: [server.port],
      async stop() {
        client.disconnect();
        await server.stop();
      },
    };
  },
  async cluster() {
    const cluster: RedisCluster = await startCluster();
    const client = new Cluster(cluster.startupNodes());
    await new Promise((r) => client.once('ready', r));
    return {
      client,
      ports: cluster.startupNodes().map((n) => n.port),
      async stop() {
        client.disconnect();
        await cluster.stop();
      },
    };
  },
};

describe.each(['standalone', 'cluster'] as const)('rules on Redis %s, two processes', (mode) => {
  let setup: Setup;
  let store: Store;
  beforeAll(async () => {
    setup = await setups[mode]();
    store = redisStore({ client: setup.client });
  }, 90_000);
  afterAll(() => setup.stop());

  it('an override, a deny, an allow and a removal made here are in force in the other process within refresh + 500 ms', async () => {
    const prefix = uniquePrefix();
    const rules = createRules({ store, prefix, refresh: REFRESH_MS });
    const child = new Child(mode, setup.ports, prefix);
    await child.ready;
    try {
      // Before: the child's limiter's own policy, 3/1h.
      expect(await child.consume('customer:42')).toMatchObject({ allowed: true, source: 'store', limit: 3 });
      const took: Record<string, number> = {};

      let t = Date.now();
      await rules.override('customer:42', '1000/1h', { reason: 'ticket 1234' });
      took.override = await msUntil(
        t,
        () => child.peek('customer:42'),
        (d) => d.limit === 1000,
        { withinMs: IN_FORCE_MS * 3, everyMs: 20, what: 'in force' },
      );

      t = Date.now();
      await rules.deny('203.0.113.0/24', { reason: 'abuse' });
      took.deny = await msUntil(
        t,
        () => child.peek('user:7', { ip: '203.0.113.9' }),
        (d) => d.source === 'rule',
        { withinMs: IN_FORCE_MS * 3, everyMs: 20, what: 'in force' },
      );
      const denied = await child.consume('203.0.113.77');
      expect(denied).toMatchObject({ allowed: false, source: 'rule', rule: { kind: 'deny', pattern: '203.0.113.0/24', reason: 'abuse' } });

      t = Date.now();
      await rules.allow('2001:db8::/32');
      took.allow = await msUntil(
        t,
        () => child.peek('2001:db8:1:200::/56'),
        (d) => d.source === 'rule' && d.allowed,
        { withinMs: IN_FORCE_MS * 3, everyMs: 20, what: 'in force' },
      );
      // Allowed by the rule however often: the policy (3/1h) is skipped.
      for (let i = 0; i < 5; i++) expect(await child.consume('2001:db8:1:200::/56')).toMatchObject({ allowed: true, source: 'rule' });

      t = Date.now();
      expect(await rules.remove('deny', '203.0.113.0/24')).toBe(true);
      took.remove = await msUntil(
        t,
        () => child.peek('203.0.113.78'),
        (d) => d.source === 'store',
        { withinMs: IN_FORCE_MS * 3, everyMs: 20, what: 'in force' },
      );

      for (const [what, ms] of Object.entries(took)) expect([what, ms <= IN_FORCE_MS]).toEqual([what, true]);
    } finally {
      await child.close();
      await rules.close();
    }
  });

  it('a rule written in the other process is in force here, and the last known rules stay through a store outage', async () => {
    const prefix = uniquePrefix();
    const rules = createRules({ store, prefix, refresh: REFRESH_MS });
    const limiter = createLimiter({ policy: '3/1h', store, prefix, rules, timeout: 5000 });
    const child = new Child(mode, setup.ports, prefix);
    await child.ready;
    try {
      const t = Date.now();
      await child.write('deny', 'bad-bot', { reason: 'scraper' });
      const took = await msUntil(
        t,
        () => limiter.consume('bad-bot'),
        (d) => d.source === 'rule',
        { withinMs: IN_FORCE_MS * 3, everyMs: 20, what: 'in force' },
      );
      expect(took).toBeLessThanOrEqual(IN_FORCE_MS);
      // A store that fails its refreshes: the copy keeps what it knew (the rules' store part refuses every call).
      const part = store.rules as NonNullable<Store['rules']>;
      const { changes, write } = part;
      let failed = 0;
      part.changes = () => {
        failed++;
        return Promise.reject(new Error('store down'));
      };
      try {
        await until(
          () => failed,
          (n) => n >= 2,
          { withinMs: REFRESH_MS * 5, what: 'two refreshes failed' },
        );
        expect(await limiter.consume('bad-bot')).toMatchObject({ allowed: false, source: 'rule' });
        // A write that cannot land rejects with a SluiceError: the operator must know.
        part.write = () => Promise.reject(new Error('store down'));
        await expect(rules.deny('other')).rejects.toMatchObject({ code: 'ERR_SLUICE_STORE' });
      } finally {
        Object.assign(part, { changes, write });
      }
    } finally {
      await child.close();
      await limiter.close();
      await rules.close();
    }
  });

  it('bans: denials in two processes add up, and the ban is written once and in force in both', async () => {
    const prefix = uniquePrefix();
    const rules = createRules({ store, prefix, refresh: REFRESH_MS });
    const [a, b] = [new Child(mode, setup.ports, prefix), new Child(mode, setup.ports, prefix)];
    await Promise.all([a.ready, b.ready]);
    try {
      // 3/1h: three allowed, then denials; the children ban after 6 denials within 1 m.
      const seen: Seen[] = [];
      for (let i = 0; i < 3; i++) seen.push(await a.consume('abuser'));
      // 3 denials each: neither alone reaches 6.
      for (let i = 0; i < 3; i++) seen.push(await a.consume('abuser'), await b.consume('abuser'));
      expect(seen.filter((d) => d.allowed)).toHaveLength(3);
      expect(seen.filter((d) => d.source === 'rule')).toHaveLength(0);
      const t = Date.now();
      for (const child of [a, b]) {
        await msUntil(
          t,
          () => child.peek('abuser'),
          (d) => d.source === 'rule',
          { withinMs: IN_FORCE_MS * 3, everyMs: 20, what: 'in force' },
        );
        expect(await child.consume('abuser')).toMatchObject({
          allowed: false,
          source: 'rule',
          rule: { kind: 'deny', pattern: 'abuser', ban: true },
        });
      }
      const bans: Rule[] = [];
      for await (const rule of rules.list({ kind: 'deny' })) bans.push(rule);
      expect(bans).toHaveLength(1);
      expect(bans[0]).toMatchObject({ pattern: 'abuser', ban: true });
      expect((bans[0]?.expiresAt ?? 0) - Date.now()).toBeGreaterThan(3_000_000);
      // Lifting the ban lifts it everywhere.
      await rules.remove('deny', 'abuser');
      for (const child of [a, b])
        await msUntil(
          Date.now(),
          () => child.peek('abuser'),
          (d) => d.source !== 'rule',
          { withinMs: IN_FORCE_MS * 3, everyMs: 20, what: 'in force' },
        );
    } finally {
      await Promise.all([a.close(), b.close()]);
      await rules.close();
    }
  });

  it('a rule with ttl lapses in every process at its expiresAt, with no write', async () => {
    const prefix = uniquePrefix();
    const rules = createRules({ store, prefix, refresh: REFRESH_MS });
    const child = new Child(mode, setup.ports, prefix);
    await child.ready;
    try {
      await rules.deny('temp', { ttl: '3s' });
      const [rule] = await collect(rules.list());
      const expiresAt = rule?.expiresAt as number;
      expect(expiresAt - Date.now()).toBeGreaterThan(1000);
      await msUntil(
        Date.now(),
        () => child.peek('temp'),
        (d) => d.source === 'rule',
        { withinMs: IN_FORCE_MS * 3, everyMs: 20, what: 'in force' },
      );
      // Lapsed by itself: no process wrote anything (the version read is the one the store had).
      const lapsed = await msUntil(
        expiresAt,
        () => child.peek('temp'),
        (d) => d.source !== 'rule',
        { withinMs: 1000 * 3, everyMs: 20, what: 'in force' },
      );
      expect(lapsed).toBeLessThanOrEqual(1000);
      // ...and not before it (the child reckons the store's clock within a round trip).
      expect(lapsed).toBeGreaterThanOrEqual(-100);
      expect(await collect(rules.list())).toEqual([]);
    } finally {
      await child.close();
      await rules.close();
    }
  });

  it('10,000 rule writes finish in seconds and are in force on another process within refresh', async () => {
    const prefix = uniquePrefix();
    const writer = redisStore({ client: setup.client });
    const read = countReads(writer.rules as NonNullable<Store['rules']>);
    const rules = createRules({ store: writer, prefix, refresh: REFRESH_MS });
    const child = new Child(mode, setup.ports, prefix);
    await child.ready;
    try {
      let next = 0;
      let written = 0;
      let tooDear: string | undefined;
      const worker = async () => {
        while (next < 10_000 && tooDear === undefined) {
          await rules.deny(`w:${next++}`);
          written++;
          // The writer's copy reads each write back once, not every rule stored (room for the writes in flight).
          if (read.entries > 2 * written + 1000) tooDear = `${read.entries} rules read for ${written} written`;
        }
      };
      await Promise.all(Array.from({ length: 500 }, worker));
      expect(tooDear).toBeUndefined();
      const t = Date.now();
      const took = await msUntil(
        t,
        () => child.peek('w:9999'),
        (d) => d.source === 'rule',
        { withinMs: IN_FORCE_MS * 3, everyMs: 20, what: 'in force' },
      );
      expect(took).toBeLessThanOrEqual(IN_FORCE_MS);
      for (const key of ['w:0', 'w:4999']) expect(await child.peek(key)).toMatchObject({ source: 'rule' });
    } finally {
      await child.close();
      await rules.close();
      await writer.close();
    }
  });

  it('100,000 rules (half keys, half CIDR ranges) load into another process and match', async () => {
    const prefix = uniquePrefix();
    const client = setup.client;
    // Written straight into the hash (quicker than 100,000 script calls), as a store written without a log holds them.
    const setKey = `${prefix}:{#rules}:set`;
    for (let i = 0; i < 100_000; i += 5000) {
      const fields: string[] = [];
      for (let j = i; j < i + 5000; j++) {
        const n = j * 4;
        const pattern =
          j % 2 === 0
            ? `key:${j}`
            : j % 4 === 1
              ? `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}/30`
              : `2001:db8:${(j & 0xffff).toString(16)}:${(j >> 16).toString(16)}::/64`;
        fields.push(JSON.stringify(['deny', '', pattern]), '0|{}');
      }
      await client.hset(setKey, ...fields);
    }
    await client.incr(`${prefix}:{#rules}:v`);
    const t = Date.now();
    const child = new Child(mode, setup.ports, prefix);
    await child.ready;
    try {
      await msUntil(
        t,
        () => child.peek('key:99998'),
        (d) => d.source === 'rule',
        { withinMs: 10_000 * 3, everyMs: 20, what: 'in force' },
      );
      expect(await child.consume('key:99999')).toMatchObject({ source: 'store' });
      expect(await child.consume('u', { ip: '10.0.0.22' })).toMatchObject({ source: 'rule', rule: { pattern: '10.0.0.20/30' } });
      expect(await child.consume('u', { ip: '10.0.0.29' })).toMatchObject({ source: 'store' });
      expect(await child.consume('u', { ip: '2001:db8:3:0:1::9' })).toMatchObject({ source: 'rule' });
      const reader = createRules({ store, prefix });
      expect((await collect(reader.list())).length).toBe(100_000);
      await reader.close();
    } finally {
      await child.close();
    }
  });
});

/** Counts the rules every call of `part` hands out (`entries` of a reply), whatever the calls are named. */
function countReads(part: object): { entries: number } {
  const read = { entries: 0 };
  const methods = part as Record<string, unknown>;
  for (const [name, fn] of Object.entries(methods)) {
    if (typeof fn !== 'function') continue;
    methods[name] = async (...args: unknown[]) => {
      const reply = (await fn.apply(part, args)) as { entries?: unknown[] } | undefined;
      if (Array.isArray(reply?.entries)) read.entries += reply.entries.length;
      return reply;
    };
  }
  return read;
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

describe('rules on every client the Redis store takes (standalone)', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(() => server.stop());

  it.each(CLIENT_KINDS.map((k) => [k.name, k] as const))('%s: writes, lists and refreshes rules another client reads', async (_, kind) => {
    const prefix = uniquePrefix();
    const tested = await kind.standalone(server.port);
    const other = new Redis({ port: server.port });
    const rules = createRules({ store: redisStore({ client: tested.client }), prefix, refresh: 200 });
    const reader = createRules({ store: redisStore({ client: other }), prefix, refresh: 200 });
    const limiter = createLimiter({ policy: '5/1m', store: redisStore({ client: other }), prefix, rules: reader, timeout: 2000 });
    try {
      // The override first: a copy that holds the deny (written after it) holds the override too.
      await rules.override('k', '50/1m');
      await rules.deny('10.9.0.0/16', { ttl: '1h', reason: kind.name });
      expect((await collect(rules.list())).map((r) => r.kind).sort()).toEqual(['deny', 'override']);
      await msUntil(
        Date.now(),
        () => limiter.peek('x', { ip: '10.9.3.4' }) as Promise<never>,
        (d: Seen) => d.source === 'rule',
        { withinMs: 700 * 3, everyMs: 20, what: 'in force' },
      );
      expect((await limiter.peek('k')).limit).toBe(50);
      // And the tested client reads what the other wrote.
      const back = createLimiter({ policy: '5/1m', store: redisStore({ client: tested.client }), prefix, rules, timeout: 2000 });
      await reader.deny('gone');
      await msUntil(
        Date.now(),
        () => back.peek('gone') as Promise<never>,
        (d: Seen) => d.source === 'rule',
        { withinMs: 700 * 3, everyMs: 20, what: 'in force' },
      );
      await back.close();
    } finally {
      await limiter.close();
      await rules.close();
      await reader.close();
      other.disconnect();
      await tested.close();
    }
  });
});
