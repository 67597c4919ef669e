// Options are refused or honoured when the limiter or the middleware is built, never at request time.
// Memory store; real HTTP servers (test/support/http).
import { createLimiter, type Limiter, memoryStore, redisStore } from '@sluice/core';
import Redis from 'ioredis';
import { type Harness, harnesses, type Running, type StartOptions } from './support/http';

const open: Running[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((r) => r.close()));
});

/** The statuses of `n` GETs of `path`, one after the other. */
async function statuses(running: Running, path: string, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await running.request.get(path)).status);
  return out;
}

const OPTION = { name: 'SluiceError', code: 'ERR_SLUICE_OPTION' };

describe('unknown fields are refused everywhere', () => {
  let limiter: Limiter;
  beforeEach(() => {
    limiter = createLimiter({ policy: '10/1m' });
  });
  afterEach(() => limiter.close());

  it('refuses a misspelt consume option by name, and charges nothing', async () => {
    await expect(limiter.consume('k', { cots: 5 } as never)).rejects.toMatchObject({
      ...OPTION,
      message: expect.stringMatching(/^cots .*did you mean cost\?/),
    });
    await expect(limiter.consume('k', { polcy: '100/1m' } as never)).rejects.toMatchObject({
      ...OPTION,
      message: expect.stringMatching(/^polcy .*did you mean policy\?/),
    });
    await expect(limiter.consume('k', 5 as never)).rejects.toMatchObject({ ...OPTION, message: expect.stringMatching(/an object/) });
    expect((await limiter.peek('k')).remaining).toBe(10);
  });

  it('refuses a misspelt peek, adjust or reset option by name', async () => {
    const typo = { polcy: '100/1m' } as never;
    const named = { ...OPTION, message: expect.stringMatching(/^polcy .*did you mean policy\?/) };
    await expect(limiter.peek('k', typo)).rejects.toMatchObject(named);
    await expect(limiter.adjust('k', 3, typo)).rejects.toMatchObject(named);
    await expect(limiter.reset('k', typo)).rejects.toMatchObject(named);
    expect((await limiter.peek('k')).remaining).toBe(10);
  });

  it('refuses a store option it does not know, and options that are not an object', () => {
    expect(() => memoryStore({ maxkeys: 5 } as never)).toThrow(
      expect.objectContaining({ ...OPTION, message: expect.stringMatching(/did you mean maxKeys\?/) }),
    );
    expect(() => memoryStore(5 as never)).toThrow(expect.objectContaining(OPTION));
    expect(() => memoryStore(null as never)).toThrow(expect.objectContaining(OPTION));
    const client = new Redis({ lazyConnect: true });
    try {
      expect(() => redisStore({ client, clinet: client } as never)).toThrow(
        expect.objectContaining({ ...OPTION, message: expect.stringMatching(/^clinet .*did you mean client\?/) }),
      );
    } finally {
      client.disconnect();
    }
  });
});

describe.each(harnesses)('options on $name', (h: Harness) => {
  const start = async (options: StartOptions) => {
    const running = await h.start(options);
    open.push(running);
    return running;
  };

  describe('no option from a prototype', () => {
    it('an options object whose prototype says shadow still denies', async () => {
      const app = Object.setPrototypeOf({ policy: '2/1m', store: memoryStore() }, { shadow: true });
      const running = await start({ app, routes: [{ method: 'GET', path: '/r' }] });
      expect(await statuses(running, '/r', 3)).toEqual([200, 200, 429]);
    });

    it('Object.prototype.shadow = true turns shadow mode on nowhere', async () => {
      const proto = Object.prototype as { shadow?: boolean };
      proto.shadow = true;
      try {
        const limiter = createLimiter({ policy: '2/1m' });
        const charged = [await limiter.consume('k', { cost: 1 }), await limiter.consume('k', { cost: 1 }), await limiter.consume('k', {})];
        expect(charged.map((d) => d.allowed)).toEqual([true, true, false]);
        await limiter.close();
        const running = await start({ routes: [{ method: 'GET', path: '/r', options: JSON.parse('{ "policy": "2/1m" }') }] });
        expect(await statuses(running, '/r', 3)).toEqual([200, 200, 429]);
      } finally {
        delete proto.shadow;
      }
    });

    it('a route option "__proto__" parsed from JSON is refused by name when the route is registered', async () => {
      const config = JSON.parse('{ "__proto__": { "shadow": true }, "policy": "2/1m" }');
      await expect(start({ routes: [{ method: 'GET', path: '/r', options: config }] })).rejects.toMatchObject({
        ...OPTION,
        message: expect.stringMatching(/^__proto__ /),
      });
    });
  });

  describe('a constant cost above capacity is caught at construction', () => {
    const COST = { name: 'SluiceError', code: 'ERR_SLUICE_COST', message: expect.stringMatching(/cost 5 .*capacity 3/) };

    it('refuses cost 5 on a 3/1m policy, its own or a shared limiter’s', async () => {
      await expect(h.create({ policy: '3/1m', cost: 5 })).rejects.toMatchObject(COST);
      const shared = createLimiter({ policy: ['100/1h', '3/1m'] });
      await expect(h.create({ limiter: shared, cost: 5 })).rejects.toMatchObject(COST);
      await shared.close();
    });

    it('refuses it on a route when the route is registered', async () => {
      const app = h.name === 'fastify' ? { policy: '100/1m', cost: 5 } : undefined;
      const route = h.name === 'fastify' ? { policy: '3/1m' } : { policy: '3/1m', cost: 5 };
      await expect(start({ app, routes: [{ method: 'GET', path: '/r', options: route }] })).rejects.toMatchObject(COST);
    });

    it('takes a cost that fits, and leaves a policy of the request to the request', async () => {
      await expect(h.create({ policy: '3/1m', cost: 3 })).resolves.toBeUndefined();
      await expect(h.create({ policy: () => '3/1m', cost: 5 })).resolves.toBeUndefined();
    });
  });
});
