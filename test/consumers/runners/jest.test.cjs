// A Jest project's test of its Express app's limit, with every timer faked (package.json: fakeTimers
// enableGlobally), on Redis under a test clock; run with --detectOpenHandles (test/packages.test.ts).
const { redisStore } = require('@sluice/core');
const { resetAll, testClock } = require('@sluice/core/testing');
const { rateLimit } = require('@sluice/express');
const express = require('express');
const { Redis } = require('ioredis');
const request = require('supertest');

const client = new Redis(process.env.REDIS_URL);
const clock = testClock();
const store = redisStore({ client, clock });
const app = express();
app.use(rateLimit({ policy: { limit: 2, window: '1h', algorithm: 'fixed-window' }, store, prefix: 'jest-app' }));
app.get('/', (_req, res) => {
  res.send('ok');
});

beforeAll(() => client.ping());
beforeEach(() => resetAll({ store, prefix: 'jest-app' }));
afterAll(() => client.quit());

test('timers are fake', () => {
  expect(jest.isMockFunction(setTimeout) || typeof setTimeout.clock === 'object').toBe(true);
});

test('the third request of the hour is limited until the test clock ends the hour', async () => {
  clock.set(Date.UTC(2026, 0, 15, 12, 0));
  await request(app).get('/').expect(200);
  await request(app).get('/').expect(200);
  expect((await request(app).get('/').expect(429)).headers['retry-after']).toBe('3600');
  jest.advanceTimersByTime(2 * 3_600_000); // fake timers move no store's clock
  await request(app).get('/').expect(429);
  clock.advance('1h');
  await request(app).get('/').expect(200);
});

test('resetAll gave this test the whole limit', async () => {
  await request(app).get('/').expect(200);
  await request(app).get('/').expect(200);
});
