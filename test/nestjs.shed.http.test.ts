// Load shedding in @sluice/nestjs over real HTTP on 127.0.0.1, on platform-express and platform-fastify alike:
// SluiceModule.forRoot({ shed }) and app.use(shed()) answer 503 with Retry-After and problem+json when no slot
// is left; the slot comes back when the response ends, when the handler throws, when the guard refuses with
// 429 and when the client leaves; the shed runs before the rate-limit guard; bad options refused by name.
import 'reflect-metadata';
import { connect } from 'node:net';
import { Controller, Get, Module, Req } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { createShedder, type Decision, type Shedder } from '@sluice/core';
import { type NestShedOptions, SkipRateLimit, SluiceModule, type SluiceModuleOptions, shed } from '@sluice/nestjs';
import { PLATFORMS, type RunningApp, startNest } from './support/nestjs-app';
import { until } from './support/until';

/** GET /slow answers once the test calls `held.open()`; `held.entered` resolves when its handler runs. hold() resets both. */
const held = { entered: Promise.resolve(), enter: () => {}, gate: Promise.resolve(), open: () => {} };
function hold(): void {
  held.entered = new Promise<void>((resolve) => {
    held.enter = resolve;
  });
  held.gate = new Promise<void>((resolve) => {
    held.open = resolve;
  });
}

@Controller()
class ShopController {
  @Get('slow')
  @SkipRateLimit()
  async slow() {
    held.enter();
    await held.gate;
    return 'ok';
  }

  @Get('fast')
  fast(@Req() req: { rateLimit?: Decision }) {
    return { remaining: req.rateLimit?.remaining ?? null };
  }

  @Get('checkout')
  @SkipRateLimit()
  checkout() {
    return 'paid';
  }

  @Get('throws')
  @SkipRateLimit()
  throws() {
    throw new Error('the handler failed');
  }
}

const running: RunningApp[] = [];
const shedders: Shedder[] = [];
afterEach(async () => {
  held.open();
  await Promise.all(running.splice(0).map((r) => r.close()));
  for (const s of shedders.splice(0)) s.close();
});

/** A shedder of a fixed limit, closed after the test. */
function fixed(limit: number, options: Omit<NestShedOptions, 'limit' | 'priority' | 'shedder'> = {}): Shedder {
  const s = createShedder({ limit: { initial: limit, min: limit, max: limit }, ...options });
  shedders.push(s);
  return s;
}

