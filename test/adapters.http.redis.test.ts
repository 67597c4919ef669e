// The adapters' contract suite: the same HTTP contract for @sluice/express, @sluice/fastify and @sluice/koa,
// against one real Redis (redisStore on ioredis), each app driven in process through supertest.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createLimiter, redisStore, type Store } from '@sluice/core';
import * as sluiceExpress from '@sluice/express';
import * as sluiceFastify from '@sluice/fastify';
import * as sluiceHono from '@sluice/hono';
import * as sluiceKoa from '@sluice/koa';
import express from 'express';
import Redis from 'ioredis';
import request, { type Response } from 'supertest';
import {
  type FrameworkName,
  type Harness,
  harnesses,
  type Options,
  parseRateLimit,
  parseRateLimitPolicy,
  parseSfList,
  type Running,
  type StartOptions,
} from './support/http';
import { type RedisServer, startRedis, uniquePrefix } from './support/redis';

let server: RedisServer;
let client: Redis;
let store: Store;
const open: Running[] = [];

beforeAll(async () => {
  server = await startRedis();
  client = new Redis(server.url);
  await new Promise((r) => client.once('ready', r)); // the store refuses calls made before the first connect
  store = redisStore({ client });
});

afterEach(async () => {
  await Promise.all(open.splice(0).map((r) => r.close()));
  const seen = offStore.splice(0);
  if (seen.length > 0) throw new Error(`decisions made without Redis: ${seen.join(', ')}`);
});

afterAll(async () => {
  client.disconnect();
  await server.stop();
});

/** Decisions the store did not make (timeouts, fallbacks): a test that saw one did not test Redis. */
const offStore: string[] = [];
const OFF_STORE = new Set(['store-error', 'breaker-open', 'fallback', 'fail-open']);
/**
 * Store, a fresh prefix, and a store timeout generous enough for 2 busy cores: with the default 50 ms, a loaded
 * machine times calls out and the local fallback decides, which is fail-over behaviour, not this suite's subject.
 */
const fresh = () => ({
  store,
  prefix: uniquePrefix(),
  timeout: 2000,
  onEvent: (e: { type: string; error?: Error }) => {
    if (OFF_STORE.has(e.type)) offStore.push(`${e.type}${e.error ? `: ${e.error.message}` : ''}`);
  },
});

/** One request through the app's supertest; the answer's `body` is parsed when it is JSON (problem+json included). */
async function hit(
  running: Running,
  path: string,
  init: { method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: object } = {},
): Promise<Response> {
  const test = init.method === 'POST' ? running.request.post(path) : running.request.get(path);
  if (init.headers) test.set(init.headers);
  if (init.body) test.send(init.body);
  return await test;
}

/** The policies of the decisions published on `sluice:decision` for `prefix`, in order, until stop(). */
function decisionsUnder(prefix: string): { policies: string[]; stop(): void } {
  const policies: string[] = [];
  const onDecision = (message: unknown) => {
    const m = message as { prefix: string; decision: { policy: string } };
    if (m.prefix === prefix) policies.push(m.decision.policy);
  };
  subscribe('sluice:decision', onDecision);
  return { policies, stop: () => unsubscribe('sluice:decision', onDecision) };
}

const remainingOf = (h: Response) => (h.body as { remaining?: unknown } | undefined)?.remaining;

const DRAFT = ['ratelimit', 'ratelimit-policy'];
const LEGACY = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'];
const present = (h: Response, names: string[]) => names.filter((n) => h.get(n) !== undefined);

function retryAfter(h: Response): number {
  const raw = h.get('retry-after');
  expect(raw).toMatch(/^\d+$/);
  return Number(raw);
}

/** Header-carrying request shape shared by Express req, Fastify request and Koa ctx / ctx.request. */
type Req = { headers: Record<string, string | string[] | undefined> };
const header = (r: unknown, name: string) => {
  const v = (r as Req).headers[name];
  return Array.isArray(v) ? v[0] : v;
};

const modules: Record<FrameworkName, { named: unknown; default: unknown }> = {
  express: { named: sluiceExpress.rateLimit, default: (sluiceExpress as { default?: unknown }).default },
  fastify: { named: (sluiceFastify as { rateLimit?: unknown }).rateLimit, default: sluiceFastify.default },
  koa: { named: sluiceKoa.rateLimit, default: (sluiceKoa as { default?: unknown }).default },
  hono: { named: sluiceHono.rateLimit, default: (sluiceHono as { default?: unknown }).default },
};

