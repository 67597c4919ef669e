// webSocketLimit() around Hono's upgradeWebSocket on @hono/node-ws: real WebSockets to a real @hono/node-server,
// counting in memory and in Redis. A message over the limit never reaches onMessage; the socket closes with 1008
// or the message is dropped; the key is the user's or the connection's address; a flood waits on no one else.
import type { AddressInfo } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import { createNodeWebSocket } from '@hono/node-ws';
import { memoryStore, redisStore, SluiceError, type Store } from '@sluice/core';
import { type WebSocketLimitOptions, webSocketLimit } from '@sluice/hono';
import { Hono } from 'hono';
import WebSocket from 'ws';
import { uniquePrefix } from './support/redis';
import { type RedisWithClient, startRedisWithClient, stopRedisWithClient } from './support/redis-client';

let redis: RedisWithClient;
const closers: Array<() => Promise<void>> = [];
beforeAll(async () => {
  redis = await startRedisWithClient();
});
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});
afterAll(() => stopRedisWithClient(redis));

interface Server {
  url: string;
  /** The messages onMessage received, as `user:data`, in order. */
  handled: string[];
  errors: unknown[];
}

/** An app whose /ws echoes each message it handles, behind webSocketLimit(options); ?user= names the user. */
async function start(options: WebSocketLimitOptions): Promise<Server> {
  const handled: string[] = [];
  const errors: unknown[] = [];
  const app = new Hono();
  const { upgradeWebSocket, injectWebSocket } = createNodeWebSocket({ app });
  app.onError((error, c) => {
    errors.push(error);
    return c.text('failed', 500);
  });
  app.get(
    '/ws',
    upgradeWebSocket(
      webSocketLimit(options)((c) => ({
        onMessage(event, ws) {
          handled.push(`${c.req.query('user')}:${event.data}`);
          ws.send(`echo ${event.data}`);
        },
      })),
    ),
  );
  const server = createAdaptorServer({ fetch: app.fetch });
  injectWebSocket(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(
    () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        (server as unknown as { closeAllConnections(): void }).closeAllConnections();
      }),
  );
  return { url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/ws`, handled, errors };
}

interface Client {
  ws: WebSocket;
  echoes: string[];
  /** Resolves with the close code and reason. */
  closed: Promise<{ code: number; reason: string }>;
  /** Resolves once `n` echoes came. */
  echoed(n: number): Promise<void>;
}

async function connect(url: string, user?: string): Promise<Client> {
  const ws = new WebSocket(user === undefined ? url : `${url}?user=${user}`);
  const echoes: string[] = [];
  const waiting: Array<[number, () => void]> = [];
  ws.on('message', (data) => {
    echoes.push(String(data));
    for (const [n, done] of waiting) if (echoes.length >= n) done();
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) => {
    ws.on('close', (code, reason) => resolve({ code, reason: String(reason) }));
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  closers.push(async () => ws.terminate());
  return {
    ws,
    echoes,
    closed,
    echoed: (n) => (echoes.length >= n ? Promise.resolve() : new Promise((resolve) => waiting.push([n, resolve]))),
  };
}

const sendAll = (client: Client, count: number, tag = 'm') => {
  for (let i = 1; i <= count; i++) client.ws.send(`${tag}${i}`);
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each<[string, () => Partial<WebSocketLimitOptions>]>([
  ['memory', () => ({ store: memoryStore() })],
  ['Redis', () => ({ store: redisStore({ client: redis.client }) as Store, prefix: uniquePrefix(), timeout: 5000 })],
])('webSocketLimit on the %s store', (_name, storeOptions) => {
  it('a message over the limit never reaches onMessage, and the socket closes with 1008; the rest in order', async () => {
    const server = await start({ ...storeOptions(), policy: '3/1m', key: (c) => c.req.query('user') ?? 'anon' });
    const client = await connect(server.url, 'ann');
    sendAll(client, 5);
    const { code, reason } = await client.closed;
    expect(code).toBe(1008);
    expect(reason).toMatch(/^rate limit "3-per-60s" exceeded; retry in \d+ s$/);
    expect(server.handled).toEqual(['ann:m1', 'ann:m2', 'ann:m3']);
    expect(client.echoes).toEqual(['echo m1', 'echo m2', 'echo m3']);
  });

  it("onLimited 'drop': a message over the limit is dropped and the socket stays open", async () => {
    const server = await start({ ...storeOptions(), policy: '3/1m', key: () => 'k', onLimited: 'drop' });
    const client = await connect(server.url, 'ann');
    sendAll(client, 5);
    await client.echoed(3);
    await sleep(200); // a fourth echo would have come by now
    expect(client.echoes).toEqual(['echo m1', 'echo m2', 'echo m3']);
    expect(client.ws.readyState).toBe(WebSocket.OPEN);
    expect(server.handled).toHaveLength(3);
  });

  it("key(c): a user's five tabs share one budget", async () => {
    const server = await start({ ...storeOptions(), policy: '3/1m', key: (c) => `user:${c.req.query('user')}`, onLimited: 'drop' });
    const tabs = await Promise.all(Array.from({ length: 5 }, () => connect(server.url, 'ann')));
    for (const tab of tabs) tab.ws.send('hello');
    const other = await connect(server.url, 'bob');
    other.ws.send('hello');
    await other.echoed(1);
    await sleep(200);
    expect(server.handled.filter((m) => m.startsWith('ann:'))).toHaveLength(3);
    expect(server.handled.filter((m) => m.startsWith('bob:'))).toHaveLength(1);
  });

  it("without key, the connection's address is the key: two sockets from one address share a budget", async () => {
    const server = await start({ ...storeOptions(), policy: '2/1m', onLimited: 'drop' });
    const [a, b] = [await connect(server.url, 'a'), await connect(server.url, 'b')];
    a.ws.send('x');
    await a.echoed(1);
    b.ws.send('x');
    await b.echoed(1);
    a.ws.send('y');
    b.ws.send('y');
    await sleep(200);
    expect(server.handled).toEqual(['a:x', 'b:x']);
  });

  it('a flooding client is limited without blocking the others', async () => {
    // The flooder's decisions wait in the store until the calm client was answered: its answer cannot queue behind them.
    const { store, ...rest } = storeOptions();
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const inner = store as Store;
    const holding: Store = {
      local: inner.local,
      decide: async (request) => {
        if (request.keys.some((k) => k.includes('flood'))) await held;
        return inner.decide(request);
      },
      reset: (keys) => inner.reset(keys),
      close: () => inner.close(),
    };
    const server = await start({ ...rest, store: holding, policy: '10/1m', key: (c) => c.req.query('user') ?? 'anon', onLimited: 'drop' });
    const flooder = await connect(server.url, 'flood');
    const calm = await connect(server.url, 'calm');
    sendAll(flooder, 2000, 'f');
    calm.ws.send('c1');
    await calm.echoed(1);
    expect(server.handled).toEqual(['calm:c1']);
    release();
    await flooder.echoed(10);
    await sleep(300); // an eleventh echo would have come by now
    expect(flooder.echoes).toEqual(Array.from({ length: 10 }, (_, i) => `echo f${i + 1}`));
    expect(flooder.ws.readyState).toBe(WebSocket.OPEN);
  });
});

describe('webSocketLimit: bad input', () => {
  it('a key that throws fails the upgrade through app.onError as a SluiceError, the original as its cause', async () => {
    const server = await start({
      policy: '3/1m',
      key: () => {
        throw new Error('no session');
      },
    });
    await expect(connect(server.url, 'ann')).rejects.toThrow(/Unexpected server response: 500/);
    expect(server.errors).toHaveLength(1);
    expect(server.errors[0]).toBeInstanceOf(SluiceError);
    expect(server.errors[0]).toMatchObject({ code: 'ERR_SLUICE_KEY', cause: new Error('no session') });
  });

  it.each([
    ['onLimited', { policy: '1/s', onLimited: 'ignore' }, /^onLimited must be 'close' or 'drop'/],
    ['headers', { policy: '1/s', headers: 'draft' }, /^headers must be absent: a WebSocket message has no HTTP request/],
    ['no policy', {}, /^policy /],
    ['key', { policy: '1/s', key: 'user' }, /^key /],
  ])('%s: ERR_SLUICE_OPTION when the limit is made, naming it', (_name, options, message) => {
    expect(() => webSocketLimit(options as never)).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_OPTION', message: expect.stringMatching(message) }),
    );
  });
});
