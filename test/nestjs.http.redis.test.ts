// @sluice/nestjs on HTTP, on platform-express and platform-fastify alike: the global guard and the per-controller
// one, @RateLimit on a class and a handler (the handler's wins), @SkipRateLimit, request.rateLimit, the 429 as
// RateLimitedException through Nest's filters, bad options at registration, a key that throws; and two app
// instances on one Redis, exact. Real servers and a real Redis.
import 'reflect-metadata';
import { type ArgumentsHost, Catch, Controller, type ExceptionFilter, Get, Module, Post, Req, UseGuards } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { type Decision, type PolicyInput, redisStore, SluiceError } from '@sluice/core';
import { RateLimit, RateLimitedException, SkipRateLimit, SluiceGuard, SluiceModule } from '@sluice/nestjs';
import type Redis from 'ioredis';
import { PLATFORMS, type RunningApp, startNest } from './support/nestjs-app';
import { uniquePrefix } from './support/redis';
import { type RedisWithClient, startRedisWithClient, stopRedisWithClient } from './support/redis-client';
import { until } from './support/until';

let redis: RedisWithClient;
const running: RunningApp[] = [];
beforeAll(async () => {
  redis = await startRedisWithClient();
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.close()));
});
afterAll(() => stopRedisWithClient(redis));

@Controller('items')
class ItemsController {
  @Get()
  list(@Req() req: { rateLimit?: Decision }) {
    return { remaining: req.rateLimit?.remaining ?? null };
  }

  @Get('health')
  @SkipRateLimit()
  health(@Req() req: { rateLimit?: Decision }) {
    return { decided: req.rateLimit !== undefined };
  }
}

@Controller('auth')
@RateLimit('3/1m')
class AuthController {
  @Post('login')
  @RateLimit('1/1m')
  login() {
    return 'in';
  }

  @Post('logout')
  logout() {
    return 'out';
  }
}

/** The statuses of `n` requests to `url`, one after another. */
async function statusesOf(url: string, n: number, init?: RequestInit): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < n; i++) {
    const res = await fetch(url, init);
    await res.text();
    statuses.push(res.status);
  }
  return statuses;
}

