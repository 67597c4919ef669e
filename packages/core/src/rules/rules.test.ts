import { BlockList } from 'node:net';
import fc from 'fast-check';
import { createLimiter } from '../limiter.js';
import { memoryStore } from '../store/memory-store.js';
import { parseAddress } from './address.js';
import { type Rule, RuleSet } from './match.js';
import { createRules, RULES, type RulesInside } from './rules.js';

const inside = (rules: object): RulesInside => (rules as { [RULES]: RulesInside })[RULES];

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

describe('RuleSet matching', () => {
  const deny = (pattern: string, extra: Partial<Rule> = {}): Rule => ({ kind: 'deny', pattern, ...extra });
  const allow = (pattern: string, extra: Partial<Rule> = {}): Rule => ({ kind: 'allow', pattern, ...extra });
  const override = (pattern: string, policy: string, extra: Partial<Rule> = {}): Rule => ({
    kind: 'override',
    pattern,
    policy: [policy],
    ...extra,
  });

  it('matches exact keys, IPv4 and IPv6 ranges, and IPv4-mapped IPv6 as IPv4', () => {
    const set = new RuleSet([deny('user:1'), deny('203.0.113.0/24'), deny('2001:db8::/32'), deny('198.51.100.7')]);
    expect(set.match('user:1', undefined, undefined, 0)?.pattern).toBe('user:1');
    expect(set.match('user:2', undefined, undefined, 0)).toBeUndefined();
    expect(set.match('203.0.113.200', undefined, undefined, 0)?.pattern).toBe('203.0.113.0/24');
    expect(set.match('203.0.114.1', undefined, undefined, 0)).toBeUndefined();
    expect(set.match('::ffff:203.0.113.9', undefined, undefined, 0)?.pattern).toBe('203.0.113.0/24');
    expect(set.match('2001:DB8:ffff::1', undefined, undefined, 0)?.pattern).toBe('2001:db8::/32');
    // ipKey's IPv6 key, a /56: within the /32.
    expect(set.match('2001:db8:1:200::/56', undefined, undefined, 0)?.pattern).toBe('2001:db8::/32');
    expect(set.match('2001:db9::1', undefined, undefined, 0)).toBeUndefined();
    expect(set.match('198.51.100.7', undefined, undefined, 0)?.pattern).toBe('198.51.100.7');
    // A key of its own, matched on the client IP.
    expect(set.match('user:9', undefined, '203.0.113.1', 0)?.pattern).toBe('203.0.113.0/24');
  });

  it('orders deny, allow, then the most specific override (scope, exact key, longest range)', () => {
    const set = new RuleSet([
      allow('10.0.0.0/8'),
      deny('10.1.0.0/16'),
      override('10.0.0.0/8', '1/s'),
      override('10.2.0.0/16', '2/s'),
      override('10.2.3.4', '3/s'),
      override('10.2.0.0/16', '4/s', { scope: 'POST /login' }),
    ]);
    expect(set.match('10.1.2.3', undefined, undefined, 0)?.kind).toBe('deny');
    expect(set.match('10.9.9.9', undefined, undefined, 0)?.kind).toBe('allow');
    const overrides = new RuleSet([...set.rules()].filter((r) => r.kind === 'override'));
    expect(overrides.match('10.9.9.9', undefined, undefined, 0)?.policy).toEqual(['1/s']);
    expect(overrides.match('10.2.9.9', undefined, undefined, 0)?.policy).toEqual(['2/s']);
    expect(overrides.match('10.2.3.4', undefined, undefined, 0)?.policy).toEqual(['3/s']);
    expect(overrides.match('10.2.3.4', 'POST /login', undefined, 0)?.policy).toEqual(['4/s']);
    expect(overrides.match('10.2.3.4', 'GET /', undefined, 0)?.policy).toEqual(['3/s']);
  });

  it('does not match a rule past its expiresAt', () => {
    const set = new RuleSet([deny('k', { expiresAt: 1000 })]);
    expect(set.match('k', undefined, undefined, 999)?.pattern).toBe('k');
    expect(set.match('k', undefined, undefined, 1000)).toBeUndefined();
  });

  it('agrees with node:net BlockList on random IPv4 ranges and addresses', () => {
    const v4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((o) => o.join('.'));
    fc.assert(
      fc.property(
        fc.array(fc.tuple(v4, fc.integer({ min: 0, max: 32 })), { maxLength: 20 }),
        fc.array(v4, { maxLength: 20 }),
        (ranges, ips) => {
          const list = new BlockList();
          for (const [a, bits] of ranges) list.addSubnet(a, bits, 'ipv4');
          const set = new RuleSet(ranges.map(([a, bits]) => deny(`${a}/${bits}`)));
          for (const ip of ips) expect(set.match(ip, undefined, undefined, 0) !== undefined).toBe(list.check(ip, 'ipv4'));
        },
      ),
    );
  });

  it('a RuleSet changed a rule at a time matches as one built from the rules it ends with', () => {
    const patterns = ['k1', 'k2', '10.0.0.0/8', '10.1.0.0/16', '10.1.2.3', '::ffff:10.1.2.3', '2001:db8::/32', '2001:db8:1::/48'];
    const op = fc.record({
      put: fc.boolean(),
      kind: fc.constantFrom<Rule['kind']>('deny', 'allow', 'override'),
      scope: fc.constantFrom(undefined, 'POST /login'),
      pattern: fc.constantFrom(...patterns),
      n: fc.nat(9),
    });
    const probes = ['k1', 'k2', '10.9.9.9', '10.1.9.9', '10.1.2.3', '2001:db8:9::1', '2001:db8:1::1', '192.0.2.1'];
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
        const set = new RuleSet();
        // The rules as the store holds them, one per kind, scope and spelling of a pattern.
        const held = new Map<string, Rule>();
        for (const { put, kind, scope, pattern, n } of ops) {
          const id = JSON.stringify([kind, scope ?? '', pattern]);
          if (put) {
            const rule: Rule = { kind, pattern, ...(scope ? { scope } : {}), ...(kind === 'override' ? { policy: [`${n}/s`] } : {}) };
            set.put(rule);
            held.delete(id);
            held.set(id, rule);
          } else {
            set.drop(kind, scope, pattern);
            held.delete(id);
          }
        }
        // Rules put in the order they were last written: of two spellings of one address, the later is matched.
        const fresh = new RuleSet(held.values());
        expect(set.size).toBe(fresh.size);
        for (const key of probes)
          for (const scope of [undefined, 'POST /login'])
            expect(set.match(key, scope, undefined, 0)).toEqual(fresh.match(key, scope, undefined, 0));
      }),
    );
  });

  it('a RuleSet whose ranges come and go keeps a trie the size of the ranges it holds', () => {
    const set = new RuleSet();
    const range = (i: number) => `10.${(i >> 8) & 255}.${i & 255}.0/24`;
    for (let i = 0; i < 20_000; i++) {
      set.put({ kind: 'deny', pattern: range(i), ban: true });
      if (i >= 10) set.drop('deny', undefined, range(i - 10));
    }
    expect(set.size).toBe(10);
    expect([...set.rules()].map((r) => r.pattern)).toEqual(Array.from({ length: 10 }, (_, j) => range(19_990 + j)));
    expect(set.match('10.78.30.7', undefined, undefined, 0)?.pattern).toBe(range(19_998));
    expect(set.match('10.78.20.7', undefined, undefined, 0)).toBeUndefined();
    // The trie was built afresh as its slots emptied: far fewer than the 20,000 ranges it saw.
    const slots = (set as unknown as { scopes: Map<string, { v4: { slots: unknown[] } }> }).scopes.get('')?.v4.slots.length;
    expect(slots).toBeLessThan(3000);
  });

  it('reads addresses and ranges, and refuses what is neither', () => {
    expect(parseAddress('203.0.113.7/24')).toEqual({ v6: false, words: [0xcb007100], bits: 24 });
    expect(parseAddress('::ffff:10.0.0.0/104')).toEqual({ v6: false, words: [0x0a000000], bits: 8 });
    for (const bad of ['user:1', '300.1.1.1', '1.2.3.4/33', '2001:db8::/129', 'cafe', '01.2.3.4'])
      expect(parseAddress(bad)).toBeUndefined();
  });
});