describe.each(PLATFORMS)('shedding in @sluice/nestjs on platform-%s', (platform) => {
  const start = async (options: SluiceModuleOptions, setup?: Parameters<typeof startNest>[1]['setup']) => {
    hold();
    const r = await startNest(platform, { imports: [SluiceModule.forRoot(options)], controllers: [ShopController], setup });
    running.push(r);
    return r;
  };

  it('SluiceModule.forRoot({ shed }): over the limit, 503 with Retry-After and problem+json; the slot comes back when the response ends', async () => {
    const shedder = fixed(1);
    const { url } = await start({ shed: { shedder } });
    const first = fetch(`${url}/slow`);
    await held.entered;
    expect(shedder.inFlight).toBe(1);
    const refused = await fetch(`${url}/fast`);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(await refused.json()).toMatchObject({ status: 503, title: 'Service Unavailable' });
    held.open();
    expect((await first).status).toBe(200);
    await until(() => shedder.inFlight, 0);
    expect((await fetch(`${url}/fast`)).status).toBe(200);
  });

  it('the shed runs before the rate-limit guard: a shed request is not charged to the rate limit', async () => {
    const shedder = fixed(1);
    const { url } = await start({ policy: '3/1m', shed: { shedder } });
    const first = fetch(`${url}/slow`);
    await held.entered;
    expect((await fetch(`${url}/fast`)).status).toBe(503);
    expect((await fetch(`${url}/fast`)).status).toBe(503);
    held.open();
    await first;
    await until(() => shedder.inFlight, 0);
    const admitted = await fetch(`${url}/fast`);
    expect(await admitted.json()).toEqual({ remaining: 2 }); // the first of 3: neither 503 reached the guard
  });

  it('a request the guard refuses with 429 does not keep its slot', async () => {
    const shedder = fixed(1);
    const { url } = await start({ policy: '1/1m', shed: { shedder } });
    expect((await fetch(`${url}/fast`)).status).toBe(200);
    const limited = await fetch(`${url}/fast`);
    expect(limited.status).toBe(429);
    await limited.text();
    await until(() => shedder.inFlight, 0);
    const slow = fetch(`${url}/slow`);
    await held.entered; // the only slot was free
    held.open();
    expect((await slow).status).toBe(200);
  });

  it('a handler that throws gives its slot back (500 from Nest)', async () => {
    const shedder = fixed(1);
    const { url } = await start({ shed: { shedder } });
    const failed = await fetch(`${url}/throws`);
    expect(failed.status).toBe(500);
    await until(() => shedder.inFlight, 0);
    expect((await fetch(`${url}/fast`)).status).toBe(200);
  });

  it('a client that leaves mid-request gives its slot back while the handler still waits (a real socket destroyed)', async () => {
    const shedder = fixed(1);
    const { url } = await start({ shed: { shedder } });
    const socket = connect(Number(new URL(url).port), '127.0.0.1');
    socket.on('error', () => {});
    socket.write('GET /slow HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    await held.entered;
    expect(shedder.inFlight).toBe(1);
    socket.destroy();
    await until(() => shedder.inFlight, 0);
    expect((await fetch(`${url}/fast`)).status).toBe(200);
  });

  it("priority(req) sees the request's path: the critical reserve is kept for /checkout", async () => {
    const shedder = fixed(2, { reserve: { critical: 0.5, normal: 0 } });
    const { url } = await start({ shed: { shedder, priority: (req) => (req.url?.startsWith('/checkout') ? 'critical' : 'normal') } });
    const first = fetch(`${url}/slow`);
    await held.entered;
    expect((await fetch(`${url}/fast`)).status).toBe(503);
    expect((await fetch(`${url}/checkout`)).status).toBe(200);
    held.open();
    await first;
  });

  it("a priority(req) that throws reaches Nest's error path (500) and holds no slot", async () => {
    const shedder = fixed(1);
    const { url } = await start({
      shed: {
        shedder,
        priority: (req) => {
          if (req.headers['x-priority'] === 'throw') throw new Error('a priority function that throws');
          return 'normal';
        },
      },
    });
    expect((await fetch(`${url}/fast`, { headers: { 'x-priority': 'throw' } })).status).toBe(500);
    expect(shedder.inFlight).toBe(0);
    expect((await fetch(`${url}/fast`)).status).toBe(200);
  });

  it('app.use(shed()) sheds the same way, and gives the slot back', async () => {
    const shedder = fixed(1);
    const { url } = await start({}, (app) => app.use(shed({ shedder })));
    const first = fetch(`${url}/slow`);
    await held.entered;
    const refused = await fetch(`${url}/fast`);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    held.open();
    expect((await first).status).toBe(200);
    await until(() => shedder.inFlight, 0);
    expect((await fetch(`${url}/fast`)).status).toBe(200);
  });

  it("forRootAsync: the factory's shed option sheds", async () => {
    const shedder = fixed(1);
    hold();
    const r = await startNest(platform, {
      imports: [SluiceModule.forRootAsync({ useFactory: async () => ({ shed: { shedder } }) })],
      controllers: [ShopController],
    });
    running.push(r);
    const first = fetch(`${r.url}/slow`);
    await held.entered;
    expect((await fetch(`${r.url}/fast`)).status).toBe(503);
    held.open();
    await first;
    await until(() => shedder.inFlight, 0);
  });
});

describe('bad shed options are refused at registration, by name', () => {
  const refused = (options: unknown, name: RegExp) => {
    expect(() => SluiceModule.forRoot(options as SluiceModuleOptions)).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_OPTION', message: expect.stringMatching(name) }),
    );
  };

  it('SluiceModule.forRoot throws ERR_SLUICE_OPTION naming the option', () => {
    refused({ shed: { maxWait: 'soon' } }, /maxWait/);
    refused({ shed: { limit: { initial: 0 } } }, /limit\.initial/);
    refused({ shed: { priority: 'critical' } }, /priority/);
    refused({ shed: { targetDelay: -1 } }, /targetDelay/);
    refused({ shed: { shedder: createShedder(), maxWait: '1s' } }, /maxWait/);
    refused({ shed: true }, /shed/);
    refused({ shedd: {} }, /shedd.*did you mean shed/);
  });

  it('shed() throws ERR_SLUICE_OPTION naming the option', () => {
    expect(() => shed({ maxWait: 'soon' as never })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_OPTION', message: expect.stringMatching(/maxWait/) }),
    );
  });

  it("forRootAsync: a bad shed option from the factory fails the app's creation, naming it", async () => {
    @Module({ imports: [SluiceModule.forRootAsync({ useFactory: () => ({ shed: { reserve: { critical: 2 } } }) })] })
    class BadModule {}
    await expect(NestFactory.create(BadModule, { logger: false, abortOnError: false })).rejects.toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_OPTION', message: expect.stringMatching(/reserve\.critical/) }),
    );
  });
});
