// Under @fastify/rate-limit's spelling, @sluice/fastify behaves as @fastify/rate-limit does.
// Differential: each configuration runs on two real Fastify servers, one with the real @fastify/rate-limit
// and one with sluice in its place (memory stores), the same request sequence goes to both, and every answer
// is compared: status, headers (names and values; reset seconds within 1 s), content type and body. The
// count of comparisons is printed.
import peerPlugin from '@fastify/rate-limit';
import { redisStore } from '@sluice/core';
import sluicePlugin from '@sluice/fastify';
import Fastify, { type FastifyRequest } from 'fastify';
import { compareSteps, type Step } from './support/peer-diff';
import { uniquePrefix } from './support/redis';
import { type RedisWithClient, startRedisWithClient, stopRedisWithClient } from './support/redis-client';

type Options = Record<string, unknown>;

let comparisons = 0;
afterAll(() => {
  console.log(`dropin.fastify: ${comparisons} comparisons`);
});

const HEADERS = [
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'ratelimit-limit',
  'ratelimit-remaining',
  'ratelimit-reset',
  'retry-after',
  'content-type',
];
const TIMED = new Set(['x-ratelimit-reset', 'ratelimit-reset', 'retry-after']);

interface Case {
  name: string;
  options: () => Options;
  /** A route's own config.rateLimit on /own. */
  own?: () => Options;
  errorHandler?: boolean;
  steps: Step[];
}

async function start(plugin: unknown, c: Case, more: Options = {}): Promise<{ url: string; close: () => Promise<void> }> {
  const app = Fastify();
  if (c.errorHandler) {
    app.setErrorHandler((error: { statusCode?: number; message?: string }, _request, reply) => {
      void reply.code(error.statusCode ?? 500).send({ handled: true, message: error.message });
    });
  }
  await app.register(plugin as never, { ...c.options(), ...more } as never);
  app.get('/a', async () => ({ ok: 'a' }));
  app.get('/b', async () => ({ ok: 'b' }));
  app.get('/own', { config: { rateLimit: (c.own?.() ?? { max: 1 }) as never } }, async () => ({ ok: 'own' }));
  app.get('/off', { config: { rateLimit: false } }, async () => ({ ok: 'off' }));
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  return { url, close: () => app.close() };
}

const n = (count: number, step: Step = {}): Step[] => Array.from({ length: count }, () => step);
const byUser = { keyGenerator: (request: FastifyRequest) => String(request.headers['x-user'] ?? 'anon') };

const CASES: Case[] = [
  { name: 'max and timeWindow (ms)', options: () => ({ max: 3, timeWindow: 60_000 }), steps: n(5) },
  { name: "timeWindow '1 minute'", options: () => ({ max: 2, timeWindow: '1 minute' }), steps: n(4) },
  { name: 'the defaults: max 1000, 1 minute', options: () => ({ keyGenerator: () => 'k' }), steps: n(3) },
  {
    name: 'one counter per client across the plugin routes',
    options: () => ({ max: 3, timeWindow: 60_000 }),
    steps: [{ path: '/a' }, { path: '/b' }, { path: '/a' }, { path: '/b' }, { path: '/off' }],
  },
  {
    name: 'a route with its own config counts on its own',
    options: () => ({ max: 2, timeWindow: 60_000 }),
    own: () => ({ max: 1 }),
    steps: [{ path: '/a' }, { path: '/own' }, { path: '/own' }, { path: '/a' }, { path: '/a' }],
  },
  {
    name: 'max as a function (request, key)',
    options: () => ({ max: (_r: unknown, key: string) => (key === 'pro' ? 3 : 1), timeWindow: 60_000, ...byUser }),
    steps: [...n(2, { user: 'free' }), ...n(4, { user: 'pro' })],
  },
  {
    name: "a max function's limits count in one counter per client, each request held to its own max",
    options: () => ({ max: (request: FastifyRequest) => (request.headers['x-user'] === 'pro' ? 3 : 1), timeWindow: 60_000 }),
    steps: [{ user: 'free' }, { user: 'pro' }, { user: 'pro' }, { user: 'pro' }, { user: 'free' }],
  },
  { name: 'max as an async function', options: () => ({ max: async () => 2, timeWindow: 60_000 }), steps: n(3) },
  {
    name: 'keyGenerator',
    options: () => ({ max: 1, timeWindow: 60_000, ...byUser }),
    steps: [{ user: 'a' }, { user: 'b' }, { user: 'a' }, { user: 'b' }],
  },
  {
    name: 'allowList as an array of keys',
    options: () => ({ max: 1, timeWindow: 60_000, allowList: ['vip'], ...byUser }),
    steps: [...n(3, { user: 'vip' }), ...n(2, { user: 'x' })],
  },
  {
    name: 'allowList as a function (request, key)',
    options: () => ({ max: 1, timeWindow: 60_000, allowList: async (_r: unknown, key: string) => key.startsWith('v'), ...byUser }),
    steps: [...n(3, { user: 'vip' }), ...n(2, { user: 'x' })],
  },
  { name: 'ban: 403 after the refusals it allows', options: () => ({ max: 1, timeWindow: 60_000, ban: 2 }), steps: n(6) },
  { name: 'ban 0', options: () => ({ max: 2, timeWindow: 60_000, ban: 0 }), steps: n(4) },
  {
    name: 'errorResponseBuilder(request, context)',
    options: () => ({
      max: 1,
      timeWindow: 60_000,
      errorResponseBuilder: (_r: unknown, context: { statusCode: number; max: number; after: string; ban: boolean }) => ({
        statusCode: context.statusCode,
        error: 'slow down',
        message: `max ${context.max}, retry in ${context.after}, ban ${context.ban}`,
      }),
    }),
    steps: n(3),
  },
  {
    name: 'the default error through an app error handler',
    options: () => ({ max: 1, timeWindow: 90_000 }),
    errorHandler: true,
    steps: n(3),
  },
  {
    name: 'addHeaders and addHeadersOnExceeding off, one by one',
    options: () => ({
      max: 2,
      timeWindow: 60_000,
      addHeaders: { 'x-ratelimit-limit': false, 'retry-after': false },
      addHeadersOnExceeding: { 'x-ratelimit-reset': false },
    }),
    steps: n(4),
  },
  { name: 'enableDraftSpec', options: () => ({ max: 1, timeWindow: '30 seconds', enableDraftSpec: true }), steps: n(3) },
  { name: 'a window of hours', options: () => ({ max: 1, timeWindow: '2 hours' }), steps: n(2) },
  {
    name: 'a short window opens again at the first hit after it ends',
    options: () => ({ max: 1, timeWindow: 2000 }),
    steps: [{}, {}, { path: 'wait' }, {}, {}],
  },
];

