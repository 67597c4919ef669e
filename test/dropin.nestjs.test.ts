// sluiceThrottlerStorage answers as @nestjs/throttler's own storage does. Differential: each scenario runs on two
// real Nest apps with @nestjs/throttler's module and guard, one on its ThrottlerStorageService (in memory) and one
// on sluiceThrottlerStorage, request by request in lockstep, comparing every status and rate-limit header. Then
// two instances on one Redis: exact, where two instances of the in-memory storage count double.
import 'reflect-metadata';
import { Controller, Get } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { Throttle, ThrottlerGuard, ThrottlerModule, type ThrottlerModuleOptions, ThrottlerStorageService } from '@nestjs/throttler';
import { memoryStore, redisStore } from '@sluice/core';
import { sluiceThrottlerStorage } from '@sluice/nestjs';
import type Redis from 'ioredis';
import { PLATFORMS, type Platform, type RunningApp, startNest } from './support/nestjs-app';
import { uniquePrefix } from './support/redis';
import { type RedisWithClient, startRedisWithClient, stopRedisWithClient } from './support/redis-client';

let redis: RedisWithClient;
const running: RunningApp[] = [];
const clients: Redis[] = [];
beforeAll(async () => {
  redis = await startRedisWithClient();
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.close()));
  for (const c of clients.splice(0)) c.disconnect();
});
afterAll(() => stopRedisWithClient(redis));

@Controller()
class Routes {
  @Get('a')
  a() {
    return 'a';
  }

  @Get('b')
  @Throttle({ default: { limit: 1, ttl: 60_000 } })
  b() {
    return 'b';
  }
}

type Storage = NonNullable<Exclude<ThrottlerModuleOptions, unknown[]>['storage']>;

async function appWith(platform: Platform, throttlers: ThrottlerModuleOptions, storage: Storage): Promise<string> {
  const options = Array.isArray(throttlers) ? { throttlers, storage } : { ...throttlers, storage };
  const r = await startNest(platform, {
    imports: [ThrottlerModule.forRoot(options)],
    controllers: [Routes],
    providers: [{ provide: APP_GUARD, useClass: ThrottlerGuard }],
  });
  running.push(r);
  return r.url;
}

/** A response as compared: its status and its rate-limit headers (@nestjs/throttler's X-RateLimit-*, Retry-After). */
async function seen(res: Response): Promise<Record<string, string | number>> {
  const out: Record<string, string | number> = { status: res.status };
  res.headers.forEach((value, name) => {
    if (/^(x-ratelimit|retry-after)/i.test(name)) out[name] = value;
  });
  out.body = await res.text();
  return out;
}

/** One step: wait `wait` ms, then `n` requests to `path`, one after another. */
type Step = { wait?: number; path: string; n: number };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `steps` on both apps in lockstep; resolves to what each saw. */
async function both(urls: [string, string], steps: Step[]) {
  const seenBy: [unknown[], unknown[]] = [[], []];
  for (const step of steps) {
    if (step.wait) await sleep(step.wait);
    for (let i = 0; i < step.n; i++) {
      const [x, y] = await Promise.all(urls.map((url) => fetch(`${url}${step.path}`).then(seen)));
      seenBy[0].push({ path: step.path, ...x });
      seenBy[1].push({ path: step.path, ...y });
    }
  }
  return seenBy;
}

const SCENARIOS: Array<{ name: string; throttlers: ThrottlerModuleOptions; steps: Step[] }> = [
  {
    name: 'one throttler: counting, the 429, the headers; a route with @Throttle of its own',
    throttlers: [{ ttl: 60_000, limit: 3 }],
    steps: [
      { path: '/a', n: 5 },
      { path: '/b', n: 3 },
    ],
  },
  {
    name: 'named throttlers: each its own headers, suffixed with its name',
    throttlers: [
      { name: 'short', ttl: 500, limit: 2 },
      { name: 'long', ttl: 60_000, limit: 4 },
    ],
    steps: [
      { path: '/a', n: 3 },
      { wait: 600, path: '/a', n: 3 },
    ],
  },
  {
    name: 'blockDuration: a key stays blocked past its hits, then counts from one',
    throttlers: [{ ttl: 400, limit: 2, blockDuration: 1000 }],
    steps: [
      { path: '/a', n: 3 },
      { wait: 500, path: '/a', n: 1 },
      { wait: 700, path: '/a', n: 3 },
    ],
  },
  {
    name: 'blockDuration 0: a request over the limit waits for the oldest hit to leave, uncounted',
    throttlers: [{ ttl: 400, limit: 2, blockDuration: 0 }],
    steps: [
      { path: '/a', n: 3 },
      { wait: 450, path: '/a', n: 3 },
    ],
  },
];

