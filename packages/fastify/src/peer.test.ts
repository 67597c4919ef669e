// @fastify/rate-limit's spelling as the kit takes it through @sluice/fastify's translator, and a route's
// options merged over the plugin's. test/dropin.fastify.test.ts holds the whole behaviour against
// @fastify/rate-limit itself, over HTTP.
import { httpLimit, mergeHttpOptions } from '@sluice/core/adapter';
import { fastifyRateLimit } from './peer.js';

const limit = (options: object) => httpLimit<object>(options as never, { peer: fastifyRateLimit });

describe("@fastify/rate-limit's options", () => {
  it.each([
    [{ max: 5, timeWindow: '1 minute' }, 5, 60_000],
    [{ max: 5, timeWindow: '2 hours' }, 5, 7_200_000],
    [{ max: 5, timeWindow: '30s' }, 5, 30_000],
    [{ max: 5, timeWindow: 500 }, 5, 500],
    [{ max: 5 }, 5, 60_000],
  ])('%j is a first-hit fixed window of %d per %d ms', async (options, max, windowMs) => {
    const { decision } = (await limit(options).check({}, 'GET /', () => '1.2.3.4'))!;
    expect(decision.policies[0]).toMatchObject({ limit: max, windowMs });
  });

  it.each([
    [{ max: 3, timeWindow: '3 fortnights' }, /timeWindow must be/],
    [{ policy: '3/1m', max: 5 }, /max must be absent beside policy or limiter/],
    [{ policy: '3/1m', keyGenerator: () => 'k' }, /keyGenerator must be given with max and timeWindow/],
    [{ max: 3, nameSpace: 'x' }, /nameSpace must be absent: give prefix/],
  ])('%j throws naming the option', (options, message) => {
    expect(() => limit(options)).toThrow(message);
  });

  it("sluice's ban (an object) stands beside a policy; its own (a number) is its spelling", () => {
    expect(() => limit({ policy: '3/1m', ban: { after: 3, within: '1m', for: '1m' } })).not.toThrow();
    expect(() => limit({ policy: '3/1m', ban: 3 })).toThrow(/ban must be given with max and timeWindow/);
  });
});

describe("a route's options over the plugin's", () => {
  const merge = (app: Record<string, unknown>, route: Record<string, unknown>) => mergeHttpOptions(app, route, fastifyRateLimit);
  it("a route's max keeps the plugin's timeWindow, as @fastify/rate-limit merges", () => {
    expect(merge({ max: 100, timeWindow: '1 minute' }, { max: 5 })).toEqual({ max: 5, timeWindow: '1 minute' });
  });
  it("a route's policy in either spelling replaces the plugin's", () => {
    expect(merge({ policy: '100/1m', failMode: 'open' }, { max: 5, timeWindow: '1m' })).toEqual({
      failMode: 'open',
      max: 5,
      timeWindow: '1m',
    });
    expect(merge({ max: 100, failMode: 'open' }, { policy: '5/1m', failMode: 'closed' })).toEqual({ policy: '5/1m', failMode: 'closed' });
  });
});