describe.each(PLATFORMS)('@sluice/nestjs on platform-%s', (platform) => {
  const start = async (spec: Parameters<typeof startNest>[1]) => {
    const r = await startNest(platform, spec);
    running.push(r);
    return r;
  };

  it("the global guard limits every handler on one counter per client; request.rateLimit holds the Decision; the 429 is the problem body as Nest's JSON, with the headers", async () => {
    const { url } = await start({ imports: [SluiceModule.forRoot({ policy: '2/1m' })], controllers: [ItemsController] });
    const first = await fetch(`${url}/items`);
    expect(first.status).toBe(200);
    expect(await first.json()).toEqual({ remaining: 1 });
    expect(first.headers.get('ratelimit-policy')).toBe('"2-per-60s";q=2;w=60');
    expect(first.headers.get('ratelimit')).toMatch(/^"2-per-60s";r=1;t=\d+$/);
    expect((await fetch(`${url}/items`)).status).toBe(200);
    const limited = await fetch(`${url}/items`);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('content-type')).toMatch(/^application\/json/);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await limited.json()).toMatchObject({ title: 'Too Many Requests', status: 429, 'violated-policies': ['2-per-60s'] });
  });

  it('@SkipRateLimit: no decision, no header, never limited', async () => {
    const { url } = await start({ imports: [SluiceModule.forRoot({ policy: '1/1m' })], controllers: [ItemsController] });
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${url}/items/health`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ decided: false });
      expect(res.headers.get('ratelimit')).toBeNull();
    }
  });

  it("@RateLimit on a class counts each handler on its own; a handler's own @RateLimit wins over its class's", async () => {
    const { url } = await start({ imports: [SluiceModule.forRoot()], controllers: [AuthController, ItemsController] });
    expect(await statusesOf(`${url}/auth/login`, 2, { method: 'POST' })).toEqual([201, 429]);
    expect(await statusesOf(`${url}/auth/logout`, 4, { method: 'POST' })).toEqual([201, 201, 201, 429]);
    // A module without a policy limits only the decorated handlers.
    expect(await statusesOf(`${url}/items`, 3)).toEqual([200, 200, 200]);
  });

  it("global: false limits only where @UseGuards(SluiceGuard) is, and the app's exception filter shapes the 429", async () => {
    @Controller('guarded')
    @UseGuards(SluiceGuard)
    class Guarded {
      @Get()
      get() {
        return 'ok';
      }
    }
    @Catch(RateLimitedException)
    class Filter implements ExceptionFilter {
      catch(e: RateLimitedException, host: ArgumentsHost) {
        const res = host.switchToHttp().getResponse();
        const body = JSON.stringify({ slowDown: true, retryAfterMs: e.decision.retryAfterMs, status: e.getStatus() });
        if (typeof res.code === 'function') res.code(429).header('content-type', 'application/json').send(body);
        else res.status(429).type('application/json').send(body);
      }
    }
    const { url } = await start({
      imports: [SluiceModule.forRoot({ policy: '1/1m', global: false })],
      controllers: [Guarded, ItemsController],
      setup: (app) => app.useGlobalFilters(new Filter()),
    });
    expect(await statusesOf(`${url}/items`, 2)).toEqual([200, 200]);
    expect((await fetch(`${url}/guarded`)).status).toBe(200);
    const limited = await fetch(`${url}/guarded`);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).not.toBeNull();
    expect(await limited.json()).toMatchObject({ slowDown: true, status: 429 });
  });

  it('the global guard and @UseGuards(SluiceGuard) on one handler decide once', async () => {
    @Controller('twice')
    @UseGuards(SluiceGuard)
    class Twice {
      @Get()
      get(@Req() req: { rateLimit?: Decision }) {
        return { remaining: req.rateLimit?.remaining };
      }
    }
    const { url } = await start({ imports: [SluiceModule.forRoot({ policy: '3/1m' })], controllers: [Twice] });
    expect(await (await fetch(`${url}/twice`)).json()).toEqual({ remaining: 2 });
    expect(await statusesOf(`${url}/twice`, 3)).toEqual([200, 200, 429]);
  });

  it('forRootAsync takes the options from a factory with injections', async () => {
    const CONFIG = Symbol('config');
    @Module({ providers: [{ provide: CONFIG, useValue: { rate: '1/1m' } }], exports: [CONFIG] })
    class ConfigModule {}
    const { url } = await start({
      imports: [
        SluiceModule.forRootAsync({
          imports: [ConfigModule],
          inject: [CONFIG],
          useFactory: (config: { rate: PolicyInput }) => ({ policy: config.rate }),
        }),
      ],
      controllers: [ItemsController],
    });
    expect(await statusesOf(`${url}/items`, 2)).toEqual([200, 429]);
  });

  const badKeys: Array<[string, () => string]> = [
    [
      'throws',
      () => {
        throw new Error('no user');
      },
    ],
    ['returns nothing', () => undefined as unknown as string],
  ];
  it.each(badKeys)("a key that %s reaches Nest's error path as a SluiceError: a 500, never a hang", async (_what, key) => {
    const errors: unknown[] = [];
    @Catch()
    class All implements ExceptionFilter {
      catch(e: unknown, host: ArgumentsHost) {
        errors.push(e);
        const res = host.switchToHttp().getResponse();
        if (typeof res.code === 'function') res.code(500).send('failed');
        else res.status(500).send('failed');
      }
    }
    const { url } = await start({
      imports: [SluiceModule.forRoot({ policy: '5/1m', key })],
      controllers: [ItemsController],
      setup: (app) => app.useGlobalFilters(new All()),
    });
    expect((await fetch(`${url}/items`)).status).toBe(500);
    expect(errors[0]).toBeInstanceOf(SluiceError);
    expect(errors[0]).toMatchObject({ code: 'ERR_SLUICE_KEY' });
  });

  it('skipFailedRequests: a request whose response failed is refunded once the response ends (settle runs after it)', async () => {
    @Controller('flaky')
    class Flaky {
      @Get()
      @RateLimit('1/1m', { skipFailedRequests: true })
      get(): string {
        throw new Error('down');
      }
    }
    const { url } = await start({ imports: [SluiceModule.forRoot()], controllers: [Flaky] });
    expect(await statusesOf(`${url}/flaky`, 1)).toEqual([500]);
    // The refund lands once the response closed: a request right after may still be refused, a later one passes.
    await until(
      () => statusesOf(`${url}/flaky`, 1),
      (s) => s[0] === 500,
      { withinMs: 5000, what: 'the failed request refunded' },
    );
  });

  it('X-Forwarded-For on a platform that trusts no proxy is reported once, naming the fix', async () => {
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      const { url } = await start({ imports: [SluiceModule.forRoot({ policy: '5/1m' })], controllers: [ItemsController] });
      for (let i = 0; i < 2; i++) await (await fetch(`${url}/items`, { headers: { 'x-forwarded-for': '203.0.113.7' } })).text();
      expect(warn).toHaveBeenCalledTimes(1);
      expect(String(warn.mock.calls[0]?.[0])).toMatch(platform === 'express' ? /trust proxy/ : /trustProxy/);
    } finally {
      warn.mockRestore();
    }
  });

  it('two app instances on one Redis: 50 concurrent requests on one key admit exactly the limit', async () => {
    const prefix = uniquePrefix();
    const urls: string[] = [];
    for (let i = 0; i < 2; i++) {
      const client: Redis = redis.client.duplicate();
      const store = redisStore({ client });
      const r = await start({
        imports: [SluiceModule.forRoot({ policy: '20/1h', store, prefix, timeout: 5000, key: () => 'one-key' })],
        controllers: [ItemsController],
      });
      running.push({ ...r, close: async () => void client.disconnect() });
      urls.push(r.url);
    }
    const statuses = await Promise.all(Array.from({ length: 50 }, (_, i) => fetch(`${urls[i % 2]}/items`).then((r) => r.status)));
    expect(statuses.filter((s) => s === 200)).toHaveLength(20);
    expect(statuses.filter((s) => s === 429)).toHaveLength(30);
  });
});

describe('bad options are refused at registration, by name', () => {
  it('forRoot throws ERR_SLUICE_OPTION naming the option', () => {
    expect(() => SluiceModule.forRoot({ policy: '5/1m', statusCode: 200 })).toThrow(expect.objectContaining({ code: 'ERR_SLUICE_OPTION' }));
    expect(() => SluiceModule.forRoot({ policy: '5/1m', statusCode: 200 })).toThrow(/statusCode/);
    expect(() => SluiceModule.forRoot({ policy: '5/1m', globl: false } as never)).toThrow(/globl.*did you mean global/);
    expect(() => SluiceModule.forRoot({ global: 'yes' } as never)).toThrow(/global/);
    expect(() => SluiceModule.forRoot({ policy: 'lots' as PolicyInput })).toThrow(/policy/);
  });

  it('a bad @RateLimit option throws ERR_SLUICE_OPTION when the app initializes, naming it', async () => {
    @Controller()
    class Bad {
      @Get()
      @RateLimit('5/1m', { ipv6Subnet: 200 })
      get() {
        return 'ok';
      }
    }
    @Module({ imports: [SluiceModule.forRoot()], controllers: [Bad] })
    class BadModule {}
    const app = await NestFactory.create(BadModule, { logger: false, abortOnError: false });
    await expect(app.init()).rejects.toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_OPTION', message: expect.stringMatching(/ipv6Subnet/) }),
    );
    await app.close();
  });
});
