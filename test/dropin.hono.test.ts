// Under hono-rate-limiter's spelling, @sluice/hono behaves as hono-rate-limiter does. Differential: each
// configuration runs on two real servers (@hono/node-server), one with the real hono-rate-limiter and one with
// sluice in its place, the same request sequence goes to both, and every answer is compared: status, the
// rate-limit headers (names and values; reset seconds within 1 s), content type and body, which carries
// what the handler read from c.var. In memory, then on Redis (@hono-rate-limiter/redis beside redisStore).
import type { AddressInfo } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import { getConnInfo } from '@hono/node-server/conninfo';
import { RedisStore } from '@hono-rate-limiter/redis';
import { redisStore } from '@sluice/core';
import { rateLimit as sluice } from '@sluice/hono';
import { type Context, Hono, type MiddlewareHandler } from 'hono';
import { rateLimiter } from 'hono-rate-limiter';
import type Redis from 'ioredis';
import { compareSteps, type Step } from './support/peer-diff';
import { uniquePrefix } from './support/redis';
import { type RedisWithClient, startRedisWithClient, stopRedisWithClient } from './support/redis-client';

type Options = Record<string, unknown>;

let comparisons = 0;
afterAll(() => {
  console.log(`dropin.hono: ${comparisons} comparisons`);
});

const HEADERS = [
  'ratelimit-policy',
  'ratelimit',
  'ratelimit-limit',
  'ratelimit-remaining',
  'ratelimit-reset',
  'retry-after',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'content-type',
];
// Seconds that depend on when the request came: compared within 1 s.
const TIMED = new Set(['ratelimit-reset', 'retry-after']);

const servers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((close) => close()));
});

