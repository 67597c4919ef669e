// Rules over HTTP in Express, Fastify and Koa, real servers on one real Redis: a request whose client
// IP or key a deny rule (or a ban) matches answers 403 problem+json (deniedStatusCode), with Retry-After when
// the rule lapses; an allowed-by-rule request passes unlimited and without rate-limit headers; an override
// changes the limit the headers show; rules of another prefix than the middleware's are refused.
import { createRules, type Rules, redisStore, type Store } from '@sluice/core';
import Redis from 'ioredis';
import { type Harness, harnesses, type Running } from './support/http';
import { type RedisServer, startRedis, uniquePrefix } from './support/redis';

let server: RedisServer;
let client: Redis;
let store: Store;
const open: Running[] = [];
const made: Rules[] = [];

beforeAll(async () => {
  server = await startRedis();
  client = new Redis(server.url);
  await new Promise((r) => client.once('ready', r));
  store = redisStore({ client });
});

afterEach(async () => {
  await Promise.all(open.splice(0).map((r) => r.close()));
  await Promise.all(made.splice(0).map((r) => r.close()));
});

afterAll(async () => {
  client.disconnect();
  await server.stop();
});

function rulesFor(prefix: string): Rules {
  const rules = createRules({ store, prefix });
  made.push(rules);
  return rules;
}

async function start(harness: Harness, app: Record<string, unknown>): Promise<Running> {
  const running = await harness.start({ app, routes: [{ method: 'GET', path: '/r' }] });
  open.push(running);
  return running;
}

describe.each(harnesses)('$name', (harness) => {
  it('rules of another prefix are refused when the middleware is made, naming both prefixes', async () => {
    const rules = createRules({ store });
    made.push(rules);
    await expect(harness.create({ policy: '100/1m', store, prefix: 'app', rules })).rejects.toMatchObject({
      code: 'ERR_SLUICE_OPTION',
      message: expect.stringMatching(/prefix "app", got rules of prefix "sluice"/),
    });
  });

  it('a deny rule on the client IP answers 403 problem+json, with Retry-After while the rule lapses', async () => {
    const prefix = uniquePrefix();
    const rules = rulesFor(prefix);
    // supertest comes from 127.0.0.1 (Express and Koa may see it IPv4-mapped: matched as IPv4).
    await rules.deny('127.0.0.0/8', { ttl: '90s', reason: 'test' });
    const running = await start(harness, { policy: '100/1m', store, prefix, timeout: 2000, rules });
    const res = await running.request.get('/r');
    expect(res.status).toBe(403);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(JSON.parse(res.text)).toMatchObject({ title: 'Forbidden', status: 403 });
    const retry = Number(res.headers['retry-after']);
    expect(retry).toBeGreaterThan(80);
    expect(retry).toBeLessThanOrEqual(90);
    expect(res.headers.ratelimit).toBeUndefined();
  });

  it('a deny rule on the key answers deniedStatusCode, with no Retry-After when it does not lapse', async () => {
    const prefix = uniquePrefix();
    const rules = rulesFor(prefix);
    await rules.deny('user:bad');
    const running = await start(harness, {
      policy: '100/1m',
      store,
      prefix,
      timeout: 2000,
      rules,
      deniedStatusCode: 451,
      key: () => 'user:bad',
    });
    const res = await running.request.get('/r');
    expect(res.status).toBe(451);
    expect(JSON.parse(res.text)).toMatchObject({ status: 451 });
    expect(res.headers['retry-after']).toBeUndefined();
  });

  it('an allow rule passes unlimited; an override changes the limit', async () => {
    const prefix = uniquePrefix();
    const rules = rulesFor(prefix);
    await rules.allow('user:vip');
    await rules.override('user:big', '50/1m');
    const running = await start(harness, { policy: '1/1m', store, prefix, timeout: 2000, rules, key: (req: unknown) => keyOf(req) });
    for (let i = 0; i < 3; i++) {
      const res = await running.request.get('/r').set('x-user', 'vip');
      expect(res.status).toBe(200);
      expect(res.headers.ratelimit).toBeUndefined();
    }
    const big = await running.request.get('/r').set('x-user', 'big');
    expect(big.status).toBe(200);
    expect(big.headers['ratelimit-policy']).toMatch(/q=50/);
    expect((await running.request.get('/r').set('x-user', 'small')).status).toBe(200);
    expect((await running.request.get('/r').set('x-user', 'small')).status).toBe(429);
  });

  it('ban: a client limited `after` times within `within` is then refused 403 for `for`', async () => {
    const prefix = uniquePrefix();
    const rules = rulesFor(prefix);
    const running = await start(harness, {
      policy: '1/1m',
      store,
      prefix,
      timeout: 2000,
      rules,
      ban: { after: 3, within: '1m', for: '10m' },
    });
    expect((await running.request.get('/r')).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await running.request.get('/r')).status).toBe(429);
    // The ban is written after the third 429 was answered.
    let res = await running.request.get('/r');
    for (let i = 0; i < 50 && res.status === 429; i++) res = await running.request.get('/r');
    expect(res.status).toBe(403);
    expect(JSON.parse(res.text).detail).toMatch(/banned/);
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(500);
  });
});

/** The test's key: the x-user header, however the framework hands the request over. */
function keyOf(req: unknown): string {
  const r = req as { headers?: Record<string, string>; request?: { headers: Record<string, string> } };
  const headers = r.headers ?? r.request?.headers ?? {};
  return `user:${headers['x-user'] ?? 'anon'}`;
}
