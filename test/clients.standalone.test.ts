// The store's contract, run over every client on one standalone Redis (shared by all clients; each test
// has its own key prefix): exact admission, NOSCRIPT reload, no replay of a call made before the first
// connect or while disconnected, no resend of a call in flight when its connection died, deadlines, the
// breaker; and the refusals of what the store cannot use.
import { performance } from 'node:perf_hooks';
import { createLimiter, type LimiterEvent, redisStore, SluiceError } from '@sluice/core';
import { CLIENT_KINDS, type TestClient } from './support/clients';
import { cli, type RedisServer, sleep, startServer, uniquePrefix } from './support/redis';
import { until } from './support/until';

/** Script calls the server has run since it started (each restart starts it empty). */
const scriptCalls = async (port: number) =>
  [...(await cli(port, 'INFO', 'commandstats')).matchAll(/cmdstat_eval(?:sha)?:calls=(\d+)/g)].reduce((a, m) => a + Number(m[1]), 0);

let server: RedisServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server?.stop());

describe.each(CLIENT_KINDS)('$name, standalone', (kind) => {
  const opened: TestClient[] = [];
  const open = async (wait = true) => {
    const t = await kind.standalone(server.port, { wait });
    opened.push(t);
    return t;
  };
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((t) => t.close()));
  });

  it('admits exactly each limit under concurrency, several policies in one call', async () => {
    const { client } = await open();
    const limiter = createLimiter({
      policy: ['20/1h', { limit: 25, window: '1m', algorithm: 'sliding-log' }],
      store: redisStore({ client }),
      timeout: 5000,
      prefix: uniquePrefix(),
    });
    const keys = Array.from({ length: 8 }, (_, i) => `k${i}`);
    const decisions = await Promise.all(
      keys.flatMap((key) => Array.from({ length: 40 }, () => limiter.consume(key).then((d) => ({ key, d })))),
    );
    for (const key of keys) expect(decisions.filter((x) => x.key === key && x.d.allowed)).toHaveLength(20);
    expect(decisions.every((x) => x.d.source === 'store' || x.d.source === 'deny-cache')).toBe(true);
    const after = await limiter.peek('k0');
    expect(after.source).toBe('store');
    expect(after.policies.map((p) => p.remaining)).toEqual([0, 5]);
  });

  it('after SCRIPT FLUSH the script is reloaded (NOSCRIPT, then EVAL) and no error surfaces', async () => {
    const { client } = await open();
    const events: LimiterEvent[] = [];
    const limiter = createLimiter({
      policy: '10/1h',
      store: redisStore({ client }),
      timeout: 5000,
      prefix: uniquePrefix(),
      onEvent: (e) => events.push(e),
    });
    expect((await limiter.consume('k')).remaining).toBe(9);
    expect(await cli(server.port, 'SCRIPT', 'FLUSH')).toBe('OK');
    const again = await limiter.consume('k');
    expect(again.source).toBe('store');
    expect(again.remaining).toBe(8);
    expect(events.filter((e) => e.type === 'store-error')).toEqual([]);
  });

  it('boot decides on the store: 20 calls made while a new client connects wait for it, no error, no breaker', async () => {
    // A client still connecting (node-redis: connect() called, not awaited), as in every deploy under traffic.
    const t = await open(false);
    const events: LimiterEvent[] = [];
    const limiter = createLimiter({
      policy: '10/1h',
      store: redisStore({ client: t.client }),
      timeout: 2000, // far above a local connect, even on a busy machine: the calls must wait, not time out
      prefix: uniquePrefix(),
      onEvent: (e) => events.push(e),
    });
    const decisions = await Promise.all(Array.from({ length: 20 }, () => limiter.consume('k')));
    expect(decisions.map((d) => d.source)).toEqual(Array(20).fill('store'));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(10);
    expect(events).toEqual(expect.not.arrayContaining([expect.objectContaining({ type: 'store-error' })]));
    expect((await limiter.peek('k')).remaining).toBe(0);
  });

  it('a reconnect decides on the store: calls made while the client reconnects after CLIENT KILL wait for it', async () => {
    const t = await open();
    const events: LimiterEvent[] = [];
    const limiter = createLimiter({
      policy: '10/1h',
      store: redisStore({ client: t.client }),
      timeout: 2000,
      prefix: uniquePrefix(),
      onEvent: (e) => events.push(e),
    });
    expect((await limiter.consume('k')).source).toBe('store');
    // The calls are made as soon as the client has seen its connection go (node-redis reconnects at once).
    const c = t.client as unknown as { status?: string; once(event: string, listener: () => void): void };
    const lost = new Promise<void>((resolve) => c.once(c.status === undefined ? 'reconnecting' : 'close', resolve));
    await cli(server.port, 'CLIENT', 'KILL', 'TYPE', 'normal');
    await lost;
    const decisions = await Promise.all(Array.from({ length: 5 }, () => limiter.consume('k')));
    expect(decisions.map((d) => d.source)).toEqual(Array(5).fill('store'));
    expect(events.filter((e) => e.type === 'store-error')).toEqual([]);
    expect((await limiter.peek('k')).remaining).toBe(4);
  });

  it('boot past the deadline: the fail mode answers, the calls are never sent later, the breaker stays closed', async () => {
    // A server that accepts connections and answers nothing: the connection is being made, never failed.
    server.pause();
    let t: TestClient;
    const events: LimiterEvent[] = [];
    let limiter: ReturnType<typeof createLimiter>;
    try {
      t = await open(false);
      limiter = createLimiter({
        policy: '10/1h',
        store: redisStore({ client: t.client }),
        failMode: 'open',
        timeout: 200,
        prefix: uniquePrefix(),
        onEvent: (e) => events.push(e),
      });
      const before = await Promise.all(Array.from({ length: 12 }, () => limiter.consume('k')));
      expect(before.every((d) => d.source === 'fail-open')).toBe(true);
    } finally {
      server.resume();
    }
    await t.ready();
    await sleep(200);
    const after = await limiter.peek('k');
    expect(after).toMatchObject({ source: 'store', remaining: 10 });
    // Twelve calls timed out while connecting: none counted against the breaker (5 failures open it).
    expect(events.filter((e) => e.type === 'breaker-open')).toEqual([]);
  });

  it('regression: calls made before the first connect are refused at once, not replayed once connected', async () => {
    await server.kill();
    let restarted = false;
    try {
      const t = await open(false);
      const events: LimiterEvent[] = [];
      const timeout = 2000;
      const limiter = createLimiter({
        policy: '10/1h',
        store: redisStore({ client: t.client }),
        failMode: 'open',
        breaker: false,
        timeout,
        prefix: uniquePrefix(),
        onEvent: (e) => events.push(e),
      });
      const started = performance.now();
      const before = await Promise.all(Array.from({ length: 5 }, () => limiter.consume('k')));
      // Refused, not held until the deadline: well under the 2 s timeout even on a busy machine.
      expect(performance.now() - started).toBeLessThan(timeout / 2);
      expect(before.every((d) => d.source === 'fail-open')).toBe(true);
      const errors = events.filter((e) => e.type === 'store-error').map((e) => e.error?.message ?? '');
      expect(errors).toHaveLength(5);
      expect(errors.every((m) => !m.includes('timed out'))).toBe(true);
      await server.restart();
      restarted = true;
      await t.ready();
      await sleep(200);
      const after = await limiter.peek('k');
      expect(after.source).toBe('store');
      expect(after.remaining).toBe(10);
    } finally {
      if (!restarted) await server.restart();
    }
  });

  it('regression: calls answered by the fail mode while disconnected are not charged on reconnect', async () => {
    const t = await open();
    const limiter = createLimiter({
      policy: '10/1h',
      store: redisStore({ client: t.client }),
      failMode: 'open',
      breaker: false,
      timeout: 100,
      prefix: uniquePrefix(),
    });
    expect((await limiter.peek('k')).source).toBe('store');
    await server.kill();
    await sleep(50);
    const during = await Promise.all(Array.from({ length: 5 }, () => limiter.consume('k')));
    expect(during.every((d) => d.source === 'fail-open')).toBe(true);
    await server.restart();
    await t.ready();
    await sleep(200);
    const after = await limiter.peek('k');
    expect(after.source).toBe('store');
    expect(after.remaining).toBe(10);
  });

  it('regression: a call in flight when its connection died is not sent again on the new connection', async () => {
    const t = await open();
    const limiter = createLimiter({
      policy: '10/1h',
      store: redisStore({ client: t.client }),
      failMode: 'open',
      breaker: false,
      timeout: 100,
      prefix: uniquePrefix(),
    });
    expect((await limiter.peek('k')).source).toBe('store');
    const pid = Number(/process_id:(\d+)/.exec(await cli(server.port, 'INFO', 'server'))?.[1]);
    server.pause(); // the calls are written and never answered
    const during = await Promise.all(Array.from({ length: 3 }, () => limiter.consume('k')));
    expect(during.every((d) => d.source === 'fail-open')).toBe(true);
    // SIGKILL while stopped, so that the server never runs them: their connection dies with them in flight.
    process.kill(pid, 'SIGKILL');
    await sleep(100);
    await server.kill();
    await server.restart();
    await t.ready();
    await sleep(300);
    const after = await limiter.peek('k');
    expect(after.source).toBe('store');
    expect(after.remaining).toBe(10);
  });

  it('a Redis that stops answering: every call answers by the fail mode near its deadline', async () => {
    const { client } = await open();
    const timeout = 100;
    const limiter = createLimiter({
      policy: '1000/1h',
      store: redisStore({ client }),
      failMode: 'open',
      breaker: false,
      timeout,
      prefix: uniquePrefix(),
    });
    expect((await limiter.consume('warm')).source).toBe('store');
    server.pause();
    try {
      const started = performance.now();
      const decisions = await Promise.all(Array.from({ length: 100 }, (_, i) => limiter.consume(`k${i % 10}`)));
      // A wide margin: the machine runs other test processes; without a deadline these would wait forever.
      expect(performance.now() - started).toBeLessThan(timeout + 900);
      expect(decisions.every((d) => d.source === 'fail-open' && d.allowed)).toBe(true);
    } finally {
      server.resume();
    }
  });

  it('breaker: opens on failures, keeps calls off Redis while open, closes on a successful probe', async () => {
    const t = await open();
    const events: LimiterEvent[] = [];
    const limiter = createLimiter({
      policy: '1000/1h',
      store: redisStore({ client: t.client }),
      timeout: 100,
      breaker: { failures: 3, cooldown: 1500 },
      prefix: uniquePrefix(),
      onEvent: (e) => events.push(e),
    });
    await server.kill();
    // A call made while the client still reconnects waits and does not count (it has not failed yet);
    // once an attempt to reconnect fails, calls fail at once and count: 3 of them open the breaker.
    const opened = () => events.filter((e) => e.type === 'breaker-open').length;
    try {
      for (let i = 0; i < 50 && opened() === 0; i++) await limiter.consume('k');
    } finally {
      await server.restart();
    }
    expect(opened()).toBe(1);
    await t.ready();
    const whileOpen = await Promise.all(Array.from({ length: 20 }, () => limiter.consume('k')));
    expect(whileOpen.every((d) => d.source === 'fallback')).toBe(true);
    expect(await scriptCalls(server.port)).toBe(0);
    // Past the cooldown, a call probes the store and closes the breaker.
    await until(
      () => limiter.consume('k'),
      (d) => d.source === 'store',
      { withinMs: 10_000, everyMs: 50, what: 'a probe closes the breaker' },
    );
    expect(events.filter((e) => e.type === 'breaker-close')).toHaveLength(1);
    expect(await scriptCalls(server.port)).toBeGreaterThan(0);
  });

  it('regression: redisStore(client), the braces forgotten, says to pass { client }', async () => {
    const { client } = await open();
    const call = () => redisStore(client as never);
    expect(call).toThrow(SluiceError);
    expect(call).toThrow('pass redisStore({ client })');
  });
});

