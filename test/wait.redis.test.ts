// limiter.wait and rateLimitedFetch across two processes on one Redis: each process runs the
// built @sluice/core (test/consumers/wait-child.cjs; `pnpm build` first). Times are Date.now() of one
// machine, read in both processes. Margins: a turn is never more than half a store round trip early (50 ms
// allowed), and may be late on a busy machine (upper bounds are a second or more past the turn).
import { type ChildProcess, fork } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { PolicyInput } from '@sluice/core';
import Redis from 'ioredis';
import { differential } from './support/differential';
import { type RedisServer, sleep, startRedis, uniquePrefix } from './support/redis';

interface Report {
  i: number;
  at: number;
  waitedMs?: number;
  code?: string;
  retryAfterMs?: number;
  status?: number;
  remaining?: number;
  reserved?: true;
  turn?: number;
}

class Child {
  readonly proc: ChildProcess;
  readonly ready: Promise<void>;
  private readonly pending = new Map<number, (r: Report) => void>();
  private readonly reserving = new Map<number, (r: Report) => void>();
  constructor(port: number, prefix: string, policy: unknown) {
    this.proc = fork(join(__dirname, 'consumers', 'wait-child.cjs'), [String(port), prefix, JSON.stringify(policy)], { timeout: 60_000 });
    this.ready = new Promise((resolve) => this.proc.once('message', () => resolve()));
    this.proc.on('message', (m) => {
      if (m === 'ready') return;
      const r = m as Report;
      if (r.reserved) {
        this.reserving.get(r.i)?.(r);
        this.reserving.delete(r.i);
        return;
      }
      this.pending.get(r.i)?.(r);
      this.pending.delete(r.i);
    });
  }
  ask(message: Record<string, unknown> & { i: number }): Promise<Report> {
    return new Promise((resolve) => {
      this.pending.set(message.i, resolve);
      this.proc.send(message);
    });
  }
  /** Sends wait `i`: `reserved` resolves with its reservation's report, `done` with its end's. */
  reserve(i: number): { reserved: Promise<Report>; done: Promise<Report> } {
    const reserved = new Promise<Report>((resolve) => this.reserving.set(i, resolve));
    return { reserved, done: this.ask({ op: 'wait', i }) };
  }
  send(message: Record<string, unknown>): void {
    this.proc.send(message);
  }
  stop(): void {
    this.proc.send({ op: 'exit', i: -1 });
  }
}

let server: RedisServer;
beforeAll(async () => {
  server = await startRedis();
});
afterAll(() => server.stop());

/** Two processes on one key under `policy`. */
async function pair(policy: unknown): Promise<[Child, Child]> {
  const prefix = uniquePrefix();
  const children: [Child, Child] = [new Child(server.port, prefix, policy), new Child(server.port, prefix, policy)];
  await Promise.all(children.map((c) => c.ready));
  // A first call loads the script: warmed up, a call reaches the store in the order it was made.
  await Promise.all(children.map((c) => c.ask({ op: 'peek', i: -2, key: 'warm-up' })));
  return children;
}

const tenPerSecond = { limit: 10, window: '1s', burst: 1 };