describe.each(PLATFORMS)("@nestjs/throttler's storage and sluiceThrottlerStorage answer alike (platform-%s)", (platform) => {
  it.each(SCENARIOS)('$name, in memory', async ({ throttlers, steps }) => {
    const urls: [string, string] = [
      await appWith(platform, throttlers, new ThrottlerStorageService()),
      await appWith(platform, throttlers, sluiceThrottlerStorage({ store: memoryStore() })),
    ];
    const [theirs, ours] = await both(urls, steps);
    expect(ours).toEqual(theirs);
    // The scenario refused something, or it compared nothing of interest.
    expect(theirs.some((r) => (r as { status: number }).status === 429)).toBe(true);
  });

  it.each(SCENARIOS)('$name, on Redis', async ({ throttlers, steps }) => {
    const client = redis.client.duplicate();
    clients.push(client);
    const urls: [string, string] = [
      await appWith(platform, throttlers, new ThrottlerStorageService()),
      await appWith(platform, throttlers, sluiceThrottlerStorage({ store: redisStore({ client }), prefix: uniquePrefix(), timeout: 5000 })),
    ];
    const [theirs, ours] = await both(urls, steps);
    expect(ours).toEqual(theirs);
  });
});

describe('two instances on one Redis', () => {
  const throttlers = [{ ttl: 60_000, limit: 10 }];

  it("@nestjs/throttler's in-memory storage counts per instance: two admit double", async () => {
    const urls = [
      await appWith('express', throttlers, new ThrottlerStorageService()),
      await appWith('express', throttlers, new ThrottlerStorageService()),
    ];
    const statuses = [];
    for (let i = 0; i < 30; i++) statuses.push((await fetch(`${urls[i % 2]}/a`)).status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(20);
  });

  it.each(PLATFORMS)(
    'sluiceThrottlerStorage on one Redis: 50 concurrent requests on one key admit exactly the limit (platform-%s)',
    async (platform) => {
      const prefix = uniquePrefix();
      const urls: string[] = [];
      for (let i = 0; i < 2; i++) {
        const client = redis.client.duplicate();
        clients.push(client);
        urls.push(await appWith(platform, throttlers, sluiceThrottlerStorage({ store: redisStore({ client }), prefix, timeout: 5000 })));
      }
      const responses = await Promise.all(Array.from({ length: 50 }, (_, i) => fetch(`${urls[i % 2]}/a`)));
      const statuses = responses.map((r) => r.status);
      expect(statuses.filter((s) => s === 200)).toHaveLength(10);
      expect(statuses.filter((s) => s === 429)).toHaveLength(40);
      // The block holds on both instances: the key stays refused.
      expect((await fetch(`${urls[0]}/a`)).status).toBe(429);
      expect((await fetch(`${urls[1]}/a`)).status).toBe(429);
    },
  );
});

describe('sluiceThrottlerStorage refuses bad options by name', () => {
  it('an option it does not take', () => {
    expect(() => sluiceThrottlerStorage({ policy: '1/1m' } as never)).toThrow(expect.objectContaining({ code: 'ERR_SLUICE_OPTION' }));
    expect(() => sluiceThrottlerStorage({ stor: memoryStore() } as never)).toThrow(/stor .*did you mean store/);
    expect(() => sluiceThrottlerStorage({ timeout: -1 })).toThrow(/timeout/);
  });
});