describe('what redisStore() cannot use', () => {
  const secret = 'hunter2-secret';
  it.each([
    ['an object that is no client', { options: { password: secret }, get: async () => null }, 'an object'],
    [
      'a class instance that is no client',
      new (class FakeClient {
        password = secret;
      })(),
      'an instance of FakeClient',
    ],
    ['a URL string', `redis://:${secret}@127.0.0.1:6390`, `a string of ${`redis://:${secret}@127.0.0.1:6390`.length} characters`],
    ['undefined', undefined, 'undefined'],
  ])('%s: refused naming client and the clients taken, describing it by type, never its contents', (_what, client, described) => {
    let error: unknown;
    try {
      redisStore({ client: client as never });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(SluiceError);
    const { code, message } = error as SluiceError;
    expect(code).toBe('ERR_SLUICE_OPTION');
    expect(message).toMatch(/^client must be /);
    for (const name of ['ioredis', 'iovalkey', 'node-redis', 'Cluster', 'createClient()', 'createCluster()'])
      expect(message).toContain(name);
    expect(message).toContain(`got ${described}`);
    expect(message).not.toContain(secret);
  });

  it('options that are not an object are refused, naming { client }', () => {
    expect(() => redisStore(undefined as never)).toThrow('redisStore takes options { client }');
  });
});