/** Runs `c` on @fastify/rate-limit with `peerMore` and on sluice with `oursMore`, comparing every answer. */
async function compare(c: Case, peerMore: Options = {}, oursMore: Options = {}): Promise<void> {
  const peer = await start(peerPlugin, c, peerMore);
  const ours = await start(sluicePlugin, c, oursMore);
  try {
    comparisons += await compareSteps(
      c.name,
      c.steps,
      { peer: peer.url, ours: ours.url },
      {
        headers: HEADERS,
        timed: TIMED,
        pathOf: (step) => step.path ?? '/a',
      },
    );
  } finally {
    await Promise.all([peer.close(), ours.close()]);
  }
}

describe('@fastify/rate-limit and @sluice/fastify answer alike (differential, memory stores)', () => {
  it.each(CASES.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    await compare(c);
  });
});

describe('@fastify/rate-limit with redis and @sluice/fastify with redisStore answer alike (differential, Redis)', () => {
  let redis: RedisWithClient;
  beforeAll(async () => {
    redis = await startRedisWithClient();
  });
  afterAll(() => stopRedisWithClient(redis));

  it.each(CASES.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const prefix = uniquePrefix();
    // A wide store timeout (sluice's own, default 50 ms): on a loaded box a call past it would be decided by the
    // fail mode, which @fastify/rate-limit, with no timeout, never does.
    await compare(
      c,
      { redis: redis.client, nameSpace: `${prefix}:peer:` },
      { store: redisStore({ client: redis.client }), prefix, timeout: 5000 },
    );
  });
});

describe("@fastify/rate-limit's options sluice cannot honour are refused by name, naming ours", () => {
  it.each([
    ['redis', { max: 5, redis: {} }, /^redis .*redisStore\(\{ client \}\)/],
    ['nameSpace', { max: 5, nameSpace: 'x-' }, /^nameSpace .*prefix/],
    ['groupId', { max: 5, groupId: 'g' }, /^groupId .*scope/],
    ['continueExceeding', { max: 5, continueExceeding: true }, /^continueExceeding /],
    ['exponentialBackoff', { max: 5, exponentialBackoff: true }, /^exponentialBackoff .*several policies/],
    ['allowList beside a policy of ours', { policy: '5/1m', allowList: ['a'] }, /^allowList .*max and timeWindow/],
  ])('%s', async (_name, options, message) => {
    const app = Fastify();
    await expect(app.register(sluicePlugin, options as never).ready()).rejects.toMatchObject({
      code: 'ERR_SLUICE_OPTION',
      message: expect.stringMatching(message),
    });
    await app.close();
  });
});
