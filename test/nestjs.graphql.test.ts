// SluiceGuard on @nestjs/graphql resolvers, with Apollo (platform-express) and Mercurius (platform-fastify): the
// guard finds the request in the GraphQL context (its address for the default key, its response for the
// headers), @RateLimit on a resolver, and a subscription under the global guard does not crash.
import 'reflect-metadata';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { GraphQLModule, Query, Resolver, Subscription } from '@nestjs/graphql';
import { MercuriusDriver, type MercuriusDriverConfig } from '@nestjs/mercurius';
import { RateLimit, SluiceModule } from '@sluice/nestjs';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { type Platform, type RunningApp, startNest } from './support/nestjs-app';

const running: RunningApp[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.close()));
});

@Resolver()
class Items {
  @Query(() => String)
  @RateLimit('2/1m')
  items(): string {
    return 'items';
  }

  @Query(() => String)
  free(): string {
    return 'free';
  }

  @Subscription(() => String, { resolve: (value: string) => value })
  async *ticks(): AsyncGenerator<string> {
    yield 'tick';
  }
}

const DRIVERS: Array<{ driver: string; platform: Platform; module: () => ReturnType<typeof GraphQLModule.forRoot> }> = [
  {
    driver: 'Apollo',
    platform: 'express',
    module: () =>
      GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, autoSchemaFile: true, subscriptions: { 'graphql-ws': true } }),
  },
  {
    driver: 'Mercurius',
    platform: 'fastify',
    // Mercurius' parse cache is loaded with a dynamic import(), which Jest runs only under --experimental-vm-modules.
    module: () =>
      GraphQLModule.forRoot<MercuriusDriverConfig>({ driver: MercuriusDriver, autoSchemaFile: true, subscription: true, cache: false }),
  },
];

describe.each(DRIVERS)('@nestjs/graphql with $driver (platform-$platform)', ({ platform, module }) => {
  const start = async (policy?: string) => {
    const r = await startNest(platform, {
      imports: [SluiceModule.forRoot(policy === undefined ? {} : { policy: policy as '1/1m' }), module()],
      providers: [Items],
    });
    running.push(r);
    return r.url;
  };
  const query = (url: string, q: string) =>
    fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: q }) });

  it("@RateLimit on a resolver: the guard finds the request (the client's address, the headers); over the limit, a 429 error", async () => {
    const url = await start();
    const first = await query(url, '{ items }');
    expect(await first.json()).toEqual({ data: { items: 'items' } });
    expect(first.headers.get('ratelimit-policy')).toBe('"2-per-60s";q=2;w=60');
    expect(first.headers.get('ratelimit')).toMatch(/^"2-per-60s";r=1;t=\d+$/);
    await (await query(url, '{ items }')).text();
    const limited = await query(url, '{ items }');
    expect(limited.headers.get('retry-after')).not.toBeNull();
    const body = await limited.json();
    expect(body.data).toBeNull();
    expect(body.errors[0]).toMatchObject({
      message: expect.stringMatching(/^Rate limit "2-per-60s" exceeded; retry in \d+ s\.$/),
      extensions: { code: 'RATE_LIMITED', status: 429, retryAfterMs: expect.any(Number) },
    });
    // A resolver without a limit, under a module without a policy, is not limited.
    for (let i = 0; i < 3; i++) expect(await (await query(url, '{ free }')).json()).toEqual({ data: { free: 'free' } });
  });

  it('a subscription under the global guard does not crash', async () => {
    const url = await start('100/1m');
    const client = createClient({ url: `${url.replace('http', 'ws')}/graphql`, webSocketImpl: WebSocket, retryAttempts: 0, lazy: true });
    try {
      const got: unknown[] = [];
      await new Promise<void>((resolve, reject) => {
        client.subscribe({ query: 'subscription { ticks }' }, { next: (v) => got.push(v), error: reject, complete: resolve });
      });
      expect(got).toEqual([{ data: { ticks: 'tick' } }]);
    } finally {
      await client.dispose();
    }
  });
});
