// One budget by query cost on one Redis, shared by three server instances (GraphQL Yoga, Apollo Server and
// Mercurius, each with its own limiter and store, as separate processes would have): concurrent operations
// are admitted exactly up to the budget, and every server's refund lands in it.
import { createLimiter, type Limiter, redisStore } from '@sluice/core';
import { costLimit } from '@sluice/graphql';
import Redis from 'ioredis';
import { type Context, post, type RunningServer, SERVERS, startGraphql } from './support/graphql';
import { startRedis, uniquePrefix } from './support/redis';
import { type RedisWithClient, startRedisWithClient, stopRedisWithClient } from './support/redis-client';
import { until } from './support/until';

const BUDGET = 1000;
const POLICY = `${BUDGET}/1d`; // refills 0.0116 points a second: nothing a test sees
let redis: RedisWithClient;
let prefix: string;
const limiters: Limiter[] = [];
const servers: RunningServer[] = [];

beforeAll(async () => {
  redis = await startRedisWithClient();
  prefix = uniquePrefix('graphql');
  for (const name of SERVERS) {
    // A store call's deadline generous enough that the store decides, never the fallback, on a busy machine.
    const limiter = createLimiter({ policy: POLICY, store: redisStore({ client: redis.client }), prefix, timeout: 10_000 });
    limiters.push(limiter);
    servers.push(await startGraphql(name, costLimit<Context>({ limiter, key: (ctx) => ctx.user })));
  }
}, 60_000);

afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
  await Promise.all(limiters.map((l) => l.close()));
  if (redis) await stopRedisWithClient(redis);
});

/** `n` operations at once, spread over the three servers, as one user. */
function flood(n: number, user: string, query: string) {
  return Promise.all(Array.from({ length: n }, (_, i) => post((servers[i % servers.length] as RunningServer).url, user, query)));
}

const spent = async (user: string) => BUDGET - (await (limiters[0] as Limiter).peek(user)).remaining;

describe('three GraphQL servers on one Redis', () => {
  it('admit concurrent operations exactly up to the one budget', async () => {
    // users(first: 100): 100 x 1, and the resolver returns 100: no refund
    const responses = await flood(30, 'shared-exact', '{ users(first: 100) { id } }');
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(20);
    for (const r of responses.filter((r) => r.status === 429)) expect(r.body.errors?.[0]?.extensions?.code).toBe('THROTTLED');
    expect(await spent('shared-exact')).toBe(BUDGET);
  });

  it("land every server's refund in the one budget", async () => {
    // viewer 1 + repositories [1 + nodes 50 x 1] = 52 requested; the resolver returns 2 repositories: 1 + 1 + 2 = 4
    const responses = await flood(60, 'shared-refund', '{ viewer { repositories(first: 50) { nodes { name } } } }');
    const allowed = responses.filter((r) => r.status === 200);
    for (const r of allowed) expect(r.body.extensions?.cost).toMatchObject({ requestedQueryCost: 52, actualQueryCost: 4 });
    expect(responses.filter((r) => r.status === 429)).toHaveLength(60 - allowed.length);
    // Without refunds 19 would pass (19 x 52 = 988); each refund lets more in.
    expect(allowed.length).toBeGreaterThanOrEqual(19);
    expect(await spent('shared-refund')).toBe(4 * allowed.length);
  });
});

describe('a GraphQL server whose limiter fails closed with fallback: false', () => {
  it('answers every operation 503 UNAVAILABLE with Retry-After while Redis is down, runs none, and counts again once it is back', async () => {
    const server = await startRedis();
    const client = new Redis({ port: server.port, retryStrategy: () => 50 });
    client.on('error', () => {});
    const running: RunningServer[] = [];
    const closed: Limiter[] = [];
    try {
      await new Promise((r) => client.once('ready', r));
      for (const name of SERVERS) {
        const limiter = createLimiter({
          policy: POLICY,
          store: redisStore({ client }),
          prefix: uniquePrefix('graphql-closed'),
          failMode: 'closed',
          fallback: false,
          timeout: 10_000,
          breaker: { failures: 2, cooldown: 300 },
        });
        closed.push(limiter);
        running.push(await startGraphql(name, costLimit<Context>({ limiter, key: (ctx) => ctx.user })));
      }
      for (const s of running) expect((await post(s.url, 'closed', '{ users(first: 3) { id } }')).status).toBe(200);

      await server.kill();
      for (const s of running)
        for (let i = 0; i < 3; i++) {
          const { status, retryAfter, body } = await post(s.url, 'closed', '{ users(first: 3) { id } }');
          expect(status).toBe(503);
          expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
          expect(body).not.toHaveProperty('data.users');
          expect(body.errors?.[0]).toMatchObject({ message: 'Service Unavailable', extensions: { code: 'UNAVAILABLE' } });
        }

      await server.restart();
      for (const s of running) {
        const status = async () => (await post(s.url, 'closed', '{ users(first: 3) { id } }')).status;
        await until(status, 200, { withinMs: 10_000, what: `${s.name} answering 200 once Redis is back` });
      }
    } finally {
      await Promise.all(running.map((s) => s.close()));
      await Promise.all(closed.map((l) => l.close()));
      client.disconnect();
      await server.stop();
    }
  }, 60_000);
});
