// @sluice/graphql inside NestJS's GraphQL module (@nestjs/graphql), on each of its drivers: Apollo
// (@nestjs/apollo on @nestjs/platform-express) and Mercurius (@nestjs/mercurius on @nestjs/platform-fastify).
// The plugin goes where each driver takes a server's plugins: `plugins: [limit.apollo()]`, and
// `plugins: [{ plugin: limit.mercurius() }]`. A query is charged its requested cost and refunded to its
// actual one, and a user whose budget cannot pay is THROTTLED with 429 and Retry-After, the resolver not run.
import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { GraphQLModule } from '@nestjs/graphql';
import { MercuriusDriver, type MercuriusDriverConfig } from '@nestjs/mercurius';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { createLimiter, memoryStore } from '@sluice/core';
import { costDirectives, costLimit } from '@sluice/graphql';
import type { FastifyRequest } from 'fastify';
import { type Context, post, ran, resolvers, typeDefs } from './support/graphql';

const BUDGET = 100;

type Driver = 'apollo' | 'mercurius';

/** A NestJS app whose GraphQL module runs the schema of test/support/graphql.ts with the plugin; its endpoint. */
async function startNest(driver: Driver): Promise<{ url: string; close: () => Promise<void>; spent: (user: string) => Promise<number> }> {
  const limiter = createLimiter({ policy: `${BUDGET}/1d`, store: memoryStore() });
  const limit = costLimit<Context>({ limiter, key: (ctx) => ctx.user, maxCost: BUDGET });
  const schema = { typeDefs: [costDirectives, typeDefs], resolvers };
  // Decorators called as functions: the test is compiled without decorator support.
  class AppModule {}
  if (driver === 'apollo') {
    const config: ApolloDriverConfig = {
      driver: ApolloDriver,
      ...schema,
      plugins: [limit.apollo()],
      context: ({ req }: { req: { headers: Record<string, string | undefined> } }) => ({ user: req.headers['x-user'] ?? 'anonymous' }),
    };
    Module({ imports: [GraphQLModule.forRoot<ApolloDriverConfig>(config)] })(AppModule);
  } else {
    const config: MercuriusDriverConfig = {
      driver: MercuriusDriver,
      ...schema,
      plugins: [{ plugin: limit.mercurius() }],
      context: (request: FastifyRequest) => ({ user: String(request.headers['x-user'] ?? 'anonymous') }),
      // Mercurius' parse cache is loaded with a dynamic import(), which Jest runs only under --experimental-vm-modules.
      cache: false,
    };
    Module({ imports: [GraphQLModule.forRoot<MercuriusDriverConfig>(config)] })(AppModule);
  }
  const app =
    driver === 'apollo'
      ? await NestFactory.create(AppModule, { logger: false })
      : await NestFactory.create<NestFastifyApplication>(AppModule, new FastifyAdapter(), { logger: false });
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/graphql`,
    close: async () => {
      await app.close();
      await limiter.close();
    },
    spent: async (user) => BUDGET - (await limiter.peek(user)).remaining,
  };
}

describe.each<Driver>(['apollo', 'mercurius'])('NestJS GraphQLModule, %s driver, with costLimit', (driver) => {
  let nest: Awaited<ReturnType<typeof startNest>>;
  beforeAll(async () => {
    nest = await startNest(driver);
  });
  afterAll(() => nest.close());

  it('charges the requested cost and refunds down to the actual cost', async () => {
    // users(first: 3): 3 x User (1) + repositories(first: 5) (1 + nodes 5 x 1 = 6) = 3 x 7 = 21 requested;
    // 3 users, 2 repositories each: 3 x (1 + 1 + 2) = 12 actual.
    const query = '{ users(first: 3) { login repositories(first: 5) { nodes { name } } } }';
    const { status, body } = await post(nest.url, 'ada', query);
    expect(status).toBe(200);
    expect(body.errors).toBeUndefined();
    expect(body.extensions?.cost).toEqual({
      requestedQueryCost: 21,
      actualQueryCost: 12,
      throttleStatus: { maximumAvailable: BUDGET, currentlyAvailable: BUDGET - 12, restoreRate: expect.closeTo(BUDGET / 86_400, 6) },
    });
    expect(await nest.spent('ada')).toBe(12);
  });

  it('throttles a query the budget cannot pay: THROTTLED, 429, Retry-After, no data, the resolver not run', async () => {
    // users(first: 60): 60 requested and actual; then users(first: 50): 50 > the 40 left.
    const first = await post(nest.url, 'grace', '{ users(first: 60) { login } }');
    expect(first.status).toBe(200);
    expect(first.body.extensions?.cost?.actualQueryCost).toBe(60);
    const before = ran.users;
    const { status, retryAfter, body } = await post(nest.url, 'grace', '{ users(first: 50) { login } }');
    expect(ran.users).toBe(before);
    expect(status).toBe(429);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    expect(body.data).toBeUndefined();
    expect(body.errors?.[0]?.extensions).toMatchObject({ code: 'THROTTLED', retryAfterMs: expect.any(Number) });
    expect(body.extensions?.cost).toMatchObject({
      requestedQueryCost: 50,
      actualQueryCost: null,
      throttleStatus: { maximumAvailable: BUDGET, currentlyAvailable: 40 },
    });
    expect(await nest.spent('grace')).toBe(60);
  });
});
