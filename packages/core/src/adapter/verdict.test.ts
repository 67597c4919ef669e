import { createLimiter } from '../limiter.js';
import { memoryStore } from '../store/memory-store.js';
import { stackHeaders } from './headers.js';
import { mergeHttpOptions } from './merge.js';
import { httpLimit } from './verdict.js';

type Req = { id?: unknown; ip?: string };
const ipOf = (req: Req) => () => req.ip;

describe('httpLimit options', () => {
  it.each([
    [
      { policy: '3/1m', headers: 'nope' },
      /headers must be 'draft', 'legacy', 'both', 'draft-6', 'draft-7', 'draft-8' or false, got "nope"/,
    ],
    [{ policy: '3/1m', statusCode: 200 }, /statusCode must be an integer from 400 to 599/],
    [{ policy: '3/1m', ipv6Subnet: 0 }, /ipv6Subnet/],
    [{ policy: '3/1m', scope: '' }, /scope must be a non-empty string/],
    [{ policy: '3/1m', key: 'ip' }, /key must be a function/],
    [{}, /policy must be given/],
    [{ policy: '3/1m', bogus: 1 }, /bogus must be absent/],
    // A rival's name is an option only where a translator brings it (translator.test.ts).
    [{ windowMs: 1000, limit: 3 }, /windowMs must be absent/],
    [{ limiter: createLimiter({ policy: '1/1m' }), policy: '3/1m' }, /policy must be absent when limiter is given/],
    [{ policy: { limit: -1, window: '1m' } }, /policy.limit must be a positive integer, got -1/],
  ])('%j throws naming the option', (options, message) => {
    expect(() => httpLimit(options as never)).toThrow(message);
  });
});

describe('httpLimit.check', () => {
  it('counts per route by default, shares a counter by scope, and keys by IP', async () => {
    const store = memoryStore();
    const a = httpLimit<Req>({ policy: '1/1m', store });
    const b = httpLimit<Req>({ policy: '1/1m', store, scope: 'shared' });
    const c = httpLimit<Req>({ policy: '1/1m', store, scope: 'shared' });
    const req = { ip: '10.0.0.1' };
    expect((await a.check(req, 'GET /a', ipOf(req)))!.limited).toBe(false);
    expect((await a.check(req, 'GET /b', ipOf(req)))!.limited).toBe(false);
    expect((await a.check(req, 'GET /a', ipOf(req)))!.limited).toBe(true);
    expect((await a.check({ ip: '10.0.0.2' }, 'GET /a', ipOf({ ip: '10.0.0.2' })))!.limited).toBe(false);
    expect((await b.check(req, 'GET /x', ipOf(req)))!.limited).toBe(false);
    expect((await c.check(req, 'GET /y', ipOf(req)))!.limited).toBe(true);
  });

  it('a key function that returns a non-string is an error, not a shared bucket', async () => {
    const limit = httpLimit<Req>({ policy: '1/1m', key: (req) => req.id as string });
    await expect(limit.check({ id: undefined }, 'GET /', () => '1.1.1.1')).rejects.toThrow(
      'key(req) must return a non-empty string, got undefined',
    );
    await expect(limit.check({ id: 42 }, 'GET /', () => '1.1.1.1')).rejects.toMatchObject({ code: 'ERR_SLUICE_KEY' });
  });

  it('an empty key is refused: it would put every such request in one shared bucket', async () => {
    const limit = httpLimit<Req>({ policy: '1/1m', key: () => '' });
    await expect(limit.check({}, 'GET /', () => '1.1.1.1')).rejects.toMatchObject({
      code: 'ERR_SLUICE_KEY',
      message: expect.stringMatching(/shared bucket/),
    });
  });

  it.each([
    ['key', 'ERR_SLUICE_KEY'],
    ['cost', 'ERR_SLUICE_COST'],
    ['skip', 'ERR_SLUICE_KEY'],
  ])('a %s function that throws or rejects reaches the framework as %s with the original as cause', async (name, code) => {
    const boom = new Error('db down');
    for (const fn of [
      () => {
        throw boom;
      },
      async () => {
        throw boom;
      },
    ]) {
      const limit = httpLimit<Req>({ policy: '1/1m', [name]: fn });
      await expect(limit.check({}, 'GET /', () => '1.1.1.1')).rejects.toMatchObject({ name: 'SluiceError', code, cause: boom });
    }
  });

  it('cost may be a number', async () => {
    const limit = httpLimit<Req>({ policy: '10/1m', cost: 4 });
    const v = await limit.check({}, 'GET /', () => '1.1.1.1');
    expect(v?.decision.remaining).toBe(6);
    expect(() => httpLimit<Req>({ policy: '10/1m', cost: 0 })).toThrow(/cost must be a positive finite number or a function, got 0/);
  });

  it('a bad cost is an error naming cost', async () => {
    const limit = httpLimit<Req>({ policy: '1/1m', cost: async () => -2 });
    await expect(limit.check({}, 'GET /', () => '1.1.1.1')).rejects.toThrow(/cost must be a positive finite number/);
  });

  it('skip, sync and async', async () => {
    const limit = httpLimit<Req>({ policy: '1/1m', skip: async (req) => req.id === 'admin' });
    expect(await limit.check({ id: 'admin' }, 'GET /', () => '1.1.1.1')).toBeUndefined();
  });

  it('limited responses: problem+json by default, message as text, JSON or a function', async () => {
    const store = memoryStore();
    const deny = async (message?: unknown) => {
      const limit = httpLimit<Req>({ policy: '1/1m', store, message: message as never, scope: String(Math.random()) });
      await limit.check({}, 'GET /', () => '1.1.1.1');
      const v = (await limit.check({}, 'GET /', () => '1.1.1.1'))!;
      return limit.limitedResponse(v.decision, {});
    };
    const problem = await deny();
    expect(problem.contentType).toBe('application/problem+json; charset=utf-8');
    expect(JSON.parse(problem.body)).toMatchObject({ title: 'Too Many Requests', status: 429, 'violated-policies': ['1-per-60s'] });
    expect(await deny('slow down')).toEqual({ status: 429, contentType: 'text/plain; charset=utf-8', body: 'slow down' });
    expect((await deny({ error: 'x' })).body).toBe('{"error":"x"}');
    expect((await deny(async (d: { policy: string }) => `over ${d.policy}`)).body).toBe('over 1-per-60s');
  });
});

