// The kit's settling after a response, on a memory limiter and a response stand-in (an EventEmitter
// with the fields the kit reads): once per request, by 'close', aborted ones counted as failed.
// test/settle.http.redis.test.ts does the same through real servers.
import { EventEmitter } from 'node:events';
import type { LimiterEvent } from '../events.js';
import { createLimiter } from '../limiter.js';
import type { RawResponse } from './settle.js';
import { httpLimit } from './verdict.js';

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
  ])('%j throws naming the option', (options, message) => {
    expect(() => httpLimit(options as never)).toThrow(message);
  });
});

describe("a settle moves the decision's own charge (Decision.adjust)", () => {
  it('with shards: the refund goes to the shard that was charged, and the whole key is back to full', async () => {
    // Two shards of 10: a request charges 10 to one of them, and its settle refunds all of it.
    const limiter = createLimiter({ policy: '20/1h', shards: 2 });
    const limit = httpLimit<Req, Response>({ limiter, cost: 10, settle: () => 0 });
    const verdict = (await limit.check(req, 'GET /', () => req.ip))!;
    const res = new Response();
    limit.track(verdict, req, res, res);
    res.finish(200);
    await tick();
    await tick();
    // Both shards full again: two charges of 10 pass (a consume tries a second shard before it denies).
    // Had the refund missed the charged shard, the second would be denied.
    for (let i = 0; i < 2; i++) expect((await limiter.consume(req.ip, { scope: 'GET /', cost: 10 })).allowed).toBe(true);
    expect((await limiter.consume(req.ip, { scope: 'GET /', cost: 10 })).allowed).toBe(false);
  });

  it('a decision adjusts itself; a denial, a peek and a fail-open decision have nothing to adjust', async () => {
    const limiter = createLimiter({ policy: '10/1h' });
    const d = await limiter.consume('k', { cost: 4 });
    expect((await d.adjust?.(-3))?.remaining).toBe(9);
    expect((await limiter.peek('k')).adjust).toBeUndefined();
    await limiter.consume('k', { cost: 9 });
    expect((await limiter.consume('k')).adjust).toBeUndefined();
    await expect(d.adjust?.(Number.NaN)).rejects.toThrow(/delta must be a finite number/);
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
    expect((await limiter.peek(v.key, { scope: 'GET /' })).remaining).toBe(9);
  });

  it('skipFailedRequests: a success is never refunded, a failure and an abort are', async () => {
    const { request, limiter } = setup({ skipFailedRequests: true });
    const v = await request((res) => res.finish(200));
    await request((res) => res.finish(200));
    expect((await limiter.peek(v.key, { scope: 'GET /' })).remaining).toBe(8);
    await request((res) => res.finish(503));
    await request((res) => res.abort());
    expect((await limiter.peek(v.key, { scope: 'GET /' })).remaining).toBe(8);
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
