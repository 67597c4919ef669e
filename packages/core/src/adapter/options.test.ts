// The error for an option no adapter knows lists the known ones: each name once, whichever peer's
// spelling the adapter also takes (a peer's names repeat some of ours: max, timeWindow, ban).
import { resolveHttpOptions } from './options.js';

describe('an unknown option', () => {
  it.each([
    ['no peer', {}],
    ['express-rate-limit', { peer: 'express-rate-limit', peers: ['windowMs', 'limit', 'max', 'keyGenerator'] }],
    ['@fastify/rate-limit', { peer: '@fastify/rate-limit', peers: ['max', 'timeWindow'] }],
  ] as const)('is refused with a list that names each known option once (%s)', (_peer, adapter) => {
    let message = '';
    try {
      resolveHttpOptions({ policy: '1/1m', qqqqqqqqqqqq: 1 } as never, adapter);
    } catch (error) {
      message = (error as Error).message;
    }
    const known = /\(known: ([^)]*)\)/.exec(message)?.[1]?.split(', ') ?? [];
    expect(known).toContain('policy');
    expect(known.filter((name, i) => known.indexOf(name) !== i)).toEqual([]);
  });
});
