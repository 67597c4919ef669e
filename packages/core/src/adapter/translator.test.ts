// The kit takes a rival's spelling through a translator, and names no library: here a made-up rival whose
// `per` and `every` spell a policy and whose `who` spells a key, and whose names repeat some of ours.
import type { Decision } from '../decision.js';
import { badOption } from '../errors.js';
import { mergeHttpOptions } from './merge.js';
import { type PeerTranslator, policyPerLimit } from './translator.js';
import { httpLimit } from './verdict.js';

const rival: PeerTranslator = {
  names: ['per', 'every', 'who', 'statusCode', 'ban'],
  aliases: { policy: ['per', 'every'], key: ['who'] },
  translate(o) {
    if (o.policy !== undefined || o.limiter !== undefined) {
      if (o.per !== undefined) badOption('per', 'absent beside policy or limiter', o.per);
      return undefined;
    }
    o.policy = { limit: o.per as number, window: (o.every as number | undefined) ?? 60_000 };
    if (o.who !== undefined) o.key = o.who;
    for (const n of ['per', 'every', 'who']) delete o[n];
    return {
      headers: (d: Decision) => ({ 'x-left': String(d.remaining) }),
      respond: async (d: Decision) => ({ status: 429, contentType: 'text/plain', body: `wait ${d.retryAfterMs} ms` }),
    };
  },
};

describe('a rival spelling, through a translator', () => {
  it('is taken with its meaning: its policy, its key, its headers and its answer', async () => {
    const limit = httpLimit<{ id: string }>({ per: 1, who: (req: { id: string }) => req.id } as never, { peer: rival });
    const first = await limit.check({ id: 'a' }, 'GET /', () => undefined);
    expect(first?.headers).toEqual({ 'x-left': '0' });
    const second = await limit.check({ id: 'a' }, 'GET /', () => undefined);
    expect(second?.limited).toBe(true);
    expect((await limit.limitedResponse(second!.decision, { id: 'a' })).body).toMatch(/^wait \d+ ms$/);
  });

  it('beside sluice spelling, is what the translator says: here refused by name', () => {
    expect(() => httpLimit({ policy: '1/1m', per: 5 } as never, { peer: rival })).toThrow(/per must be absent beside policy/);
  });

  it('an unknown option is refused with a list that names each known option once', () => {
    let message = '';
    try {
      httpLimit({ policy: '1/1m', qqqqqqqqqqqq: 1 } as never, { peer: rival });
    } catch (error) {
      message = (error as Error).message;
    }
    const known = /\(known: ([^)]*)\)/.exec(message)?.[1]?.split(', ') ?? [];
    expect(known).toEqual(expect.arrayContaining(['policy', 'per', 'who', 'statusCode']));
    expect(known.filter((name, i) => known.indexOf(name) !== i)).toEqual([]);
  });

  it('policyPerLimit makes one policy per limit: the limiter reads a request policy by identity', () => {
    const pick = policyPerLimit((limit) => ({ limit, window: 1000 }));
    expect(pick(5)).toBe(pick(5));
    expect(pick(6)).not.toBe(pick(5));
  });
});

describe('mergeHttpOptions with a translator', () => {
  it("a route's key or policy, in either spelling, replaces the app's whole group; other options merge", () => {
    const who = () => 'k';
    const merge = (app: Record<string, unknown>, route: Record<string, unknown>) => mergeHttpOptions(app, route, rival);
    expect(merge({ who, failMode: 'open' }, { key: who })).toEqual({ failMode: 'open', key: who });
    expect(merge({ policy: '100/1m', failMode: 'open' }, { per: 5, every: 1000 })).toEqual({ failMode: 'open', per: 5, every: 1000 });
    expect(merge({ per: 100, failMode: 'open' }, { policy: '5/1m', failMode: 'closed' })).toEqual({ policy: '5/1m', failMode: 'closed' });
  });

  it("an app in the rival's spelling, under a route without a policy of sluice's, merges option by option", () => {
    expect(mergeHttpOptions<Record<string, unknown>>({ per: 100, every: 1000 }, { per: 5 }, rival)).toEqual({ per: 5, every: 1000 });
  });
});
