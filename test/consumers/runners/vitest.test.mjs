// A Vitest project's test of its Fastify app's daily quota, under vi.useFakeTimers(), on Redis under a
// test clock (test/packages.test.ts runs it).
import { redisStore } from '@sluice/core';
import { resetAll, testClock } from '@sluice/core/testing';
import rateLimit from '@sluice/fastify';
import Fastify from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, expect, test, vi } from 'vitest';

const client = new Redis(process.env.REDIS_URL);
const clock = testClock();
const store = redisStore({ client, clock });
const app = Fastify();
await app.register(rateLimit, { policy: { limit: 2, window: 'day', timeZone: 'UTC' }, store, prefix: 'vitest-app' });
app.get('/', async () => 'ok');

beforeAll(() => client.ping());
beforeEach(async () => {
  vi.useFakeTimers();
  await resetAll({ store, prefix: 'vitest-app' });
});
afterAll(async () => {
  vi.useRealTimers();
  await app.close();
  await client.quit();
});

test('a daily quota ends at midnight UTC on the test clock', async () => {
  expect(vi.isFakeTimers()).toBe(true);
  clock.set(Date.UTC(2026, 0, 15, 23, 0));
  expect((await app.inject('/')).statusCode).toBe(200);
  expect((await app.inject('/')).statusCode).toBe(200);
  const limited = await app.inject('/');
  expect(limited.statusCode).toBe(429);
  expect(limited.headers['retry-after']).toBe('3600');
  vi.advanceTimersByTime(2 * 3_600_000); // fake timers move no store's clock
  expect((await app.inject('/')).statusCode).toBe(429);
  clock.advance('1h');
  expect((await app.inject('/')).statusCode).toBe(200);
});

test('resetAll gave this test the whole quota', async () => {
  expect((await app.inject('/')).statusCode).toBe(200);
  expect((await app.inject('/')).statusCode).toBe(200);
});
