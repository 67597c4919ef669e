// Under express-rate-limit's spelling (7 and 8), @sluice/express behaves as express-rate-limit does.
// Differential: each configuration runs on two real servers, one with the real express-rate-limit and one
// with sluice in its place (memory stores), the same request sequence goes to both, and every answer is
// compared: status, the rate-limit headers (names and values; reset seconds within 1 s), content type
// and body. The count of comparisons is printed.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { redisStore } from '@sluice/core';
import { rateLimit as sluice } from '@sluice/express';
import express from 'express';
import { rateLimit as erl } from 'express-rate-limit';
import { rateLimit as erl8 } from 'express-rate-limit8';
import type Redis from 'ioredis';
import { RedisStore } from 'rate-limit-redis';
import { compareSteps, type Step } from './support/peer-diff';
import { uniquePrefix } from './support/redis';
import { type RedisWithClient, startRedisWithClient, stopRedisWithClient } from './support/redis-client';

type Options = Record<string, unknown>;

let comparisons = 0;
afterAll(() => {
  console.log(`dropin.express: ${comparisons} comparisons`);
});

const HEADERS = [
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'ratelimit-policy',
  'ratelimit',
  'ratelimit-limit',
  'ratelimit-remaining',
  'ratelimit-reset',
  'retry-after',
  'content-type',
];
// Seconds that depend on when the request came: compared within 1 s.
const TIMED = new Set(['x-ratelimit-reset', 'ratelimit-reset', 'retry-after']);

async function start(middleware: express.RequestHandler): Promise<{ url: string; server: Server }> {
  const app = express();
  app.use(middleware);
  app.get('/ok', (_req, res) => {
    res.json({ ok: true });
  });
  app.get('/fail', (_req, res) => {
    res.status(500).send('failed');
  });
  const server = createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

interface Case {
  name: string;
  options: () => Options;
  steps: Step[];
  /** A refund lands after the response (both libraries refund once it is done): wait for it between requests. */
  refunds?: boolean;
}

const five = (n: number, step: Step = {}): Step[] => Array.from({ length: n }, () => step);
const byUser = { keyGenerator: (req: express.Request) => String(req.headers['x-user'] ?? 'anon') };

const CASES: Case[] = [
  {
    name: 'windowMs and limit, the defaults (legacy headers, text message)',
    options: () => ({ windowMs: 60_000, limit: 3 }),
    steps: five(5),
  },
  { name: 'max instead of limit', options: () => ({ windowMs: 60_000, max: 2 }), steps: five(4) },
  { name: 'windowMs alone: the default limit of 5', options: () => ({ windowMs: 30_000 }), steps: five(7) },
  {
    name: 'standardHeaders true (draft-6), legacyHeaders false',
    options: () => ({ windowMs: 60_000, limit: 2, standardHeaders: true, legacyHeaders: false }),
    steps: five(3),
  },
  {
    name: "standardHeaders 'draft-6' with legacy",
    options: () => ({ windowMs: 60_000, limit: 2, standardHeaders: 'draft-6' }),
    steps: five(3),
  },
  {
    name: "standardHeaders 'draft-7'",
    options: () => ({ windowMs: 90_000, limit: 2, standardHeaders: 'draft-7', legacyHeaders: false }),
    steps: five(3),
  },
  {
    name: "standardHeaders 'draft-8' (named policy, pk)",
    options: () => ({ windowMs: 3_600_000, limit: 2, standardHeaders: 'draft-8', legacyHeaders: false }),
    steps: five(3),
  },
  {
    name: "'draft-8' with an identifier",
    options: () => ({ windowMs: 20_000, limit: 1, standardHeaders: 'draft-8', identifier: 'login' }),
    steps: five(2),
  },
  {
    name: 'no headers at all (no Retry-After either)',
    options: () => ({ windowMs: 60_000, limit: 1, legacyHeaders: false }),
    steps: five(3),
  },
  { name: 'message as a string', options: () => ({ windowMs: 60_000, limit: 1, message: 'slow down' }), steps: five(2) },
  {
    name: 'message as an object',
    options: () => ({ windowMs: 60_000, limit: 1, message: { error: 'slow down', code: 7 } }),
    steps: five(2),
  },
  {
    name: 'message as a function of (req, res), async',
    options: () => ({
      windowMs: 60_000,
      limit: 1,
      message: async (req: express.Request, res: express.Response) => `${req.path} ${res.statusCode}`,
    }),
    steps: five(2),
  },
  { name: 'statusCode', options: () => ({ windowMs: 60_000, limit: 1, statusCode: 503 }), steps: five(3) },
  {
    name: 'handler(req, res, next, options)',
    options: () => ({
      windowMs: 60_000,
      limit: 1,
      handler: (
        _req: express.Request,
        res: express.Response,
        _next: unknown,
        options: { statusCode: number; message: unknown; limit: unknown },
      ) => {
        res.status(options.statusCode).json({ limited: true, message: options.message, limit: options.limit });
      },
    }),
    steps: five(3),
  },
  {
    name: 'limit as a function of (req, res)',
    options: () => ({ windowMs: 60_000, limit: (req: express.Request) => (req.headers['x-user'] === 'pro' ? 3 : 1), ...byUser }),
    steps: [...five(3, { user: 'free' }), ...five(4, { user: 'pro' })],
  },
  {
    name: "a limit function's limits count in one counter per client, each request held to its own limit",
    options: () => ({ windowMs: 60_000, limit: (req: express.Request) => (req.get('x-user') === 'pro' ? 3 : 1) }),
    steps: [{ user: 'free' }, { user: 'pro' }, { user: 'pro' }, { user: 'pro' }, { user: 'free' }],
  },
  {
    name: 'limit as an async function',
    options: () => ({ windowMs: 60_000, limit: async () => 2 }),
    steps: five(3),
  },
  {
    name: 'keyGenerator: a counter per user',
    options: () => ({ windowMs: 60_000, limit: 1, ...byUser }),
    steps: [{ user: 'a' }, { user: 'b' }, { user: 'a' }, { user: 'b' }],
  },
  {
    name: 'skip(req, res)',
    options: () => ({ windowMs: 60_000, limit: 1, skip: (req: express.Request) => req.headers['x-user'] === 'admin' }),
    steps: [{}, { user: 'admin' }, { user: 'admin' }, {}],
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
    name: 'requestWasSuccessful(req, res) with skipFailedRequests',
    refunds: true,
    options: () => ({
      windowMs: 60_000,
      limit: 2,
      skipFailedRequests: true,
      requestWasSuccessful: (_req: unknown, res: express.Response) => res.statusCode < 300,
    }),
    steps: [{ fail: true }, {}, { fail: true }, {}, {}],
  },
  {
    name: 'a short window opens again at the first hit after it ends',
    options: () => ({ windowMs: 2_000, limit: 1, standardHeaders: 'draft-7' }),
    steps: [{}, {}, { path: 'wait' }, {}, {}],
  },
];

/** Runs `c` on express-rate-limit with `peerMore` and on sluice with `oursMore`, comparing every answer. */
async function compare(c: Case, peerMore: Options = {}, oursMore: Options = {}, library: typeof erl = erl): Promise<void> {
  const peer = await start(library({ ...c.options(), validate: false, ...peerMore } as never));
  const ours = await start(sluice({ ...c.options(), ...oursMore } as never));
  try {
    comparisons += await compareSteps(
      c.name,
      c.steps,
      { peer: peer.url, ours: ours.url },
      {
        headers: HEADERS,
        timed: TIMED,
        pathOf: (step) => (step.fail ? '/fail' : (step.path ?? '/ok')),
        // Wide: a loaded 2-core box may take a while to run a refund's store call.
        between: c.refunds ? () => new Promise((r) => setTimeout(r, 300)) : undefined,
      },
    );
  } finally {
    peer.server.close();
    ours.server.close();
  }
}

describe('express-rate-limit and @sluice/express answer alike (differential, memory stores)', () => {
  it.each(CASES.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    await compare(c);
  });
});