/** Framework-shaped onLimited that answers 429 JSON { custom: true, policy }. */
const customOnLimited: Record<FrameworkName, unknown> = {
  express: (_req: unknown, res: { status(n: number): { json(b: unknown): void } }, _next: unknown, decision: { policy: string }) => {
    res.status(429).json({ custom: true, policy: decision.policy });
  },
  fastify: async (_request: unknown, reply: { code(n: number): { send(b: unknown): unknown } }, decision: { policy: string }) => {
    reply.code(429).send({ custom: true, policy: decision.policy });
  },
  koa: async (ctx: { status: number; body: unknown }, decision: { policy: string }) => {
    ctx.status = 429;
    ctx.body = { custom: true, policy: decision.policy };
  },
  hono: (c: { json(b: unknown, status: number): Response }, decision: { policy: string }) =>
    c.json({ custom: true, policy: decision.policy }, 429),
};

describe.each(harnesses)('$name adapter on Redis', (h: Harness) => {
  const start = async (options: StartOptions) => {
    const running = await h.start(options);
    open.push(running);
    return running;
  };
  const GET = (path: string, options?: Options | false) => ({
    method: 'GET' as const,
    path,
    ...(options === undefined ? {} : { options }),
  });

  it('exports the same rateLimit as default and named export', () => {
    expect(typeof modules[h.name].named).toBe('function');
    expect(modules[h.name].default).toBe(modules[h.name].named);
  });

  // 1. Policy 3/1m: status codes, draft-10 headers, Retry-After, problem+json, header modes.
  describe('policy 3/1m', () => {
    it('three 2xx, then 429 with Retry-After, draft-10 headers parsed, problem+json body', async () => {
      const options = { ...fresh(), policy: '3/1m' };
      const app = await start({ app: options, routes: [GET('/r')] });
      for (const expected of [2, 1, 0]) {
        const res = await hit(app, '/r');
        expect(res.status).toBe(200);
        expect(remainingOf(res)).toBe(expected);
        expect(parseRateLimitPolicy(res.get('ratelimit-policy'))).toEqual([{ name: '3-per-60s', q: 3, w: 60 }]);
        const limits = parseRateLimit(res.get('ratelimit'));
        expect(limits).toHaveLength(1);
        expect(limits[0]!.name).toBe('3-per-60s');
        expect(limits[0]!.r).toBe(expected);
        expect(limits[0]!.t).toBeGreaterThanOrEqual(0);
        expect(limits[0]!.t).toBeLessThanOrEqual(60);
        expect(res.get('retry-after')).toBeUndefined();
        expect(present(res, LEGACY)).toEqual([]);
      }
      const denied = await hit(app, '/r');
      expect(denied.status).toBe(429);
      const wait = retryAfter(denied);
      expect(wait).toBeGreaterThanOrEqual(1);
      expect(wait).toBeLessThanOrEqual(60);
      expect(parseRateLimitPolicy(denied.get('ratelimit-policy'))).toEqual([{ name: '3-per-60s', q: 3, w: 60 }]);
      expect(parseRateLimit(denied.get('ratelimit'))).toEqual([{ name: '3-per-60s', r: 0, t: wait }]);
      expect(denied.type).toBe('application/problem+json');
      const problem = denied.body as Record<string, unknown>;
      expect(problem).toEqual(
        expect.objectContaining({ title: expect.any(String), status: 429, detail: expect.any(String), 'violated-policies': ['3-per-60s'] }),
      );
      expect(problem.type ?? 'about:blank').toBe('about:blank');
      expect((problem.title as string).length).toBeGreaterThan(0);
      expect((problem.detail as string).length).toBeGreaterThan(0);
      // The counter lives in Redis, under the prefix.
      expect((await client.keys(`${options.prefix}:*`)).length).toBeGreaterThan(0);
    });

    it('several policies: one list member per policy; the 429 names only the violated one', async () => {
      const app = await start({ app: { ...fresh(), policy: ['2/1m', '10/1h'] }, routes: [GET('/r')] });
      const first = await hit(app, '/r');
      expect(first.status).toBe(200);
      expect(parseRateLimitPolicy(first.get('ratelimit-policy'))).toEqual([
        { name: '2-per-60s', q: 2, w: 60 },
        { name: '10-per-3600s', q: 10, w: 3600 },
      ]);
      expect(parseRateLimit(first.get('ratelimit')).map(({ name, r }) => [name, r])).toEqual([
        ['2-per-60s', 1],
        ['10-per-3600s', 9],
      ]);
      expect((await hit(app, '/r')).status).toBe(200);
      const denied = await hit(app, '/r');
      expect(denied.status).toBe(429);
      expect((denied.body as Record<string, unknown>)['violated-policies']).toEqual(['2-per-60s']);
      const limits = parseRateLimit(denied.get('ratelimit'));
      expect(limits.map(({ name, r }) => [name, r])).toEqual([
        ['2-per-60s', 0],
        ['10-per-3600s', 8], // a denial charges none
      ]);
      expect(limits[0]!.t).toBe(retryAfter(denied));
    });

    it.each<[string | false, string[]]>([
      ['legacy', LEGACY],
      ['both', [...DRAFT, ...LEGACY]],
      [false, []],
    ])('headers %p emits exactly its set', async (mode, expected) => {
      const app = await start({ app: { ...fresh(), policy: '3/1m', headers: mode }, routes: [GET('/r')] });
      const all = [...DRAFT, ...LEGACY];
      for (const left of [2, 1, 0]) {
        const before = Math.floor(Date.now() / 1000);
        const res = await hit(app, '/r');
        expect(res.status).toBe(200);
        expect(present(res, all).sort()).toEqual([...expected].sort());
        expect(res.get('retry-after')).toBeUndefined();
        if (expected.includes('x-ratelimit-limit')) {
          expect(res.get('x-ratelimit-limit')).toBe('3');
          expect(res.get('x-ratelimit-remaining')).toBe(String(left));
          const reset = res.get('x-ratelimit-reset')!;
          expect(reset).toMatch(/^\d+$/); // epoch seconds, not ms and not a delta
          expect(Number(reset)).toBeGreaterThanOrEqual(before);
          expect(Number(reset)).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 61);
        }
        if (expected.includes('ratelimit')) expect(parseRateLimit(res.get('ratelimit'))[0]!.r).toBe(left);
      }
      const now = Date.now() / 1000;
      const denied = await hit(app, '/r');
      expect(denied.status).toBe(429);
      expect(present(denied, all).sort()).toEqual([...expected].sort());
      const wait = retryAfter(denied);
      expect(wait).toBeGreaterThanOrEqual(1);
      expect(wait).toBeLessThanOrEqual(60);
      if (expected.includes('x-ratelimit-reset')) {
        expect(denied.get('x-ratelimit-remaining')).toBe('0');
        expect(Math.abs(Number(denied.get('x-ratelimit-reset')) - (now + wait))).toBeLessThanOrEqual(2);
      }
      if (expected.includes('ratelimit')) expect(parseRateLimit(denied.get('ratelimit'))[0]!.t).toBe(wait);
    });
  });

  // 2. Route-level policies and scopes.
  describe('routes', () => {
    it('a strict route under a lenient app-level limit is limited by its own policy', async () => {
      const shared = fresh();
      const app = await start({
        app: { ...shared, policy: '100/1m' },
        routes: [GET('/strict', { ...shared, policy: '2/1m' }), GET('/open')],
      });
      expect((await hit(app, '/strict')).status).toBe(200);
      expect((await hit(app, '/strict')).status).toBe(200);
      const denied = await hit(app, '/strict');
      expect(denied.status).toBe(429);
      expect((denied.body as Record<string, unknown>)['violated-policies']).toEqual(['2-per-60s']);
      const other = await hit(app, '/open');
      expect(other.status).toBe(200);
      expect(parseRateLimitPolicy(other.get('ratelimit-policy'))).toEqual([{ name: '100-per-60s', q: 100, w: 60 }]);
    });

    if (h.name === 'fastify') {
      it("one hook per route: a route's options override the plugin's, so one decision and one policy per request", async () => {
        const shared = fresh();
        const seen = decisionsUnder(shared.prefix);
        try {
          // headers 'both' is set on the plugin only: the route's options merge over the plugin's, not replace them.
          const app = await start({ app: { ...shared, policy: '100/1m', headers: 'both' }, routes: [GET('/strict', { policy: '2/1m' })] });
          for (const left of [1, 0]) {
            const res = await hit(app, '/strict');
            expect(res.status).toBe(200);
            expect(parseRateLimitPolicy(res.get('ratelimit-policy'))).toEqual([{ name: '2-per-60s', q: 2, w: 60 }]);
            expect(parseRateLimit(res.get('ratelimit')).map((p) => [p.name, p.r])).toEqual([['2-per-60s', left]]);
            expect(res.get('x-ratelimit-limit')).toBe('2');
          }
          const denied = await hit(app, '/strict');
          expect(denied.status).toBe(429);
          expect((denied.body as Record<string, unknown>)['violated-policies']).toEqual(['2-per-60s']);
          // The plugin's 100/1m never decided: three requests, three decisions, all by the route's policy.
          expect(seen.policies).toEqual(['2-per-60s', '2-per-60s', '2-per-60s']);
        } finally {
          seen.stop();
        }
      });
    } else {
      it('stacked app-level and route-level limits both show in the RateLimit lists', async () => {
        const shared = fresh();
        const app = await start({ app: { ...shared, policy: '100/1m' }, routes: [GET('/strict', { ...shared, policy: '2/1m' })] });
        const res = await hit(app, '/strict');
        expect(parseRateLimitPolicy(res.get('ratelimit-policy')).map((p) => p.name)).toEqual(['100-per-60s', '2-per-60s']);
        expect(parseRateLimit(res.get('ratelimit')).map((p) => [p.name, p.r])).toEqual([
          ['100-per-60s', 99],
          ['2-per-60s', 1],
        ]);
      });
    }

    it('two routes with the same policy count apart', async () => {
      const opts = { ...fresh(), policy: '1/1m' };
      const app = await start({ routes: [GET('/a', opts), GET('/b', opts)] });
      expect((await hit(app, '/a')).status).toBe(200);
      expect((await hit(app, '/b')).status).toBe(200);
      expect((await hit(app, '/a')).status).toBe(429);
      expect((await hit(app, '/b')).status).toBe(429);
    });

    it('two routes that share a scope share a counter', async () => {
      const opts = { ...fresh(), policy: '1/1m', scope: 'login' };
      const app = await start({ routes: [GET('/a', opts), GET('/b', opts)] });
      expect((await hit(app, '/a')).status).toBe(200);
      expect((await hit(app, '/b')).status).toBe(429);
    });

    it('a shared limiter counts once across routes when they share a scope, and apart when they do not', async () => {
      const limiter = createLimiter({ ...fresh(), policy: '1/1m' });
      const app = await start({
        routes: [GET('/a', { limiter, scope: 'one' }), GET('/b', { limiter, scope: 'one' }), GET('/c', { limiter })],
      });
      expect((await hit(app, '/a')).status).toBe(200);
      expect((await hit(app, '/b')).status).toBe(429);
      expect((await hit(app, '/c')).status).toBe(200);
    });

    it(`app-level options: ${h.name === 'fastify' ? 'each route counts on its own' : 'one counter per client for every route'}`, async () => {
      const app = await start({ app: { ...fresh(), policy: '1/1m' }, routes: [GET('/a'), GET('/b')] });
      expect((await hit(app, '/a')).status).toBe(200);
      // Express and Koa: one counter for everything under the mount; Fastify: scope default `METHOD routeOptions.url`.
      expect((await hit(app, '/b')).status).toBe(h.name === 'fastify' ? 200 : 429);
    });

    it('shadow: decides and reports, never denies', async () => {
      const app = await start({ app: { ...fresh(), policy: '1/1m', shadow: true }, routes: [GET('/r')] });
      for (let i = 0; i < 3; i++) {
        const res = await hit(app, '/r');
        expect(res.status).toBe(200);
        expect(res.get('retry-after')).toBeUndefined();
      }
    });

    it('the same path under two methods counts apart', async () => {
      const opts = { ...fresh(), policy: '1/1m' };
      const app = await start({ routes: [GET('/login', opts), { method: 'POST', path: '/login', options: opts }] });
      expect((await hit(app, '/login', { method: 'POST' })).status).toBe(200);
      expect((await hit(app, '/login')).status).toBe(200);
      expect((await hit(app, '/login', { method: 'POST' })).status).toBe(429);
    });

    it('a parameterized route counts per pattern, not per URL', async () => {
      const app = await start({ routes: [GET('/users/:id', { ...fresh(), policy: '1/1m' })] });
      expect((await hit(app, '/users/1')).status).toBe(200);
      expect((await hit(app, '/users/2')).status).toBe(429);
    });

    if (h.name === 'fastify') {
      it('config.rateLimit false: the route is never limited', async () => {
        const app = await start({ app: { ...fresh(), policy: '1/1m' }, routes: [GET('/health', false), GET('/x')] });
        for (let i = 0; i < 4; i++) expect((await hit(app, '/health')).status).toBe(200);
        expect((await hit(app, '/x')).status).toBe(200);
        expect((await hit(app, '/x')).status).toBe(429);
        expect((await hit(app, '/health')).status).toBe(200);
      });

      it('global false: only routes with config.rateLimit are limited', async () => {
        const app = await start({ app: { ...fresh(), policy: '1/1m', global: false }, routes: [GET('/free'), GET('/limited', {})] });
        for (let i = 0; i < 3; i++) expect((await hit(app, '/free')).status).toBe(200);
        expect((await hit(app, '/limited')).status).toBe(200);
        expect((await hit(app, '/limited')).status).toBe(429);
      });

      it("hook 'preHandler': the key can read the parsed body", async () => {
        const key = (request: unknown) => String((request as { body?: { user?: string } }).body?.user);
        const app = await start({
          app: { ...fresh(), policy: '1/1m', hook: 'preHandler', key },
          routes: [{ method: 'POST', path: '/login' }],
        });
        const as = (user: string) => hit(app, '/login', { method: 'POST', body: { user } });
        expect((await as('ann')).status).toBe(200);
        expect((await as('bob')).status).toBe(200);
        expect((await as('ann')).status).toBe(429);
      });

      it('a route override more lenient than the plugin wins', async () => {
        const app = await start({ app: { ...fresh(), policy: '1/1m' }, routes: [GET('/lenient', { policy: '3/1m' })] });
        for (const left of [2, 1, 0]) {
          const res = await hit(app, '/lenient');
          expect(res.status).toBe(200);
          expect(remainingOf(res)).toBe(left);
        }
        const denied = await hit(app, '/lenient');
        expect(denied.status).toBe(429);
        expect(parseRateLimitPolicy(denied.get('ratelimit-policy'))).toEqual([{ name: '3-per-60s', q: 3, w: 60 }]);
      });
    }
  });

  // 3. key, cost, skip; the default IP key; trust proxy; bad keys.
  describe('key, cost, skip', () => {
    const both = <T>(f: (r: unknown) => T): Array<[string, (r: unknown) => T | Promise<T>]> => [
      ['sync', f],
      ['async', async (r: unknown) => f(r)],
    ];

    it.each(both((r) => `user:${header(r, 'x-user')}`))('key (%s) picks the bucket', async (_kind, key) => {
      const app = await start({ app: { ...fresh(), policy: '1/1m', key }, routes: [GET('/r')] });
      expect((await hit(app, '/r', { headers: { 'x-user': 'ann' } })).status).toBe(200);
      expect((await hit(app, '/r', { headers: { 'x-user': 'bob' } })).status).toBe(200);
      expect((await hit(app, '/r', { headers: { 'x-user': 'ann' } })).status).toBe(429);
    });

    it.each(both((r) => Number(header(r, 'x-cost') ?? 1)))(
      'cost (%s) charges that many units; a denial charges none',
      async (_kind, cost) => {
        const app = await start({ app: { ...fresh(), policy: '5/1m', cost }, routes: [GET('/r')] });
        const first = await hit(app, '/r', { headers: { 'x-cost': '3' } });
        expect(first.status).toBe(200);
        expect(remainingOf(first)).toBe(2);
        expect((await hit(app, '/r', { headers: { 'x-cost': '3' } })).status).toBe(429);
        const last = await hit(app, '/r', { headers: { 'x-cost': '2' } });
        expect(last.status).toBe(200);
        expect(remainingOf(last)).toBe(0);
      },
    );

    it.each(both((r) => header(r, 'x-skip') === '1'))('skip (%s) neither counts nor limits', async (_kind, skip) => {
      const app = await start({ app: { ...fresh(), policy: '1/1m', skip }, routes: [GET('/r')] });
      for (let i = 0; i < 3; i++) expect((await hit(app, '/r', { headers: { 'x-skip': '1' } })).status).toBe(200);
      const counted = await hit(app, '/r');
      expect(counted.status).toBe(200);
      expect(remainingOf(counted)).toBe(0);
      expect((await hit(app, '/r')).status).toBe(429);
      expect((await hit(app, '/r', { headers: { 'x-skip': '1' } })).status).toBe(200);
    });

    it('default key: IPv6 clients are grouped by /56', async () => {
      const app = await start({ app: { ...fresh(), policy: '2/1m' }, routes: [GET('/r')], trustProxy: true });
      const from = (ip: string) => hit(app, '/r', { headers: { 'x-forwarded-for': ip } });
      expect(remainingOf(await from('2001:db8:aa:bb00::1'))).toBe(1);
      expect(remainingOf(await from('2001:db8:aa:bbff:ffff::2'))).toBe(0); // same /56
      expect(remainingOf(await from('2001:db8:aa:cc00::1'))).toBe(1); // another /56
      expect((await from('2001:db8:aa:bb42::9')).status).toBe(429);
    });

    it('ipv6Subnet 64 groups by /64 instead', async () => {
      const app = await start({ app: { ...fresh(), policy: '1/1m', ipv6Subnet: 64 }, routes: [GET('/r')], trustProxy: true });
      const from = (ip: string) => hit(app, '/r', { headers: { 'x-forwarded-for': ip } });
      expect((await from('2001:db8:aa:bb00::1')).status).toBe(200);
      expect((await from('2001:db8:aa:bb01::1')).status).toBe(200); // same /56, another /64
      expect((await from('2001:db8:aa:bb00:1::2')).status).toBe(429); // same /64
    });

    it('default key: an IPv4-mapped IPv6 address counts as the IPv4 address', async () => {
      const app = await start({ app: { ...fresh(), policy: '1/1m' }, routes: [GET('/r')], trustProxy: true });
      expect((await hit(app, '/r', { headers: { 'x-forwarded-for': '::ffff:198.51.100.7' } })).status).toBe(200);
      expect((await hit(app, '/r', { headers: { 'x-forwarded-for': '198.51.100.7' } })).status).toBe(429);
    });

    it('X-Forwarded-For is honoured when the proxy is trusted', async () => {
      const app = await start({ app: { ...fresh(), policy: '1/1m' }, routes: [GET('/r')], trustProxy: true });
      const from = (ip: string) => hit(app, '/r', { headers: { 'x-forwarded-for': ip } });
      expect((await from('192.0.2.1')).status).toBe(200);
      expect((await from('192.0.2.2')).status).toBe(200);
      expect((await from('192.0.2.1')).status).toBe(429);
    });

    it('X-Forwarded-For is ignored when the proxy is not trusted: spoofed values share the socket IP bucket', async () => {
      const warned = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
      try {
        const app = await start({ app: { ...fresh(), policy: '2/1m' }, routes: [GET('/r')] });
        const from = (ip: string) => hit(app, '/r', { headers: { 'x-forwarded-for': ip } });
        expect((await from('192.0.2.1')).status).toBe(200);
        expect((await from('192.0.2.2')).status).toBe(200);
        expect((await from('192.0.2.3')).status).toBe(429);
        expect((await hit(app, '/r')).status).toBe(429);
        // Said once, as test/forwarded.http.test.ts pins.
        expect(warned.mock.calls).toEqual([[expect.stringMatching(/X-Forwarded-For but the framework does not trust proxies/)]]);
      } finally {
        warned.mockRestore();
      }
    });

    it.each([
      [
        'throws',
        () => {
          throw new Error('no key');
        },
      ],
      ['rejects', async () => Promise.reject(new Error('no key'))],
      ['returns a number', () => 42],
      ['returns undefined', () => undefined],
      ['resolves to null', async () => null],
    ])('a key function that %s gives a 500, never a shared bucket', async (_kind, key) => {
      const app = await start({ app: { ...fresh(), policy: '1/1m', key }, routes: [GET('/r')] });
      for (let i = 0; i < 3; i++) expect((await hit(app, '/r')).status).toBe(500);
    });
  });

  // 4. Custom answers.
  describe('custom answers', () => {
    it('onLimited replaces the 429 answer; headers and Retry-After are already set', async () => {
      const app = await start({ app: { ...fresh(), policy: '1/1m', onLimited: customOnLimited[h.name] }, routes: [GET('/r')] });
      expect((await hit(app, '/r')).status).toBe(200);
      const denied = await hit(app, '/r');
      expect(denied.status).toBe(429);
      expect(denied.body).toEqual({ custom: true, policy: '1-per-60s' });
      expect(retryAfter(denied)).toBeGreaterThanOrEqual(1);
      expect(parseRateLimit(denied.get('ratelimit'))).toEqual([{ name: '1-per-60s', r: 0, t: retryAfter(denied) }]);
    });

    it('message string: text/plain body', async () => {
      const app = await start({ app: { ...fresh(), policy: '1/1m', message: 'Slow down' }, routes: [GET('/r')] });
      await hit(app, '/r');
      const denied = await hit(app, '/r');
      expect(denied.status).toBe(429);
      expect(denied.type).toBe('text/plain');
      expect(denied.text).toBe('Slow down');
      retryAfter(denied);
    });

    it('message object: JSON body', async () => {
      const app = await start({ app: { ...fresh(), policy: '1/1m', message: { error: 'slow', n: 1 } }, routes: [GET('/r')] });
      await hit(app, '/r');
      const denied = await hit(app, '/r');
      expect(denied.status).toBe(429);
      expect(denied.type).toBe('application/json');
      expect(denied.body).toEqual({ error: 'slow', n: 1 });
      retryAfter(denied);
    });

    it('message function (async) receives the decision', async () => {
      const message = async (decision: { policy: string; allowed: boolean }) => ({ policy: decision.policy, allowed: decision.allowed });
      const app = await start({ app: { ...fresh(), policy: '1/1m', message }, routes: [GET('/r')] });
      await hit(app, '/r');
      const denied = await hit(app, '/r');
      expect(denied.status).toBe(429);
      expect(denied.body).toEqual({ policy: '1-per-60s', allowed: false });
    });

    it('statusCode changes the status of the limited answer and of its problem body', async () => {
      const app = await start({ app: { ...fresh(), policy: '1/1m', statusCode: 503 }, routes: [GET('/r')] });
      await hit(app, '/r');
      const denied = await hit(app, '/r');
      expect(denied.status).toBe(503);
      expect((denied.body as { status?: number }).status).toBe(503);
      retryAfter(denied);
    });

    if (h.name === 'fastify') {
      it('setErrorHandler sees a 429 error and its answer carries the rate-limit headers', async () => {
        const seen: Array<{ statusCode?: number; code?: string; decision?: { allowed: boolean; policy: string } }> = [];
        const app = await start({
          app: { ...fresh(), policy: '1/1m' },
          routes: [GET('/r')],
          errorHandler: (error, _request, reply) => {
            const e = error as (typeof seen)[number];
            seen.push(e);
            return (reply as { code(n: number): { send(b: unknown): unknown } }).code(e.statusCode ?? 500).send({ handled: true });
          },
        });
        expect((await hit(app, '/r')).status).toBe(200);
        const denied = await hit(app, '/r');
        expect(seen).toHaveLength(1);
        expect(seen[0]!.statusCode).toBe(429);
        expect(seen[0]!.code).toBe('FST_SLUICE_RATE_LIMITED');
        expect(seen[0]!.decision).toEqual(expect.objectContaining({ allowed: false, policy: '1-per-60s' }));
        expect(denied.status).toBe(429);
        expect(denied.body).toEqual({ handled: true });
        const wait = retryAfter(denied);
        expect(parseRateLimitPolicy(denied.get('ratelimit-policy'))).toEqual([{ name: '1-per-60s', q: 1, w: 60 }]);
        expect(parseRateLimit(denied.get('ratelimit'))).toEqual([{ name: '1-per-60s', r: 0, t: wait }]);
      });
    }

    if (h.name === 'koa') {
      it('headers survive an error thrown by a downstream handler of an allowed request', async () => {
        const app = await start({ app: { ...fresh(), policy: '5/1m' }, routes: [{ method: 'GET', path: '/boom', throws: 500 }] });
        const res = await hit(app, '/boom');
        expect(res.status).toBe(500);
        expect(parseRateLimitPolicy(res.get('ratelimit-policy'))).toEqual([{ name: '5-per-60s', q: 5, w: 60 }]);
        expect(parseRateLimit(res.get('ratelimit'))[0]!.r).toBe(4);
        expect(res.get('retry-after')).toBeUndefined();
      });
    }
  });

  // 5. The spellings of the libraries users switch from.
  /** An app-level limit in a peer's spelling that means 2 per minute: two 2xx with q=2;w=60, then a 429. */
  const expectTwoPerMinute = async (spelling: Options) => {
    const app = await start({ app: { ...fresh(), ...spelling }, routes: [GET('/r')] });
    expect((await hit(app, '/r')).status).toBe(200);
    const second = await hit(app, '/r');
    expect(second.status).toBe(200);
    if (h.name !== 'koa') {
      // A peer's spelling answers with its headers: X-RateLimit-* by default (test/dropin.*.test.ts).
      expect([second.get('x-ratelimit-limit'), second.get('x-ratelimit-remaining')]).toEqual(['2', '0']);
    } else {
      expect(parseRateLimitPolicy(second.get('ratelimit-policy'))).toEqual([{ name: expect.any(String), q: 2, w: 60 }]);
    }
    expect((await hit(app, '/r')).status).toBe(429);
  };
  if (h.name === 'express') {
    describe('express-rate-limit spellings', () => {
      it.each([
        ['windowMs + limit', { windowMs: 60_000, limit: 2 }],
        ['windowMs + max', { windowMs: 60_000, max: 2 }],
      ])('%s', async (_name, spelling) => {
        await expectTwoPerMinute(spelling);
      });

      it.each([
        ['sync', (req: unknown) => String(header(req, 'x-user'))],
        ['async', async (req: unknown) => String(header(req, 'x-user'))],
      ])('keyGenerator (%s)', async (_kind, keyGenerator) => {
        const app = await start({ app: { ...fresh(), policy: '1/1m', keyGenerator }, routes: [GET('/r')] });
        expect((await hit(app, '/r', { headers: { 'x-user': 'ann' } })).status).toBe(200);
        expect((await hit(app, '/r', { headers: { 'x-user': 'bob' } })).status).toBe(200);
        expect((await hit(app, '/r', { headers: { 'x-user': 'ann' } })).status).toBe(429);
      });
    });
  }

  if (h.name === 'fastify') {
    describe('@fastify/rate-limit spellings', () => {
      it.each([
        ['timeWindow in ms', { max: 2, timeWindow: 60_000 }],
        ["timeWindow '1 minute'", { max: 2, timeWindow: '1 minute' }],
        ["timeWindow '1m'", { max: 2, timeWindow: '1m' }],
      ])('max + %s', async (_name, spelling) => {
        await expectTwoPerMinute(spelling);
      });

      it('max + timeWindow in a route config', async () => {
        const app = await start({ app: { ...fresh(), policy: '100/1m' }, routes: [GET('/r', { max: 1, timeWindow: '1 minute' })] });
        expect((await hit(app, '/r')).status).toBe(200);
        expect((await hit(app, '/r')).status).toBe(429);
      });
    });
  }

  // 6. Bad options throw at creation, naming the option.
  describe('bad options', () => {
    it.each([
      ['policy limit -1', { policy: { limit: -1, window: '1m' } }, /limit/],
      ['policy string garbage', { policy: 'lots' }, /policy/],
      ['no policy', {}, /policy/],
      ["headers 'nope'", { policy: '1/1m', headers: 'nope' }, /headers/],
      ["failMode 'sometimes'", { policy: '1/1m', failMode: 'sometimes' }, /failMode/],
      ['ipv6Subnet 200', { policy: '1/1m', ipv6Subnet: 200 }, /ipv6Subnet/],
      ['statusCode 42', { policy: '1/1m', statusCode: 42 }, /statusCode/],
      ['key not a function', { policy: '1/1m', key: 'ip' }, /key/],
      ['scope not a string', { policy: '1/1m', scope: 7 }, /scope/],
    ])('%s', async (_name, options, pattern) => {
      const error = await h.create({ ...fresh(), ...options }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(Error);
      expect((error as Error).message).toMatch(pattern);
      expect((error as { code?: string }).code).toBe('ERR_SLUICE_OPTION');
    });

    it('a bad route-level option fails at startup, not at request time', async () => {
      const error = await h
        .start({ app: { ...fresh(), policy: '5/1m' }, routes: [GET('/r', { ...fresh(), policy: '1/1m', headers: 'nope' })] })
        .then(
          (running) => {
            open.push(running);
            return undefined;
          },
          (e: unknown) => e,
        );
      expect(error).toBeInstanceOf(Error);
      expect((error as Error).message).toMatch(/headers/);
    });
  });
});

