// A process that waits on a shared Redis for test/wait.redis.test.ts, running the built @sluice/core: says
// 'ready', then for each message { op, i, ... } reports { i, ... } with `at` its Date.now() when done.
//   wait   limiter.wait(key, { maxWait }): { at, waitedMs } or { at, code, retryAfterMs }; and first, when the
//          store's reservation reply comes, { i, reserved: true, turn } (Date.now() then + the reply's waitMs)
//   abort  aborts wait i (which then reports the abort's reason as code 'ABORTED')
//   fetch  rateLimitedFetch(url): { at, status }
//   peek   { remaining }
const { createLimiter, redisStore, rateLimitedFetch } = require('@sluice/core');
const Redis = require('ioredis');

const [port, prefix, policy] = process.argv.slice(2);
const client = new Redis({ port: Number(port) });
// The store, telling the parent when a reservation's reply came and when its turn is.
const redis = redisStore({ client });
const store = Object.create(redis);
let current;
store.decideWith = (request, done, deadline) =>
  redis.decideWith(
    request,
    (error, reply) => {
      if (reply && request.maxWaitMs !== undefined && reply.allowed)
        process.send({ i: current, reserved: true, turn: Date.now() + reply.waitMs });
      done(error, reply);
    },
    deadline,
  );
const limiter = createLimiter({ policy: JSON.parse(policy), store, prefix, timeout: 10_000 });
const fetchUp = rateLimitedFetch({ limiter, key: () => 'upstream', maxWait: '30s' });
const aborts = new Map();
client.once('ready', () => process.send('ready'));
process.on('message', async (m) => {
  const reply = (r) => process.send({ i: m.i, at: Date.now(), ...r });
  try {
    if (m.op === 'wait') {
      current = m.i;
      const controller = new AbortController();
      aborts.set(m.i, controller);
      const d = await limiter.wait(m.key ?? 'k', { maxWait: m.maxWait ?? '30s', signal: controller.signal });
      reply({ waitedMs: d.waitedMs, allowed: d.allowed });
    } else if (m.op === 'abort') {
      aborts.get(m.i).abort(Object.assign(new Error('left'), { code: 'ABORTED' }));
    } else if (m.op === 'fetch') {
      const r = await fetchUp(m.url);
      reply({ status: r.status });
    } else if (m.op === 'peek') {
      reply({ remaining: (await limiter.peek(m.key ?? 'k')).remaining });
    } else if (m.op === 'exit') {
      await limiter.close();
      client.disconnect();
      process.disconnect();
    }
  } catch (e) {
    reply({ code: e.code, retryAfterMs: e.retryAfterMs, message: e.message });
  }
});