describe('createRules on the memory store', () => {
  it('refuses bad patterns, policies, durations and options by name', async () => {
    const rules = createRules({ store: memoryStore() });
    await expect(rules.deny('10.0.0.0/33')).rejects.toThrow(/pattern must be a key, an IPv4/);
    await expect(rules.deny('')).rejects.toThrow(/pattern must be a non-empty string/);
    await expect(rules.override('k', '-1/m')).rejects.toThrow(/policy|limit/);
    await expect(rules.deny('k', { ttl: 'soon' as never })).rejects.toThrow(/ttl must be/);
    await expect(rules.deny('k', { tll: '1s' } as never)).rejects.toThrow(/did you mean ttl/);
    await expect(rules.remove('block' as never, 'k')).rejects.toThrow(/kind must be/);
    expect(() => createRules({ store: memoryStore(), refresh: 0 })).toThrow(/refresh must be/);
    expect(() => createRules({ store: { decide() {} } as never })).toThrow(/store must be a store that keeps rules/);
    expect(() => createLimiter({ policy: '1/s', rules: {} as never })).toThrow(/rules must be a Rules/);
    expect(() => createLimiter({ policy: '1/s', ban: { after: 0, within: '1m', for: '1m' } })).toThrow(
      /ban.after must be a positive integer/,
    );
    expect(() => createLimiter({ policy: '1/s', ban: { after: 3, within: '1m' } as never })).toThrow(
      /ban must be an object with after, within and for/,
    );
    await rules.close();
  });

  it('a limiter refuses rules of another prefix at construction, naming both prefixes', async () => {
    const store = memoryStore();
    const rules = createRules({ store });
    expect(() => createLimiter({ policy: '1/s', store, prefix: 'app', rules })).toThrow(
      expect.objectContaining({
        code: 'ERR_SLUICE_OPTION',
        message: 'rules must be of the limiter\'s prefix "app", got rules of prefix "sluice": give createRules({ store, prefix: "app" })',
      }),
    );
    const own = createRules({ store, prefix: 'app' });
    await createLimiter({ policy: '1/s', store, prefix: 'app', rules: own }).close();
    await createLimiter({ policy: '1/s', store, rules }).close();
    await rules.close();
    await own.close();
  });

  it('a limiter holding rules marks their prefix seen in the store at its refreshes; rules no limiter holds do not', async () => {
    const store = memoryStore();
    const rs = store.rules as NonNullable<typeof store.rules>;
    const held = createRules({ store, prefix: 'app', refresh: 20 });
    const alone = createRules({ store, prefix: 'other', refresh: 20 });
    await new Promise((r) => setTimeout(r, 60));
    expect([await rs.seen('app'), await rs.seen('other')]).toEqual([false, false]);
    const limiter = createLimiter({ policy: '1/s', store, prefix: 'app', rules: held });
    const since = Date.now();
    while (!(await rs.seen('app')) && Date.now() - since < 2000) await new Promise((r) => setTimeout(r, 10));
    expect([await rs.seen('app'), await rs.seen('other')]).toEqual([true, false]);
    await limiter.close();
    await held.close();
    await alone.close();
  });

  it('denies, allows, overrides and removes in this process, with source rule', async () => {
    const store = memoryStore();
    const rules = createRules({ store });
    const limiter = createLimiter({ policy: '2/1m', store, rules });
    await rules.deny('bad', { reason: 'abuse' });
    const denied = await limiter.consume('bad');
    expect(denied).toMatchObject({
      allowed: false,
      source: 'rule',
      retryAfterMs: 0,
      rule: { kind: 'deny', pattern: 'bad', reason: 'abuse' },
    });
    await rules.allow('good');
    for (let i = 0; i < 5; i++) expect(await limiter.consume('good')).toMatchObject({ allowed: true, source: 'rule', policies: [] });
    await rules.override('big', '100/1m');
    const big = await limiter.consume('big');
    expect(big).toMatchObject({ allowed: true, source: 'store', limit: 100, remaining: 99 });
    expect(await rules.remove('deny', 'bad')).toBe(true);
    expect(await rules.remove('deny', 'bad')).toBe(false);
    expect((await limiter.consume('bad')).source).toBe('store');
    await rules.override('big', null);
    expect((await limiter.consume('big')).limit).toBe(2);
    const listed: Rule[] = [];
    for await (const rule of rules.list()) listed.push(rule);
    expect(listed.map((r) => `${r.kind} ${r.pattern}`)).toEqual(['allow good']);
    await limiter.close();
    await rules.close();
  });

  it('applies to wait() as to consume(): a deny refuses at once charging nothing, an allow passes, an override decides', async () => {
    const store = memoryStore();
    const rules = createRules({ store });
    const limiter = createLimiter({ policy: '1/1h', store, rules });
    await rules.deny('bad', { ttl: '1m' });
    const refused = await limiter.wait('bad', { maxWait: '2m' }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'ERR_SLUICE_WAIT', message: expect.stringMatching(/deny rule on bad/) });
    expect((refused as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(50_000);
    await rules.allow('good');
    for (let i = 0; i < 3; i++)
      expect(await limiter.wait('good', { maxWait: '1ms' })).toMatchObject({ allowed: true, source: 'rule', waitedMs: 0 });
    await rules.override('big', '100/1h');
    for (let i = 0; i < 3; i++) expect(await limiter.wait('big', { maxWait: '1ms' })).toMatchObject({ allowed: true, limit: 100 });
    await rules.remove('deny', 'bad');
    expect(await limiter.wait('bad', { maxWait: '1ms' })).toMatchObject({ allowed: true, limit: 1 });
    await limiter.close();
    await rules.close();
  });

  it('matches an adapter-style ip option against CIDR rules, and a scoped rule only in its scope', async () => {
    const store = memoryStore();
    const rules = createRules({ store });
    const limiter = createLimiter({ policy: '5/1m', store, rules });
    await rules.deny('192.0.2.0/24');
    await rules.deny('user:7', { scope: 'POST /login' });
    expect((await limiter.consume('user:1', { ip: '192.0.2.55' })).source).toBe('rule');
    expect((await limiter.consume('user:1', { ip: '192.0.3.55' })).source).toBe('store');
    expect((await limiter.consume('user:7', { scope: 'POST /login' })).source).toBe('rule');
    expect((await limiter.consume('user:7', { scope: 'GET /' })).source).toBe('store');
    expect((await limiter.peek('192.0.2.1')).source).toBe('rule');
    await limiter.close();
    await rules.close();
  });

  it('expires a rule with ttl on the store clock, and answers retryAfterMs until then', async () => {
    let now = 1_000_000;
    const store = memoryStore({ clock: () => now });
    const rules = createRules({ store });
    const limiter = createLimiter({ policy: '5/1m', store, rules });
    const realNow = Date.now;
    await rules.deny('k', { ttl: '10s' });
    const d = await limiter.consume('k');
    expect(d.source).toBe('rule');
    expect(d.retryAfterMs).toBeGreaterThan(9_000);
    expect(d.retryAfterMs).toBeLessThanOrEqual(10_000);
    // The copy reckons the store's clock from its own: move the store clock, and this process' along.
    now += 10_000;
    Date.now = () => realNow() + 10_000;
    try {
      expect((await limiter.consume('k')).source).toBe('store');
    } finally {
      Date.now = realNow;
    }
    await limiter.close();
    await rules.close();
  });

  it('bans a key denied `after` times within `within`, for `for`', async () => {
    const store = memoryStore();
    const rules = createRules({ store });
    const limiter = createLimiter({ policy: '1/1h', store, rules, ban: { after: 3, within: '1m', for: '1h' } });
    expect((await limiter.consume('abuser')).allowed).toBe(true);
    for (let i = 0; i < 3; i++) expect((await limiter.consume('abuser')).source).toBe('store');
    // The ban is written after the third denial's decision: give it its turn.
    await new Promise((r) => setTimeout(r, 20));
    const banned = await limiter.consume('abuser');
    expect(banned).toMatchObject({ allowed: false, source: 'rule', rule: { kind: 'deny', pattern: 'abuser', ban: true } });
    expect(banned.retryAfterMs).toBeGreaterThan(3_500_000);
    const listed: Rule[] = [];
    for await (const rule of rules.list({ kind: 'deny' })) listed.push(rule);
    expect(listed).toHaveLength(1);
    expect(await rules.remove('deny', 'abuser')).toBe(true);
    expect((await limiter.consume('abuser')).source).toBe('store');
    await limiter.close();
    await rules.close();
  });

  it('10,000 rule writes, 500 in flight, are read back at the cost of the writes, not of the rules stored, and held by another copy within refresh', async () => {
    const store = memoryStore();
    const read = countReads(store.rules as NonNullable<typeof store.rules>);
    const rules = createRules({ store });
    const other = createRules({ store, refresh: 100 });
    await inside(other).ready;
    let next = 0;
    let written = 0;
    let tooDear: string | undefined;
    const worker = async () => {
      while (next < 10_000 && tooDear === undefined) {
        await rules.deny(`w:${next++}`);
        written++;
        // What the copies read: each write once per copy, with room for the writes still in flight.
        if (read.entries > 4 * written + 2000) tooDear = `${read.entries} rules read for ${written} written`;
      }
    };
    await Promise.all(Array.from({ length: 500 }, worker));
    expect(tooDear).toBeUndefined();
    const last = Date.now();
    while (inside(other).current().size < 10_000 && Date.now() - last < 5000) await new Promise((r) => setTimeout(r, 10));
    expect(inside(other).current().size).toBe(10_000);
    expect(Date.now() - last).toBeLessThanOrEqual(100 + 1000);
    expect(inside(rules).current().match('w:9999', undefined, undefined, 0)?.kind).toBe('deny');
    await rules.close();
    await other.close();
  });

  it('keeps the last known rules when a refresh fails, and reports it', async () => {
    const store = memoryStore();
    const events: string[] = [];
    const rules = createRules({ store, refresh: 20, onEvent: (e) => events.push(e.type) });
    await rules.deny('k');
    const rs = store.rules as NonNullable<typeof store.rules>;
    const changes = rs.changes;
    rs.changes = () => Promise.reject(new Error('down'));
    await new Promise((r) => setTimeout(r, 80));
    expect(events).toContain('rule-error');
    expect(inside(rules).current().match('k', undefined, undefined, Date.now())?.kind).toBe('deny');
    rs.changes = changes;
    await rules.close();
  });
});