describe('express-rate-limit 8 and @sluice/express answer alike (differential, memory stores)', () => {
  it.each(CASES.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    await compare(c, {}, {}, erl8 as unknown as typeof erl);
  });
});

describe('express-rate-limit with rate-limit-redis and @sluice/express with redisStore answer alike (differential, Redis)', () => {
  let redis: RedisWithClient;
  let client: Redis;
  beforeAll(async () => {
    redis = await startRedisWithClient();
    client = redis.client;
  });
  afterAll(() => stopRedisWithClient(redis));

  it.each(CASES.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const prefix = uniquePrefix();
    const peerStore = new RedisStore({
      prefix: `${prefix}:erl:`,
      sendCommand: (command: string, ...args: string[]) => client.call(command, ...args) as never,
    });
    // A wide store timeout (sluice's own, default 50 ms): on a loaded box a call past it would be decided by the
    // fail mode, which express-rate-limit, with no timeout, never does.
    await compare(c, { store: peerStore }, { store: redisStore({ client }), prefix, timeout: 5000 });
  });
});

describe("express-rate-limit's options sluice cannot honour are refused by name, naming ours", () => {
  const refused = (options: Options) => {
    try {
      sluice(options as never);
    } catch (error) {
      return error as { code?: string; message: string };
    }
    throw new Error('not refused');
  };
  it.each([
    [
      'a rate-limit-redis store',
      () => ({ windowMs: 60_000, limit: 5, store: new RedisStore({ sendCommand: async () => 'f'.repeat(40) }) }),
      /^store .*redisStore\(\{ client \}\)/,
    ],
    ['requestPropertyName', () => ({ windowMs: 60_000, limit: 5, requestPropertyName: 'limits' }), /^requestPropertyName .*req\.rateLimit/],
    ['retryAfter (8)', () => ({ windowMs: 60_000, limit: 5, retryAfter: 10 }), /^retryAfter .*Retry-After/],
    ['identifier as a function', () => ({ windowMs: 60_000, limit: 5, identifier: () => 'x' }), /^identifier .*a string/],
    ['handler beside a policy of ours', () => ({ policy: '5/1m', handler: () => undefined }), /^handler .*onLimited/],
    [
      'passOnStoreError beside a policy of ours',
      () => ({ policy: '5/1m', passOnStoreError: true }),
      /^passOnStoreError .*failMode: 'open'/,
    ],
  ])('%s', (_name, options, message) => {
    const error = refused(options());
    expect(error.code).toBe('ERR_SLUICE_OPTION');
    expect(error.message).toMatch(message);
  });
});