/** An app behind `middleware`: /ok answers what c.var[property] says, /fail answers 500. */
async function start(middleware: MiddlewareHandler, property: string): Promise<string> {
  const app = new Hono();
  app.use(middleware);
  app.get('/ok', (c) => {
    const info = c.get(property as never) as { limit?: number; remaining?: number } | undefined;
    return c.json({ ok: true, limit: info?.limit ?? null, remaining: info?.remaining ?? null });
  });
  app.get('/fail', (c) => c.text('failed', 500));
  const server = createAdaptorServer({ fetch: app.fetch });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(() => new Promise((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

interface Case {
  name: string;
  options: () => Options;
  steps: Step[];
  /** A refund lands after the response (both libraries refund once it is done): wait for it between requests. */
  refunds?: boolean;
}

const times = (n: number, step: Step = {}): Step[] => Array.from({ length: n }, () => step);
const byUser = { keyGenerator: (c: Context) => c.req.header('x-user') ?? 'anon' };

const CASES: Case[] = [
  {
    name: 'windowMs and limit, the defaults (draft-6 headers, text message)',
    options: () => ({ windowMs: 60_000, limit: 3 }),
    steps: times(5),
  },
  { name: 'limit alone: the default window of a minute', options: () => ({ limit: 2 }), steps: times(3) },
  { name: 'keyGenerator alone: the default limit of 5', options: () => ({ ...byUser }), steps: times(7) },
  { name: "standardHeaders 'draft-7'", options: () => ({ windowMs: 90_000, limit: 2, standardHeaders: 'draft-7' }), steps: times(3) },
  { name: "standardHeaders true ('draft-6')", options: () => ({ windowMs: 60_000, limit: 2, standardHeaders: true }), steps: times(3) },
  {
    name: 'standardHeaders false: no headers, no Retry-After either',
    options: () => ({ windowMs: 60_000, limit: 1, standardHeaders: false }),
    steps: times(3),
  },
  { name: 'message as a string', options: () => ({ windowMs: 60_000, limit: 1, message: 'slow down' }), steps: times(2) },
  {
    name: 'message as an object',
    options: () => ({ windowMs: 60_000, limit: 1, message: { error: 'slow down', code: 7 } }),
    steps: times(2),
  },
  {
    name: 'message as an async function of the context',
    options: () => ({ windowMs: 60_000, limit: 1, message: async (c: Context) => `${c.req.path} limited` }),
    steps: times(2),
  },
  { name: 'statusCode', options: () => ({ windowMs: 60_000, limit: 1, statusCode: 503 }), steps: times(3) },
  {
    name: 'handler(c, next, options)',
    options: () => ({
      windowMs: 60_000,
      limit: 1,
      handler: (c: Context, _next: unknown, options: { statusCode: number; message: unknown; limit: unknown }) =>
        c.json({ limited: true, message: options.message, limit: options.limit }, options.statusCode as 429),
    }),
    steps: times(3),
  },
  {
    name: 'limit as a function of the context',
    options: () => ({ windowMs: 60_000, limit: (c: Context) => (c.req.header('x-user') === 'pro' ? 3 : 1), ...byUser }),
    steps: [...times(3, { user: 'free' }), ...times(4, { user: 'pro' })],
  },
  {
    name: "a limit function's limits count in one counter per client, each request held to its own limit",
    options: () => ({ windowMs: 60_000, limit: (c: Context) => (c.req.header('x-user') === 'pro' ? 3 : 1) }),
    steps: [{ user: 'free' }, { user: 'pro' }, { user: 'pro' }, { user: 'pro' }, { user: 'free' }],
  },
  { name: 'limit as an async function', options: () => ({ windowMs: 60_000, limit: async () => 2 }), steps: times(3) },
  {
    name: 'keyGenerator: a counter per user',
    options: () => ({ windowMs: 60_000, limit: 1, ...byUser }),
    steps: [{ user: 'a' }, { user: 'b' }, { user: 'a' }, { user: 'b' }],
  },
  {
    name: 'skip(c)',
    options: () => ({ windowMs: 60_000, limit: 1, skip: (c: Context) => c.req.header('x-user') === 'admin' }),
    steps: [{}, { user: 'admin' }, { user: 'admin' }, {}],
  },
  {
    name: 'requestPropertyName: the handler reads c.var under that name',
    options: () => ({ windowMs: 60_000, limit: 2, requestPropertyName: 'limits' }),
    steps: times(3),
  },
  {
    name: 'skipFailedRequests',
    refunds: true,
    options: () => ({ windowMs: 60_000, limit: 2, skipFailedRequests: true }),
    steps: [{ fail: true }, { fail: true }, {}, {}, {}],
  },
  {
    name: 'skipSuccessfulRequests',
    refunds: true,
    options: () => ({ windowMs: 60_000, limit: 2, skipSuccessfulRequests: true }),
    steps: [{}, {}, { fail: true }, { fail: true }, { fail: true }, {}],
  },
  {
    name: 'requestWasSuccessful(c) with skipFailedRequests',
    refunds: true,
    options: () => ({ windowMs: 60_000, limit: 2, skipFailedRequests: true, requestWasSuccessful: (c: Context) => c.res.status < 300 }),
    steps: [{ fail: true }, {}, { fail: true }, {}, {}],
  },
  {
    name: 'a short window opens again at the first hit after it ends',
    options: () => ({ windowMs: 2_000, limit: 1, standardHeaders: 'draft-7' }),
    steps: [{}, {}, { path: 'wait' }, {}, {}],
  },
];

/** Runs `c` on hono-rate-limiter with `peerMore` and on sluice with `oursMore`, comparing every answer. */
async function compare(c: Case, peerMore: Options = {}, oursMore: Options = {}): Promise<void> {
  const options = c.options();
  const property = (options.requestPropertyName as string | undefined) ?? 'rateLimit';
  // hono-rate-limiter has no default key: the client's address, as sluice's default.
  const address = { keyGenerator: (ctx: Context) => getConnInfo(ctx).remote.address ?? '' };
  const peer = await start(rateLimiter({ ...address, ...options, ...peerMore } as never), property);
  const ours = await start(sluice({ ...options, ...oursMore } as never), property);
  comparisons += await compareSteps(
    c.name,
    c.steps,
    { peer, ours },
    {
      headers: HEADERS,
      timed: TIMED,
      pathOf: (step) => (step.fail ? '/fail' : (step.path ?? '/ok')),
      // Wide: a loaded 2-core box may take a while to run a refund's store call.
      between: c.refunds ? () => new Promise((r) => setTimeout(r, 300)) : undefined,
    },
  );
}

describe('hono-rate-limiter and @sluice/hono answer alike (differential, memory stores)', () => {
  it.each(CASES.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    await compare(c);
  });
});

describe('hono-rate-limiter with @hono-rate-limiter/redis and @sluice/hono with redisStore answer alike (differential, Redis)', () => {
  let redis: RedisWithClient;
  let client: Redis;
  beforeAll(async () => {
    redis = await startRedisWithClient();
    client = redis.client;
  });
  afterAll(() => stopRedisWithClient(redis));

  it.each(CASES.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const prefix = uniquePrefix();
    // @hono-rate-limiter/redis speaks to an @upstash/redis-shaped client: ioredis's commands under those names.
    const peerStore = new RedisStore({
      prefix: `${prefix}:hrl:`,
      client: {
        scriptLoad: (script: string) => client.script('LOAD', script) as Promise<string>,
        evalsha: (sha: string, keys: string[], args: unknown[]) => client.evalsha(sha, keys.length, ...keys, ...(args as string[])),
        decr: (key: string) => client.decr(key),
        del: (key: string) => client.del(key),
      } as never,
    });
    // A wide store timeout (sluice's own, default 50 ms): on a loaded box a call past it would be decided by the
    // fail mode, which hono-rate-limiter, with no timeout, never does.
    await compare(c, { store: peerStore }, { store: redisStore({ client }), prefix, timeout: 5000 });
  });
});

describe("hono-rate-limiter's options sluice cannot honour are refused by name, naming ours", () => {
  it.each<[string, Options, RegExp]>([
    [
      "hono-rate-limiter's RedisStore",
      { windowMs: 60_000, limit: 5, store: { increment: () => ({ totalHits: 1 }) } },
      /^store .*redisStore\(\{ client \}\)/,
    ],
    [
      'requestStorePropertyName',
      { windowMs: 60_000, limit: 5, requestStorePropertyName: 'store' },
      /^requestStorePropertyName .*limiter\.reset\(key\)/,
    ],
    ['a Cloudflare binding', { binding: {}, keyGenerator: () => 'k' }, /^binding .*memoryStore\(\)/],
    ['headers beside windowMs', { windowMs: 60_000, limit: 5, headers: 'draft' }, /^headers .*standardHeaders/],
    [
      'onLimited beside windowMs',
      { windowMs: 60_000, limit: 5, onLimited: () => new Response() },
      /^onLimited .*handler\(c, next, options\)/,
    ],
    [
      'windowMs beside a policy of ours',
      { policy: '5/1m', windowMs: 60_000 },
      /^windowMs must be absent beside policy or limiter .*: use policy/,
    ],
    ['handler beside a policy of ours', { policy: '5/1m', handler: () => undefined }, /^handler .*onLimited\(c, decision\)/],
    ['keyGenerator beside a policy of ours', { policy: '5/1m', keyGenerator: () => 'k' }, /^keyGenerator .*key\(c\)/],
    ['limit as a string', { windowMs: 60_000, limit: '5' }, /^limit must be a positive integer/],
    [
      "standardHeaders 'draft-8'",
      { windowMs: 60_000, limit: 5, standardHeaders: 'draft-8' },
      /^standardHeaders must be a boolean, 'draft-6' or 'draft-7'/,
    ],
  ])('%s', (_name, options, message) => {
    expect(() => sluice(options as never)).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_OPTION', message: expect.stringMatching(message) }),
    );
  });
});
