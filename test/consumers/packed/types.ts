// Strict TypeScript against the installed packages' declarations, without skipLibCheck. The test copies
// this file into an ES module folder, a CommonJS folder and a node10 folder of the consumer project, so
// the "import" and "require" declarations and the typesVersions fallback are each checked.
import { createLimiter, type Decision, type LimiterEvent, memoryStore, rateLimitHeaders, SluiceError, type Store } from '@sluice/core';
import { type ResetAllOptions, resetAll, type TestClock, testClock } from '@sluice/core/testing';
import { rateLimit as expressRateLimit } from '@sluice/express';
import fastifyRateLimit from '@sluice/fastify';
import { costLimit, type QueryCost } from '@sluice/graphql';
import { rateLimit as honoRateLimit, webSocketLimit } from '@sluice/hono';
import { rateLimit as koaRateLimit } from '@sluice/koa';
import { RateLimit, type RateLimitedException, SluiceModule, sluiceThrottlerStorage } from '@sluice/nestjs';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import Koa from 'koa';

const store: Store = memoryStore({ maxKeys: 1000 });
const events: LimiterEvent['type'][] = [];
const limiter = createLimiter({
  policy: ['10/s', { limit: 100, window: '1h', algorithm: 'sliding-window' }],
  store,
  onEvent: (event) => events.push(event.type),
});

export async function headersFor(key: string): Promise<Record<string, string>> {
  const decision: Decision = await limiter.consume(key, { cost: 1 });
  return rateLimitHeaders(decision, { headers: 'both' });
}

export const isSluiceError = (error: unknown): error is SluiceError => error instanceof SluiceError && typeof error.code === 'string';

// Types that resolved to `any` would let this through, and then the directive itself is an error.
// @ts-expect-error a policy's limit is a number
createLimiter({ policy: { limit: '10', window: '1s' } });

export const expressApp: express.Express = express();
expressApp.use(expressRateLimit({ limiter, key: (req) => req.ip ?? 'unknown' }));
expressApp.get('/', (req, res) => {
  res.send(`${req.rateLimit?.remaining ?? 'no'} left`);
});

export async function fastifyApp() {
  const app = Fastify();
  await app.register(fastifyRateLimit, { policy: '100/1m', hook: 'preHandler' });
  app.get('/', { config: { rateLimit: { policy: '5/1m', failMode: 'open' } } }, async (request) => ({
    left: request.rateLimit?.remaining,
  }));
  app.get('/health', { config: { rateLimit: false } }, async () => 'ok');
  return app;
}

export const koaApp = new Koa();
koaApp.use(koaRateLimit({ policy: '100/1m', skip: (ctx) => ctx.path === '/health' }));
koaApp.use((ctx) => {
  ctx.body = `${ctx.state.rateLimit?.remaining ?? 'no'} left`;
});

interface GraphqlContext {
  user: { id: string };
}
export const graphqlLimit = costLimit({ limiter, key: (ctx: GraphqlContext) => ctx.user.id, maxCost: 1000, cost: { defaultListSize: 20 } });
export const graphqlPlugins = [graphqlLimit.envelop(), graphqlLimit.apollo(), graphqlLimit.mercurius()] as const;
export const spent = (cost: QueryCost): number => cost.actualQueryCost ?? cost.requestedQueryCost;
export const honoApp = new Hono();
honoApp.use(honoRateLimit({ policy: '100/1m', key: (c) => c.req.header('x-user') ?? 'anonymous' }));
honoApp.get('/', (c) => c.text(`${c.var.rateLimit?.remaining ?? 'no'} left`));
honoApp.get('/peer', honoRateLimit({ windowMs: 60_000, limit: 5, keyGenerator: (c) => c.req.path }), (c) => c.text('ok'));
export const messages = webSocketLimit({ policy: '20/1s', onLimited: 'drop' });
export const nestModule = SluiceModule.forRoot({ policy: '100/1m', key: (ctx) => String(ctx.switchToHttp().getRequest().ip) });
export const nestLogin = RateLimit('5/15m', { failMode: 'closed' });
export const retryOf = (e: RateLimitedException): number => e.decision.retryAfterMs;
export const throttlerStorage = sluiceThrottlerStorage({ store });
export const throttlerRecord = throttlerStorage.increment('k', 60_000, 10, 60_000, 'default').then((r) => r.isBlocked);

// @sluice/core/testing: its own entry's declarations (typesVersions for node10).
const clock: TestClock = testClock();
const moved: number = clock.advance('1h') + clock.set(new Date());
const resetting: ResetAllOptions = { store: memoryStore({ clock }), prefix: 'sluice' };
export const reset: Promise<void> = resetAll(resetting).then(() => undefined);
// @ts-expect-error advance takes a duration, not a Date
clock.advance(new Date());

export { moved };