describe('limiter.wait across two processes', () => {
  it.each([
    ['token-bucket', tenPerSecond],
    ['sliding-window', { limit: 10, window: '1s', algorithm: 'sliding-window' }],
  ])(
    '%s: 30 waits on a 10/s policy, called in turn by two processes, go at its pace and in the order called',
    async (_name, policy) => {
      const children = await pair(policy);
      try {
        // Each call is made once the one before it has its place (its reply came): the order called is
        // the order reserved, whichever process each is in, however busy the machine.
        const t0 = Date.now();
        const turns: number[] = [];
        const ends: Promise<Report>[] = [];
        for (let i = 0; i < 30; i++) {
          const { reserved, done } = (children[i % 2] as Child).reserve(i);
          ends.push(done);
          // A wait that goes at once reports its reservation too (turn: now).
          turns.push((await reserved).turn as number);
        }
        const done = await Promise.all(ends);
        expect(done.filter((r) => r.code !== undefined)).toEqual([]);
        const at = done.map((r) => r.at);
        for (let i = 0; i < 30; i++) {
          // None goes before its turn (a timer may fire a ms early). Each turn comes after the one called
          // before it: turns are 100 ms apart on the store's clock, and a process learns its own late by
          // the time it takes to read the reply (a stall of a busy machine), so two taken out of order
          // would show a turn 100 ms before the one before it; 50 ms is allowed for a stall.
          expect(at[i]).toBeGreaterThanOrEqual((turns[i] as number) - 2);
          if (i > 0) expect(turns[i]).toBeGreaterThan((turns[i - 1] as number) - 50);
        }
        if (policy === tenPerSecond) {
          // One every 100 ms: the 30th goes 2.9 s after the first at the soonest.
          expect((at[29] as number) - t0).toBeGreaterThanOrEqual(2900 - 50);
          expect((at[29] as number) - t0).toBeLessThan(2900 + 3000);
        } else {
          // A sliding window lets 10 through in its first window, then paces the rest by the weight of the previous one.
          expect((at[29] as number) - t0).toBeGreaterThanOrEqual(1950);
          expect((at[29] as number) - t0).toBeLessThan(3000 + 3000);
        }
      } finally {
        for (const c of children) c.stop();
      }
    },
    30_000,
  );

  it('a turn past maxWait rejects at once with ERR_SLUICE_WAIT and charges nothing: the other process goes at the turn it would have had', async () => {
    // One every 2 s: a turn charged or not is 2 s apart, wider than a busy machine's delays.
    const [a, b] = await pair({ limit: 1, window: '2s', burst: 1 });
    try {
      const t0 = Date.now();
      expect((await a.ask({ op: 'wait', i: 0 })).code).toBeUndefined();
      const refused = await a.ask({ op: 'wait', i: 1, maxWait: 100 });
      expect(refused).toMatchObject({ code: 'ERR_SLUICE_WAIT' });
      expect(refused.retryAfterMs).toBeGreaterThan(100);
      expect(refused.at - t0).toBeLessThan(1900);
      // Had the refused wait been charged, this one's turn would be 4 s after t0.
      const next = await b.ask({ op: 'wait', i: 2, maxWait: '10s' });
      expect(next.code).toBeUndefined();
      expect(next.at - t0).toBeGreaterThanOrEqual(2000 - 50);
      expect(next.at - t0).toBeLessThan(3800);
    } finally {
      a.stop();
      b.stop();
    }
  });

  it('an abort before its turn gives the place back: a later wait in the other process goes a turn sooner', async () => {
    // One every 2 s: a turn given back or not is 2 s apart, wider than a busy machine's delays.
    const [a, b] = await pair({ limit: 1, window: '2s', burst: 1 });
    try {
      const t0 = Date.now();
      await a.ask({ op: 'wait', i: 0 }); // the bucket is empty: the next turn is 2 s after t0
      const aborted = a.ask({ op: 'wait', i: 1 }); // turn 2 s
      await sleep(50);
      const held = b.ask({ op: 'wait', i: 2 }); // turn 4 s
      await sleep(200);
      a.send({ op: 'abort', i: 1 });
      expect((await aborted).code).toBe('ABORTED');
      // Without the refund this one's turn would be 6 s after t0; with it, 4 s (beside the held one).
      const later = await b.ask({ op: 'wait', i: 3 });
      expect(later.code).toBeUndefined();
      expect(later.at - t0).toBeGreaterThanOrEqual(4000 - 50);
      expect(later.at - t0).toBeLessThan(5800);
      expect((await held).at - t0).toBeGreaterThanOrEqual(4000 - 50);
    } finally {
      a.stop();
      b.stop();
    }
  });
});

