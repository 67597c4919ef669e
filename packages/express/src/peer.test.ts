// express-rate-limit's spelling as the kit takes it through @sluice/express's translator: its policy, key and
// headers, alone or beside sluice's own spelling. test/dropin.express.test.ts holds the whole behaviour
// against express-rate-limit itself, over HTTP.
import { httpLimit } from '@sluice/core/adapter';
import { expressRateLimit } from './peer.js';

const limit = (options: object) => httpLimit<object>(options as never, { peer: expressRateLimit });
const check = async (options: object) => (await limit(options).check({}, 'GET /', () => '1.2.3.4'))!;

describe("express-rate-limit's options", () => {
  it.each([
    [{ policy: '3/1m', windowMs: 1000, limit: 3 }, /policy must be given alone, not with windowMs, limit or max/],
    [{ policy: '3/1m', key: () => 'a', keyGenerator: () => 'b' }, /key must be given alone, not with keyGenerator/],
    [{ policy: '3/1m', keyGenerator: 'ip' }, /keyGenerator must be a function/],
    [{ policy: '3/1m', handler: () => {} }, /handler must be given with windowMs and limit .* use onLimited/],
    [{ policy: '1/1m', headers: 'draft', legacyHeaders: false }, /headers must be given alone/],
    [{ policy: '1/1m', standardHeaders: 'draft-9' }, /standardHeaders must be/],
    [{ windowMs: 1000, limit: 3, retryAfter: 5 }, /retryAfter must be absent/],
  ])('%j throws naming the option', (options, message) => {
    expect(() => limit(options)).toThrow(message);
  });

  it.each([
    [{ windowMs: 60_000, limit: 3 }, 3, 60_000],
    [{ windowMs: 1000, max: 7 }, 7, 1000],
    [{ windowMs: 1000 }, 5, 1000],
  ])('%j is a first-hit fixed window of %d per %d ms', async (options, max, windowMs) => {
    const { decision } = await check(options);
    expect(decision.policies[0]).toMatchObject({ limit: max, windowMs });
  });

  it.each([
    [{ standardHeaders: 'draft-8', legacyHeaders: false }, ['RateLimit', 'RateLimit-Policy']],
    // true is draft-6, as express-rate-limit reads it: its separate fields.
    [
      { standardHeaders: true },
      [
        'RateLimit-Limit',
        'RateLimit-Remaining',
        'RateLimit-Reset',
        'RateLimit-Policy',
        'X-RateLimit-Limit',
        'X-RateLimit-Remaining',
        'X-RateLimit-Reset',
      ],
    ],
    [{ legacyHeaders: true }, ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']],
    [{ standardHeaders: false, legacyHeaders: false }, []],
  ])('%j sends %j', async (options, names) => {
    const { headers } = await check({ windowMs: 60_000, limit: 5, ...options });
    expect(Object.keys(headers).sort()).toEqual([...names].sort());
  });

  it("beside a policy of sluice's, keyGenerator is the key and standardHeaders the IETF headers", async () => {
    const verdict = await check({ policy: '5/1m', keyGenerator: () => 'user', standardHeaders: true, legacyHeaders: false });
    expect(verdict.key).toBe('user');
    expect(Object.keys(verdict.headers).sort()).toEqual(['RateLimit', 'RateLimit-Policy']);
  });
});