describe('mergeHttpOptions', () => {
  const store = memoryStore();
  it('a route limiter replaces the app limiter options, and limiter options cannot extend an app limiter', () => {
    const limiter = createLimiter({ policy: '1/1m' });
    expect(mergeHttpOptions<Record<string, unknown>>({ policy: '100/1m', store, scope: 's' }, { limiter })).toEqual({
      scope: 's',
      limiter,
    });
    expect(() => mergeHttpOptions<Record<string, unknown>>({ limiter }, { policy: '5/1m' })).toThrow(/limiter must be absent on the app/);
  });
  it("a route's policy function is the request's, so it may go over an app's limiter", () => {
    const limiter = createLimiter({ policy: '1/1m' });
    const plan = () => '5/1m';
    expect(mergeHttpOptions<Record<string, unknown>>({ limiter, scope: 's' }, { policy: plan })).toEqual({
      limiter,
      scope: 's',
      policy: plan,
    });
  });
});

describe('httpLimit with a policy function', () => {
  it('each request is limited by the policies its function returns, sync or async, also over a shared limiter', async () => {
    type PlanReq = Req & { plan: string };
    const plans: Record<string, string> = { free: '1/1m', pro: '3/1m' };
    const sync = httpLimit<PlanReq>({ policy: (req) => plans[req.plan] as '1/1m', key: (req) => String(req.id) });
    const shared = createLimiter({ store: memoryStore() });
    const async = httpLimit<PlanReq>({ limiter: shared, policy: async (req) => plans[req.plan] as '1/1m', key: (req) => String(req.id) });
    for (const limit of [sync, async]) {
      const check = (req: PlanReq) => limit.check(req, 'GET /', ipOf(req));
      expect((await check({ id: 1, plan: 'free' }))?.limited).toBe(false);
      expect((await check({ id: 1, plan: 'free' }))?.limited).toBe(true);
      const pro = await check({ id: 2, plan: 'pro' });
      expect(pro?.headers['RateLimit-Policy']).toBe('"3-per-60s";q=3;w=60');
      expect(pro?.decision.remaining).toBe(2);
    }
    await expect(sync.check({ id: 3, plan: 'none' }, 'GET /', () => undefined)).rejects.toMatchObject({ code: 'ERR_SLUICE_OPTION' });
  });
});

describe('stackHeaders', () => {
  it('joins the RateLimit lists of stacked middlewares and replaces the rest', () => {
    const before: Record<string, string> = { 'RateLimit-Policy': '"100-per-60s";q=100;w=60', RateLimit: '"100-per-60s";r=99;t=1' };
    const next = { 'RateLimit-Policy': '"5-per-900s";q=5;w=900', RateLimit: '"5-per-900s";r=0;t=180', 'Retry-After': '180' };
    expect(stackHeaders(next, (name) => before[name])).toEqual({
      'RateLimit-Policy': '"100-per-60s";q=100;w=60, "5-per-900s";q=5;w=900',
      RateLimit: '"100-per-60s";r=99;t=1, "5-per-900s";r=0;t=180',
      'Retry-After': '180',
    });
    expect(stackHeaders(next, () => undefined)).toEqual(next);
  });
});
