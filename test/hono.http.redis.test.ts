// What @sluice/hono does beyond the contract suite every adapter runs (test/support/http.ts has its harness):
// two Hono apps on one Redis, Hono's own idioms (c.var, a handler's own Response, app.onError, app.request()
// with no socket, getIP), its scope names, and its bad options. Real servers on @hono/node-server.
import type { AddressInfo } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import { createLimiter, type Decision, memoryStore, redisStore, SluiceError } from '@sluice/core';
import { rateLimit } from '@sluice/hono';
import { Hono } from 'hono';
import { HonoRequest } from 'hono/request';
import type Redis from 'ioredis';
import { uniquePrefix } from './support/redis';
import { type RedisWithClient, startRedisWithClient, stopRedisWithClient } from './support/redis-client';

let redis: RedisWithClient;
const closers: Array<() => Promise<void>> = [];
beforeAll(async () => {
  redis = await startRedisWithClient();
});
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});
afterAll(() => stopRedisWithClient(redis));

/** `app` served by @hono/node-server on 127.0.0.1, port 0; its URL. */
async function listen(app: Hono): Promise<string> {
  const server = createAdaptorServer({ fetch: app.fetch });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** The errors app.onError saw, and the app. */
function appWithErrors(): { app: Hono; errors: unknown[] } {
  const errors: unknown[] = [];
  const app = new Hono();
  app.onError((error, c) => {
    errors.push(error);
    return c.text('failed', 500);
  });
  return { app, errors };
}

describe('two Hono apps on one Redis', () => {
  it('50 concurrent requests on one key across both admit exactly the limit', async () => {
    const prefix = uniquePrefix();
    const urls: string[] = [];
    for (let i = 0; i < 2; i++) {
      // Each app its own Redis connection, as two processes would have.
      const client: Redis = redis.client.duplicate();
      closers.push(async () => void client.disconnect());
      const app = new Hono();
      app.use(rateLimit({ policy: '20/1h', store: redisStore({ client }), prefix, timeout: 5000, key: () => 'one-key' }));
      app.get('/', (c) => c.text('ok'));
      urls.push(await listen(app));
    }
    const statuses = await Promise.all(Array.from({ length: 50 }, (_, i) => fetch(urls[i % 2] as string).then((r) => r.status)));
    expect(statuses.filter((s) => s === 200)).toHaveLength(20);
    expect(statuses.filter((s) => s === 429)).toHaveLength(30);
  });
});

describe("Hono's idioms", () => {
  it('c.var.rateLimit holds the Decision, and a handler that returns its own Response keeps the rate-limit headers', async () => {
    const app = new Hono();
    app.get('/', rateLimit({ policy: '2/1m', key: () => 'k' }), (c) => {
      const decision: Decision | undefined = c.var.rateLimit;
      return new Response(`${decision?.remaining} left`);
    });
    const url = await listen(app);
    const res = await fetch(url);
    expect(await res.text()).toBe('1 left');
    expect(res.headers.get('ratelimit')).toMatch(/^"2-per-60s";r=1;t=\d+$/);
    expect(res.headers.get('ratelimit-policy')).toBe('"2-per-60s";q=2;w=60');
  });

  it('onLimited that returns its own Response: it answers, with Retry-After and the rate-limit headers', async () => {
    const app = new Hono();
    const onLimited = () => new Response('slow down', { status: 429 });
    app.get('/', rateLimit({ policy: '1/1m', key: () => 'k', onLimited }), (c) => c.text('ok'));
    const url = await listen(app);
    await (await fetch(url)).text();
    const res = await fetch(url);
    expect([res.status, await res.text()]).toEqual([429, 'slow down']);
    expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(res.headers.get('ratelimit')).toMatch(/^"1-per-60s";r=0;t=\d+$/);
  });

  it('a handler that passes on a fetch() Response (immutable headers) answers it, with the rate-limit headers', async () => {
    const upstream = new Hono();
    upstream.get('/', (c) => c.text('from upstream'));
    const upstreamUrl = await listen(upstream);
    const app = new Hono();
    app.get('/', rateLimit({ policy: '2/1m', key: () => 'k' }), () => fetch(upstreamUrl));
    const res = await fetch(await listen(app));
    expect([res.status, await res.text()]).toEqual([200, 'from upstream']);
    expect(res.headers.get('ratelimit')).toMatch(/^"2-per-60s";r=1;t=\d+$/);
  });

  const fails = () => {
    throw new Error('no user');
  };
  const rejects = async () => Promise.reject(new Error('no user'));
  it.each<[string, Record<string, unknown>, string, boolean]>([
    ['a key that throws', { key: fails }, 'ERR_SLUICE_KEY', true],
    ['a key that rejects', { key: rejects }, 'ERR_SLUICE_KEY', true],
    ['a key that returns nothing', { key: () => undefined }, 'ERR_SLUICE_KEY', false],
    ['a cost that throws', { key: () => 'k', cost: fails }, 'ERR_SLUICE_COST', true],
    ['a skip that rejects', { key: () => 'k', skip: rejects }, 'ERR_SLUICE_KEY', true],
    ['a policy function that throws', { key: () => 'k', policy: fails }, 'ERR_SLUICE_OPTION', true],
    ["hono-rate-limiter's keyGenerator that throws", { windowMs: 60_000, limit: 5, keyGenerator: fails }, 'ERR_SLUICE_KEY', true],
  ])('%s reaches app.onError as a SluiceError, the original as its cause', async (_name, options, code, caused) => {
    const { app, errors } = appWithErrors();
    app.use(rateLimit(('windowMs' in options ? options : { policy: '5/1m', ...options }) as never));
    app.get('/', (c) => c.text('ok'));
    const res = await fetch(await listen(app));
    expect([res.status, await res.text()]).toEqual([500, 'failed']);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(SluiceError);
    expect(errors[0]).toMatchObject({ code });
    if (caused) expect((errors[0] as Error).cause).toEqual(new Error('no user'));
  });

  it('app.request() with no socket: the default key is refused through app.onError; key(c) works on the memory store', async () => {
    const { app, errors } = appWithErrors();
    app.get('/ip', rateLimit({ policy: '1/1m' }), (c) => c.text('ok'));
    app.get('/user', rateLimit({ policy: '1/1m', key: (c) => c.req.header('x-user') ?? 'anon' }), (c) => c.text('ok'));
    expect((await app.request('/ip')).status).toBe(500);
    expect(errors[0]).toMatchObject({ name: 'SluiceError', code: 'ERR_SLUICE_KEY', message: expect.stringMatching(/key/) });
    const as = (user: string) => app.request('/user', { headers: { 'x-user': user } });
    expect([(await as('ann')).status, (await as('bob')).status, (await as('ann')).status]).toEqual([200, 200, 429]);
  });

  it("getIP: the address a runtime's getConnInfo or a function returns keys the client, and silences the X-Forwarded-For warning", async () => {
    const warned = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    try {
      const { app, errors } = appWithErrors();
      const fromHeader = (c: { req: { header(n: string): string | undefined } }) => c.req.header('x-real-ip');
      app.get('/string', rateLimit({ policy: '1/1m', getIP: fromHeader }), (c) => c.text('ok'));
      app.get('/conninfo', rateLimit({ policy: '1/1m', getIP: (c) => ({ remote: { address: fromHeader(c) } }) }), (c) => c.text('ok'));
      const unknown = () => {
        throw new Error('no address');
      };
      app.get('/throws', rateLimit({ policy: '1/1m', getIP: unknown }), (c) => c.text('ok'));
      const url = await listen(app);
      for (const path of ['/string', '/conninfo']) {
        const from = (ip: string) =>
          fetch(`${url}${path}`, { headers: { 'x-real-ip': ip, 'x-forwarded-for': '203.0.113.1' } }).then((r) => r.status);
        expect([await from('192.0.2.1'), await from('192.0.2.2'), await from('192.0.2.1')]).toEqual([200, 200, 429]);
      }
      expect(warned).not.toHaveBeenCalled();
      expect((await fetch(`${url}/throws`)).status).toBe(500);
      expect(errors[0]).toMatchObject({ name: 'SluiceError', code: 'ERR_SLUICE_KEY', cause: new Error('no address') });
    } finally {
      warned.mockRestore();
    }
  });

  // The request's own matchedRoutes getter is deprecated: without it (a later Hono), hono/route's helper names the route.
  it.each([
    ['', false],
    [", with hono/route's helper where the request has no matchedRoutes getter", true],
  ])(
    "counts under the scopes the CLI names: a route's 'METHOD /pattern', a mount's '* /path', the root's '*'%s",
    async (_name, withoutGetter) => {
      const getter = Object.getOwnPropertyDescriptor(HonoRequest.prototype, 'matchedRoutes') as PropertyDescriptor;
      if (withoutGetter) delete (HonoRequest.prototype as { matchedRoutes?: unknown }).matchedRoutes;
      try {
        const limiter = createLimiter({ policy: '10/1m', store: memoryStore() });
        const app = new Hono();
        app.use(rateLimit({ limiter, key: () => 'k' }));
        app.use('/api/*', rateLimit({ limiter, key: () => 'k' }));
        app.post('/api/users/:id', rateLimit({ limiter, key: () => 'k' }), (c) => c.text('ok'));
        expect((await app.request('/api/users/7', { method: 'POST' })).status).toBe(200);
        const left = async (scope: string) => (await limiter.peek('k', { scope })).remaining;
        expect([await left('*'), await left('* /api'), await left('POST /api/users/:id'), await left('GET /api/users/:id')]).toEqual([
          9, 9, 9, 10,
        ]);
      } finally {
        Object.defineProperty(HonoRequest.prototype, 'matchedRoutes', getter);
      }
    },
  );
});

describe('bad options throw ERR_SLUICE_OPTION when the middleware is made, naming the option', () => {
  it.each([
    ['onLimited', { policy: '1/1m', onLimited: 'json' }, /^onLimited /],
    ['getIP', { policy: '1/1m', getIP: '127.0.0.1' }, /^getIP /],
    ['a misspelt option', { policy: '1/1m', keyy: () => 'k' }, /^keyy /],
    ['no policy', {}, /^policy /],
  ])('%s', (_name, options, message) => {
    expect(() => rateLimit(options as never)).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_OPTION', message: expect.stringMatching(message) }),
    );
  });
});