// The parser the assertions rely on: strict, so a malformed header fails a test rather than passing by accident.
describe('Express routers', () => {
  it('a route-level limit counts per mount: the same router under two paths counts apart', async () => {
    const router = express.Router();
    router.get('/x', sluiceExpress.rateLimit({ ...fresh(), policy: '1/1m' }), (req, res) => {
      res.json({ remaining: req.rateLimit?.remaining });
    });
    const app = express();
    app.use('/one', router);
    app.use('/two', router);
    const statuses = [];
    for (const path of ['/one/x', '/two/x', '/one/x', '/two/x']) statuses.push((await request(app).get(path)).status);
    expect(statuses).toEqual([200, 200, 429, 429]);
  });
});

describe('draft-10 structured-field list parser', () => {
  it('parses policies and limits, with several members', () => {
    expect(parseRateLimitPolicy('"100-per-60s";q=100;w=60, "burst";q=5;w=1')).toEqual([
      { name: '100-per-60s', q: 100, w: 60 },
      { name: 'burst', q: 5, w: 1 },
    ]);
    expect(parseRateLimit('"100-per-60s";r=42;t=18')).toEqual([{ name: '100-per-60s', r: 42, t: 18 }]);
    expect(parseSfList('a;x, "q\\"s";b=?1;c=1.5')).toEqual([
      { value: { token: 'a' }, params: { x: true } },
      { value: 'q"s', params: { b: true, c: 1.5 } },
    ]);
  });

  it.each([
    ['"unterminated;q=1;w=1'],
    ['"a";q=1;w=1,'],
    ['"a";q=1.5;w=1'],
    ['"a";q=1'],
    ['a;q=1;w=1'],
    ['"a";Q=1;w=1'],
    ['"a" "b";q=1;w=1'],
  ])('rejects %p', (raw) => {
    expect(() => parseRateLimitPolicy(raw)).toThrow();
  });
});
