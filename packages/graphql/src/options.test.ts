import { createLimiter, SluiceError } from '@sluice/core';
import { costLimit } from './cost-limit.js';
import type { CostLimitOptions } from './options.js';

const limiter = createLimiter({ policy: '1000/1m' });
const key = () => 'k';
afterAll(() => limiter.close());

function refused(options: unknown): SluiceError {
  try {
    costLimit(options as CostLimitOptions);
  } catch (error) {
    expect(error).toBeInstanceOf(SluiceError);
    return error as SluiceError;
  }
  throw new Error('costLimit accepted the options');
}

describe('costLimit options', () => {
  it('builds the three plugins from a limiter and a key', () => {
    const limit = costLimit({ limiter, key, maxCost: 500, cost: { object: 2, scalar: 0.5, defaultListSize: 20 } });
    expect(typeof limit.envelop().onExecute).toBe('function');
    expect(typeof limit.apollo().requestDidStart).toBe('function');
    expect(typeof limit.mercurius()).toBe('function');
  });

  it.each([
    ['no options', undefined, /^options must be an object/],
    ['no limiter', { key }, /^limiter must be a Limiter/],
    ['a limiter that is not one', { limiter: { consume: 1 }, key }, /^limiter must be a Limiter from createLimiter\(\), got an object/],
    ['no key', { limiter }, /^key must be a function of the GraphQL context/],
    ['a key that is not a function', { limiter, key: 'user' }, /^key must be a function, got "user"/],
    ['maxCost 0', { limiter, key, maxCost: 0 }, /^maxCost must be a number above 0, at most 1e12, got 0/],
    ['maxCost above 1e12', { limiter, key, maxCost: 2e12 }, /^maxCost must be a number above 0, at most 1e12/],
    ['cost that is not an object', { limiter, key, cost: 1 }, /^cost must be an object \{ object, scalar, defaultListSize \}, got 1/],
    ['a negative object weight', { limiter, key, cost: { object: -1 } }, /^cost\.object must be a number from 0 to 1e12, got -1/],
    [
      'a scalar weight that is not a number',
      { limiter, key, cost: { scalar: '1' } },
      /^cost\.scalar must be a number from 0 to 1e12, got "1"/,
    ],
    [
      'a fractional defaultListSize',
      { limiter, key, cost: { defaultListSize: 2.5 } },
      /^cost\.defaultListSize must be an integer from 0 to 1e12/,
    ],
    ['an unknown weight', { limiter, key, cost: { list: 10 } }, /^cost\.list must be absent \(known: object, scalar, defaultListSize\)/],
    ['an unknown option', { limiter, key, maxcost: 10 }, /^maxcost must be absent \(known: limiter, key, maxCost, cost\)/],
  ])('refuses %s with ERR_SLUICE_OPTION naming the option', (_what, options, message) => {
    const error = refused(options);
    expect(error.code).toBe('ERR_SLUICE_OPTION');
    expect(error.message).toMatch(message);
  });

  it('never prints a limiter or a client it refuses', () => {
    const error = refused({ limiter: { url: 'redis://:secret@example.com' }, key });
    expect(error.message).not.toContain('secret');
  });
});
