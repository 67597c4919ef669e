import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createLimiter, type LimiterEvent, redisStore } from '@sluice/core';
import Redis from 'ioredis';
import { scriptCalls, sleep, startRedis, uniquePrefix } from './support/redis';
import { meterStalls } from './support/stalls';
import { until } from './support/until';

type Server = Awaited<ReturnType<typeof startRedis>>;

async function evalCalls(port: number): Promise<number> {
  const admin = new Redis({ port, lazyConnect: true });
  await admin.connect();
  try {
    return await scriptCalls(admin);
  } finally {
    admin.disconnect();
  }
}

describe('store faults', () => {
  let server: Server;
  let client: Redis;
  beforeAll(async () => {
    server = await startRedis();
    if (process.env.REDIS_URL) return;
  });
  beforeEach(async () => {
    client = new Redis({ port: server.port, maxRetriesPerRequest: 1, retryStrategy: () => 20 });
    await new Promise((r) => client.once('ready', r));
  });
  afterEach(() => client.disconnect());
  afterAll(() => server.stop());

  const skipOwn = process.env.REDIS_URL ? it.skip : it;

  skipOwn(
    'paused Redis: 200 concurrent calls answer within timeout + 50 ms and measured stalls; open allows, closed admits at most its fallback',
    async () => {
      const timeout = 100;
      const open = createLimiter({ policy: '1000/1h', store: redisStore({ client }), failMode: 'open', timeout, prefix: uniquePrefix() });
      const closed = createLimiter({
        policy: '1000/1h',
        fallback: '20/1h',
        store: redisStore({ client }),
        timeout,
        prefix: uniquePrefix(),
      });
      // The first call loads the script and may miss 100 ms on a busy machine: wait for one store answer.
      const warmUntil = performance.now() + 10_000;
      while ((await open.consume('warm')).source !== 'store') {
        if (performance.now() > warmUntil) throw new Error('the store did not answer within 10 s');
        await sleep(20);
      }
      server.pause();
      // How late this process runs its timers meanwhile: added to the margin.
      const stalls = meterStalls();
      try {
        const timed = (p: Promise<{ allowed: boolean; source: string }>) => {
          const t = performance.now();
          return p.then((d) => ({ ...d, ms: performance.now() - t }));
        };
        const results = await Promise.all([
          ...Array.from({ length: 100 }, (_, i) => timed(open.consume(`k${i % 10}`))),
          ...Array.from({ length: 100 }, () => timed(closed.consume('login'))),
        ]).finally(() => stalls.stop());
        expect(Math.max(...results.map((r) => r.ms))).toBeLessThanOrEqual(timeout + 50 + stalls.total());
        const [o, c] = [results.slice(0, 100), results.slice(100)];
        expect(o.every((r) => r.allowed && r.source === 'fail-open')).toBe(true);
        expect(c.every((r) => r.source === 'fallback')).toBe(true);
        expect(c.filter((r) => r.allowed).length).toBe(20);
      } finally {
        stalls.stop();
        server.resume();
      }
    },
  );

  skipOwn('killed then restarted Redis: fallback during the outage, the store again within 1 s of the restart', async () => {
    const limiter = createLimiter({ policy: '1000/1h', store: redisStore({ client }), timeout: 50, prefix: uniquePrefix() });
    expect((await limiter.consume('k')).source).toBe('store');
    await server.kill();
    const during = await Promise.all(Array.from({ length: 50 }, () => limiter.consume('k')));
    expect(during.every((d) => d.source === 'fallback' && d.allowed)).toBe(true);
    await server.restart();
    const restarted = performance.now();
    await until(
      () => limiter.consume('k'),
      (d) => d.source === 'store',
      { withinMs: 3000, everyMs: 20, what: 'the store decides again' },
    );
    expect(performance.now() - restarted).toBeLessThan(1000);
  });

  skipOwn('regression: calls answered by the fail mode while Redis is down are not charged when it comes back', async () => {
    // ioredis' defaults: an offline queue and 20 retries per request, which would replay the calls on reconnect.
    const own = new Redis({ port: server.port, retryStrategy: () => 20 });
    own.on('error', () => {});
    await new Promise((r) => own.once('ready', r));
    try {
      const limiter = createLimiter({
        policy: '100/1h',
        store: redisStore({ client: own }),
        failMode: 'open',
        breaker: false,
        timeout: 50,
        prefix: uniquePrefix(),
      });
      expect((await limiter.peek('k')).source).toBe('store');
      await server.kill();
      await sleep(50);
      const during = await Promise.all(Array.from({ length: 5 }, () => limiter.consume('k')));
      expect(during.every((d) => d.source === 'fail-open')).toBe(true);
      await server.restart();
      await new Promise((r) => (own.status === 'ready' ? r(null) : own.once('ready', r)));
      // The first call after the restart loads the script again, which may miss 50 ms on a busy machine: a
      // peek charges nothing, so it is asked until the store answers.
      const after = await until(
        () => limiter.peek('k'),
        (d) => d.source === 'store',
        { what: 'the store answers again' },
      );
      expect(after.remaining).toBe(100);
    } finally {
      own.disconnect();
    }
  });

  skipOwn('with two script calls in flight, later decisions wait and then go together in one call', async () => {
    const limiter = createLimiter({ policy: '1000/1h', store: redisStore({ client }), timeout: 2000, prefix: uniquePrefix() });
    expect((await limiter.consume('warm')).source).toBe('store');
    const before = await evalCalls(server.port);
    server.pause(); // the first two calls stay in flight
    const decisions: Promise<{ source: string }>[] = [];
    try {
      for (let turn = 0; turn < 20; turn++) {
        for (let i = 0; i < 10; i++) decisions.push(limiter.consume(`k${i}`));
        await new Promise((r) => setImmediate(r)); // a flush per event-loop turn
      }
      await sleep(30);
    } finally {
      server.resume();
    }
    const answered = await Promise.all(decisions);
    expect(answered.every((d) => d.source === 'store')).toBe(true);
    // Two calls, then the 18 turns that waited, together (a slow machine may split them once more);
    // sent as they come, they would be 20 calls.
    expect((await evalCalls(server.port)) - before - 1).toBeLessThanOrEqual(4);
  });

  skipOwn('breaker events come once per store transition, naming the prefixes of every limiter on that store', async () => {
    const events: LimiterEvent[] = [];
    const onEvent = (e: LimiterEvent) => {
      if (e.type === 'breaker-open' || e.type === 'breaker-close') events.push(e);
    };
    const store = redisStore({ client });
    const breaker = { failures: 2, cooldown: 300 };
    const [a, b, c] = [uniquePrefix(), uniquePrefix(), uniquePrefix()];
    const limiters = [a, b, c].map((prefix) => createLimiter({ policy: '1000/1h', store, timeout: 50, breaker, prefix, onEvent }));
    await server.kill();
    // Until an attempt to reconnect has failed, calls wait and do not count (the breaker's own test on
    // every client: test/clients.standalone.test.ts).
    try {
      for (let i = 0; i < 50 && events.length === 0; i++) await Promise.all(limiters.map((l) => l.consume('k')));
      for (let i = 0; i < 2; i++) await Promise.all(limiters.map((l) => l.consume('k')));
    } finally {
      await server.restart();
    }
    expect(events.map((e) => e.type)).toEqual(['breaker-open']);
    expect(events[0]?.prefixes).toEqual([a, b, c]);
    await new Promise((r) => (client.status === 'ready' ? r(null) : client.once('ready', r)));
    await sleep(400);
    await Promise.all(limiters.map((l) => l.consume('k')));
    expect(events.map((e) => e.type)).toEqual(['breaker-open', 'breaker-close']);
    expect(events[1]?.prefixes).toEqual([a, b, c]);
    await Promise.all(limiters.map((l) => l.close()));
  });

  skipOwn('a flapping Redis leaves nothing pending: the process exits on its own', async () => {
    const child = new Promise<{ code: number | null; out: string }>((resolve) => {
      const p = execFile(
        process.execPath,
        [join(__dirname, 'consumers', 'flap-child.cjs'), String(server.port), uniquePrefix()],
        { timeout: 20_000 },
        (_e, out) => resolve({ code: p.exitCode, out }),
      );
    });
    await sleep(300);
    for (let i = 0; i < 4; i++) {
      await server.kill();
      await sleep(150);
      await server.restart();
      await sleep(250);
    }
    const { code, out } = await child;
    expect(code).toBe(0);
    const report = JSON.parse(out.trim().split('\n').pop() as string);
    expect(report.errors).toBe(0);
    expect(report.sources.store).toBeGreaterThan(0);
    expect(report.sources.fallback).toBeGreaterThan(0);
  });
});