describe('rateLimitedFetch across two processes', () => {
  let upstream: Server;
  let url: string;
  /** What the upstream answers next, and when each request reached it (Date.now()). */
  let answers: Array<{ status: number; headers: Record<string, string> | (() => Record<string, string>) }> = [];
  let arrivals: number[] = [];
  beforeAll(async () => {
    upstream = createServer((_req, res) => {
      arrivals.push(Date.now());
      const next = answers.shift() ?? { status: 200, headers: {} };
      res.writeHead(next.status, typeof next.headers === 'function' ? next.headers() : next.headers).end();
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/items`;
  });
  afterAll(() => new Promise<void>((resolve) => upstream.close(() => resolve())));

  it.each([
    ['Retry-After', { 'Retry-After': '2' }],
    ['draft-10 RateLimit', { RateLimit: '"upstream";r=0;t=2', 'RateLimit-Policy': '"upstream";q=5;w=2' }],
    // A Unix time 3 to 4 s from the answer: the other process is held off at least 2 s of it, however late
    // the first heard the answer on a busy machine.
    ['X-RateLimit-Reset (a Unix time)', () => ({ 'X-RateLimit-Reset': String(Math.ceil(Date.now() / 1000) + 3) })],
  ])('a 429 with %s holds off the other process until the upstream resets', async (_name, headers) => {
    answers = [{ status: 429, headers }];
    arrivals = [];
    const [a, b] = await pair({ limit: 10, window: '1s' });
    try {
      expect((await a.ask({ op: 'fetch', i: 0, url })).status).toBe(429);
      const limited = arrivals[0] as number;
      const next = await b.ask({ op: 'fetch', i: 1, url });
      expect(next.status).toBe(200);
      expect((arrivals[1] as number) - limited).toBeGreaterThanOrEqual(2000 - 50);
      expect((arrivals[1] as number) - limited).toBeLessThan(7000);
    } finally {
      a.stop();
      b.stop();
    }
  });

  it('a 200 holds no one off', async () => {
    answers = [];
    arrivals = [];
    const [a, b] = await pair({ limit: 10, window: '1s' });
    try {
      expect((await a.ask({ op: 'fetch', i: 0, url })).status).toBe(200);
      expect((await b.ask({ op: 'fetch', i: 1, url })).status).toBe(200);
      // The key holds the two requests' charge and nothing more (a 429's hold charges 20 units or more).
      expect((await b.ask({ op: 'peek', i: 2, key: 'upstream' })).remaining).toBeGreaterThanOrEqual(8);
    } finally {
      a.stop();
      b.stop();
    }
  });
});

describe('the reservation: the Lua script and the memory store alike (test/support/differential.ts)', () => {
  let client: Redis;
  beforeAll(async () => {
    client = new Redis({ port: server.port });
  });
  afterAll(() => client.quit());

  it('token bucket: each reservation waits for the ones before it; past maxWait nothing is charged', async () => {
    const d = differential({ client, policy: { limit: 10, window: '1s', burst: 2 } });
    expect(await d.reserve('k', 1, 0)).toMatchObject({ allowed: true, waitMs: 0 });
    expect(await d.reserve('k', 1, 0)).toMatchObject({ allowed: true, waitMs: 0 });
    expect(await d.reserve('k', 1, 1000)).toMatchObject({ allowed: true, waitMs: 100 });
    expect(await d.reserve('k', 2, 1000)).toMatchObject({ allowed: true, waitMs: 300 });
    // Its turn would be in 400 ms: refused, and the next one's turn is still 400 ms off.
    expect(await d.reserve('k', 1, 399)).toMatchObject({ allowed: false, waitMs: 0, states: [{ retryAfterMs: 400 }] });
    d.step(50);
    expect(await d.reserve('k', 1, 1000)).toMatchObject({ allowed: true, waitMs: 350 });
    // A refund (an abort's) gives a place back.
    await d.adjust('k', -1);
    expect(await d.reserve('k', 1, 1000)).toMatchObject({ allowed: true, waitMs: 350 });
    expect((await d.peek('k')).allowed).toBe(false);
    await d.close();
  });

  it('sliding window: a reservation whose turn is in the next window counts there', async () => {
    const d = differential({ client, policy: { limit: 2, window: '1s', algorithm: 'sliding-window' }, start: 1_700_000_000_000 });
    await d.consume('k');
    await d.consume('k');
    // The window's 2 weigh until the next one: the first reservation goes at 1.5 s, the next at 2 s (this window's 2 weigh nothing then).
    expect(await d.reserve('k', 1, 5000)).toMatchObject({ allowed: true, waitMs: 1500 });
    expect(await d.reserve('k', 1, 5000)).toMatchObject({ allowed: true, waitMs: 2000 });
    // One more is refused past maxWait, and told its own turn, after theirs: at 3 s, once the 2 s one weighs 1.
    expect(await d.reserve('k', 1, 1000)).toMatchObject({ allowed: false, waitMs: 0, states: [{ retryAfterMs: 3000 }] });
    d.step(1500);
    expect((await d.peek('k')).allowed).toBe(false);
    await d.close();
  });

  it('sequences of consumes, reservations, adjustments and steps decide alike', async () => {
    const ops = [
      { kind: 'consume' as const, cost: 3 },
      { kind: 'reserve' as const, cost: 2, maxWaitMs: 5000 },
      { kind: 'reserve' as const, cost: 1.5, maxWaitMs: 100 },
      { kind: 'step' as const, ms: 333 },
      { kind: 'reserve' as const, cost: 4, maxWaitMs: 60_000 },
      { kind: 'adjust' as const, delta: -2 },
      { kind: 'consume' as const },
      { kind: 'step' as const, ms: 1250 },
      { kind: 'reserve' as const, cost: 1, maxWaitMs: 0 },
      { kind: 'peek' as const },
    ];
    const policies: (PolicyInput | PolicyInput[])[] = [
      { limit: 5, window: '1s' },
      { limit: 7, window: '2s', burst: 12.75 },
      { limit: 5, window: '1s', algorithm: 'sliding-window' as const },
      [
        { limit: 5, window: '1s' },
        { limit: 20, window: '10s', algorithm: 'sliding-window' as const },
      ],
    ];
    for (const policy of policies) {
      const d = differential({ client, policy });
      await d.run(ops);
      await d.close();
    }
  });
});
