// A node:test project's test of its Fastify app's limit, under mock.timers, on Redis under a test clock;
// `node --test` must end on its own (test/packages.test.ts runs it with a deadline).
import assert from 'node:assert/strict';
import { after, afterEach, beforeEach, mock, test } from 'node:test';
import { redisStore } from '@sluice/core';
import { resetAll, testClock } from '@sluice/core/testing';
import rateLimit from '@sluice/fastify';
import Fastify from 'fastify';
import { Redis } from 'ioredis';

const client = new Redis(process.env.REDIS_URL);
await client.ping();
const clock = testClock();
const store = redisStore({ client, clock });
const app = Fastify();
await app.register(rateLimit, { policy: '10/1m', store, prefix: 'node-test-app' });
app.get('/', async () => 'ok');

beforeEach(async () => {
  mock.timers.enable();
  await resetAll({ store, prefix: 'node-test-app' });
});
afterEach(() => mock.timers.reset());
after(async () => {
  await app.close();
  await client.quit();
});

test('a burst of ten passes, the eleventh waits six seconds on the test clock', async () => {
  for (let i = 0; i < 10; i++) assert.equal((await app.inject('/')).statusCode, 200);
  const limited = await app.inject('/');
  assert.equal(limited.statusCode, 429);
  assert.equal(limited.headers['retry-after'], '6');
  mock.timers.tick(60_000); // fake timers move no store's clock
  assert.equal((await app.inject('/')).statusCode, 429);
  clock.advance('6s');
  assert.equal((await app.inject('/')).statusCode, 200);
});

test('resetAll gave this test the whole burst', async () => {
  for (let i = 0; i < 10; i++) assert.equal((await app.inject('/')).statusCode, 200);
});
