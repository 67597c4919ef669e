// failMode 'closed' with `fallback: false`, on real servers of every adapter and a real Redis that is killed:
// while the store cannot answer, every request is refused with 503, Retry-After and problem+json (not 429: the
// client did nothing wrong), where the per-process fallback, which starts full, would let a locked-out client in.
// Fastify, with an error handler of the app's, hands it the error (statusCode 503) to shape.
import { redisStore } from '@sluice/core';
import Redis from 'ioredis';
import { harnesses, type Running } from './support/http';
import { type RedisServer, sleep, startRedis, uniquePrefix } from './support/redis';

const skipOwn = process.env.REDIS_URL ? describe.skip : describe;

skipOwn.each(harnesses.map((h) => [h.name, h] as const))('%s: fallback: false', (_name, harness) => {
  let server: RedisServer;
  let client: Redis;
  let running: Running;
  beforeAll(async () => {
    server = await startRedis();
  });
  afterEach(async () => {
    await running?.close();
    client?.disconnect();
  });
  afterAll(() => server.stop());

  it('fallback: false refuses every request while Redis is down: 503 with Retry-After and problem+json', async () => {
    // Reconnect soon after a restart; every other ioredis setting is the default.
    client = new Redis({ port: server.port, retryStrategy: () => 50 });
    client.on('error', () => {});
    await new Promise((r) => client.once('ready', r));
    const login = {
      policy: '3/15m',
      store: redisStore({ client }),
      failMode: 'closed',
      fallback: false,
      // Generous: while Redis is up, a busy machine must not make a call miss it. Once it is killed, calls are
      // refused at once (the connection is down), not after the timeout.
      timeout: 1000,
      breaker: { failures: 2, cooldown: 300 },
      prefix: uniquePrefix(),
      key: (req: { headers: Record<string, string | string[] | undefined> }) => String(req.headers['x-user']),
    };
    running = await harness.start({ routes: [{ method: 'POST', path: '/login', options: login }] });
    const post = (user: string) => fetch(`${running.url}/login`, { method: 'POST', headers: { 'x-user': user } });

    for (let i = 0; i < 3; i++) expect((await post('alice')).status).toBe(200);
    expect((await post('alice')).status).toBe(429); // locked out, by Redis

    await server.kill();
    // A client the store never saw, and one it locked out: neither gets in, request after request.
    for (const user of ['bob', 'bob', 'bob', 'bob', 'alice', 'alice']) {
      const res = await post(user);
      if (user === 'alice' && res.status === 429) continue; // the deny cache's: still locked out
      expect(res.status).toBe(503);
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(res.headers.get('ratelimit')).toBeNull();
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(await res.json()).toMatchObject({ status: 503, title: 'Service Unavailable' });
    }

    // Back: the store decides again once the breaker probes it (a new, empty Redis).
    await server.restart();
    const restarted = performance.now();
    let status = 0;
    while (status !== 200 && performance.now() - restarted < 5000) {
      status = (await post('bob')).status;
      if (status !== 200) await sleep(50);
    }
    expect(status).toBe(200);
  });

  if (harness.name === 'fastify')
    it("with an error handler of the app's, Fastify throws it the refusal: statusCode 503, code 'FST_SLUICE_UNAVAILABLE'", async () => {
      client = new Redis({ port: server.port, retryStrategy: () => 50 });
      client.on('error', () => {});
      await new Promise((r) => client.once('ready', r));
      const seen: unknown[] = [];
      running = await harness.start({
        app: { policy: '3/15m', store: redisStore({ client }), fallback: false, timeout: 1000, prefix: uniquePrefix() },
        routes: [{ method: 'POST', path: '/login' }],
        errorHandler: (error, _request, reply) => {
          seen.push(error);
          const { statusCode } = error as { statusCode: number };
          return (reply as { code(n: number): { send(body: string): unknown } }).code(statusCode).send('the app says: later');
        },
      });
      await server.kill();
      try {
        const res = await fetch(`${running.url}/login`, { method: 'POST' });
        expect(res.status).toBe(503);
        expect(res.headers.get('retry-after')).not.toBeNull();
        expect(await res.text()).toBe('the app says: later');
        expect(seen).toEqual([
          expect.objectContaining({
            statusCode: 503,
            code: 'FST_SLUICE_UNAVAILABLE',
            decision: expect.objectContaining({ source: 'fail-closed' }),
          }),
        ]);
      } finally {
        await server.restart();
        // Connected again before afterEach disconnects it: a client torn down mid-reconnect lingers after the run.
        if (client.status !== 'ready') await new Promise((r) => client.once('ready', r));
      }
    });
});
