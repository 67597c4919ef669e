// The kit's settling after a response, on a memory limiter and a response stand-in (an EventEmitter
// with the fields the kit reads): once per request, by 'close', aborted ones counted as failed.
// test/settle.http.redis.test.ts does the same through real servers.
import { EventEmitter } from 'node:events';
import { httpLimit, type RawResponse } from './adapter-kit.js';
import { createLimiter } from './limiter.js';
import type { LimiterEvent } from './limiter-options.js';

class Response extends EventEmitter implements RawResponse {
  statusCode = 200;
  writableFinished = false;
  destroyed = false;
  /** The response went out, then the connection closed: 'close' after 'finish'. */
  finish(status = 200): void {
    this.statusCode = status;
    this.writableFinished = true;
    this.emit('finish');
    this.destroyed = true;
    this.emit('close');
  }
  /** The client left first. */
  abort(): void {
    this.destroyed = true;
    this.emit('close');
  }
}

const tick = () => new Promise((r) => setImmediate(r));
type Req = { ip: string };
const req: Req = { ip: '203.0.113.7' };

describe('settle options', () => {
  it.each([
    [{ policy: '3/1m', settle: 5 }, /settle must be a function/],
    [{ policy: '3/1m', skipFailedRequests: 'yes' }, /skipFailedRequests must be a boolean/],
    [{ policy: '3/1m', requestWasSuccessful: true }, /requestWasSuccessful must be a function/],
    [
      { policy: '30/1m', shards: 2, skipSuccessfulRequests: true },
      /shards must be 1 with settle, skipFailedRequests or skipSuccessfulRequests/,
    ],
  ])('%j throws naming the option', (options, message) => {
    expect(() => httpLimit(options as never)).toThrow(message);
  });
});

describe('after the response', () => {
  const setup = (options: Record<string, unknown>) => {
    const events: LimiterEvent[] = [];
    const limiter = createLimiter({ policy: '10/1h', onEvent: (e) => events.push(e) });
    const limit = httpLimit<Req, Response>({ limiter, ...options });
    const request = async (end: (res: Response) => void) => {
      const verdict = (await limit.check(req, 'GET /', () => req.ip))!;
      const res = new Response();
      limit.track(verdict, req, res, res);
      end(res);
      await tick();
      await tick();
      return verdict;
    };
    return { limiter, limit, request, events };
  };

  it('settle runs once, on close, with the response; its cost replaces the charge', async () => {
    const seen: number[] = [];
    const settle = (_req: Req, res: Response) => {
      seen.push(res.statusCode);
      return 1;
    };
    const { request, limiter } = setup({ cost: 4, settle });
    const v = await request((res) => res.finish(201));
    expect(seen).toEqual([201]);
    expect((await limiter.peek(v.key, { scope: v.scope })).remaining).toBe(9);
  });

  it('skipFailedRequests: a success is never refunded, a failure and an abort are', async () => {
    const { request, limiter } = setup({ skipFailedRequests: true });
    const v = await request((res) => res.finish(200));
    await request((res) => res.finish(200));
    expect((await limiter.peek(v.key, { scope: v.scope })).remaining).toBe(8);
    await request((res) => res.finish(503));
    await request((res) => res.abort());
    expect((await limiter.peek(v.key, { scope: v.scope })).remaining).toBe(8);
  });

  it('a response already closed when tracked (the client left while the limiter decided) is settled at once', async () => {
    const { limit, limiter } = setup({ skipFailedRequests: true });
    const verdict = (await limit.check(req, 'GET /', () => req.ip))!;
    const res = new Response();
    res.abort();
    limit.track(verdict, req, res, res);
    await tick();
    await tick();
    expect((await limiter.peek(verdict.key)).remaining).toBe(10);
  });

  it('nothing to do costs no listener', async () => {
    const { limit } = setup({});
    const verdict = (await limit.check(req, 'GET /', () => req.ip))!;
    const res = new Response();
    limit.track(verdict, req, res, res);
    expect(res.listenerCount('close')).toBe(0);
  });

  it('a throwing requestWasSuccessful is a settle-error event naming the key', async () => {
    const { request, events } = setup({
      skipFailedRequests: true,
      requestWasSuccessful: () => {
        throw new Error('no status');
      },
    });
    const v = await request((res) => res.finish(200));
    expect(events.filter((e) => e.type === 'settle-error').map((e) => [e.key, e.error?.message])).toEqual([[v.key, 'no status']]);
  });
});
