// SluiceGuard on NestJS WebSocket gateways (@nestjs/websockets), on socket.io and on ws: a message over the limit
// is not handled and the client gets an `exception` event { status: 429, retryAfterMs }; the key can be the user,
// so a user's tabs share one budget; a client that floods waits on no other; a key that throws reaches Nest's
// error path. Real servers and real clients.
import 'reflect-metadata';
import { once } from 'node:events';
import { type ExecutionContext, UseGuards } from '@nestjs/common';
import { WsAdapter } from '@nestjs/platform-ws';
import { ConnectedSocket, MessageBody, type OnGatewayConnection, SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';
import { RateLimit, SluiceGuard, SluiceModule } from '@sluice/nestjs';
import { io, type Socket } from 'socket.io-client';
import WebSocket from 'ws';
import { type RunningApp, startNest } from './support/nestjs-app';

const running: RunningApp[] = [];
const sockets: Array<{ close(): void }> = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.close();
  await Promise.all(running.splice(0).map((r) => r.close()));
});

/** The user a socket.io client named in its handshake's auth, or a ws client in its URL (kept at connection). */
function userOf(ctx: ExecutionContext): string {
  const client = ctx.switchToWs().getClient();
  const user = client.handshake?.auth?.user ?? client.user;
  if (user === 'throws') throw new Error('no such user');
  return user;
}

const handled: string[] = [];

@WebSocketGateway()
@UseGuards(SluiceGuard)
class ByUser implements OnGatewayConnection {
  handleConnection(client: { user?: string }, req?: { url?: string }) {
    // Plain ws: the upgrade request's query names the user.
    if (req?.url !== undefined) client.user = new URL(req.url, 'http://x').searchParams.get('user') ?? undefined;
  }

  @SubscribeMessage('ping')
  @RateLimit('3/1m', { key: userOf })
  ping(@MessageBody() body: string, @ConnectedSocket() _client: unknown) {
    handled.push(body);
    return { event: 'pong', data: body };
  }
}

@WebSocketGateway()
@UseGuards(SluiceGuard)
class ByAddress {
  @SubscribeMessage('hello')
  @RateLimit('1/1m')
  hello(@MessageBody() body: string) {
    handled.push(body);
    return { event: 'pong', data: body };
  }
}

beforeEach(() => {
  handled.length = 0;
});

describe('socket.io', () => {
  const start = async () => {
    const r = await startNest('express', { imports: [SluiceModule.forRoot()], providers: [ByUser, ByAddress] });
    running.push(r);
    return r.url;
  };
  const connect = async (url: string, user: string): Promise<Socket> => {
    const socket = io(url, { transports: ['websocket'], auth: { user }, reconnection: false });
    sockets.push(socket);
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    return socket;
  };
  /** Sends `event` and waits for the answer: a 'pong' or an 'exception'. */
  const ask = (socket: Socket, event: string, body: string) =>
    new Promise<{ pong?: string; exception?: unknown }>((resolve) => {
      socket.once('pong', (data: string) => resolve({ pong: data }));
      socket.once('exception', (data: unknown) => resolve({ exception: data }));
      socket.emit(event, body);
    });

  it("a user's two tabs share one budget: the fourth message is not handled, and the client gets an exception event { status: 429, retryAfterMs }", async () => {
    const url = await start();
    const [tab1, tab2] = [await connect(url, 'ann'), await connect(url, 'ann')];
    const answers = [];
    for (const [i, tab] of [tab1, tab2, tab1, tab2].entries()) answers.push(await ask(tab as Socket, 'ping', `m${i}`));
    expect(answers.slice(0, 3)).toEqual([{ pong: 'm0' }, { pong: 'm1' }, { pong: 'm2' }]);
    expect(answers[3]).toEqual({ exception: { status: 429, retryAfterMs: expect.any(Number) } });
    expect((answers[3] as { exception: { retryAfterMs: number } }).exception.retryAfterMs).toBeGreaterThan(0);
    expect(handled).toEqual(['m0', 'm1', 'm2']);
    // Another user has a budget of its own.
    expect(await ask(await connect(url, 'bob'), 'ping', 'b0')).toEqual({ pong: 'b0' });
  });

  it("the default key is the client's address from the handshake", async () => {
    const url = await start();
    expect(await ask(await connect(url, 'x'), 'hello', 'h0')).toEqual({ pong: 'h0' });
    expect(await ask(await connect(url, 'y'), 'hello', 'h1')).toEqual({ exception: { status: 429, retryAfterMs: expect.any(Number) } });
  });

  it('a client that floods is limited without blocking the others', async () => {
    const url = await start();
    const flood = await connect(url, 'flood');
    const exceptions: unknown[] = [];
    flood.on('exception', (e) => exceptions.push(e));
    for (let i = 0; i < 200; i++) flood.emit('ping', `f${i}`);
    const calm = await connect(url, 'calm');
    expect(await ask(calm, 'ping', 'c0')).toEqual({ pong: 'c0' });
    await new Promise<void>((resolve) => {
      const check = () => (exceptions.length >= 197 ? resolve() : setTimeout(check, 10));
      check();
    });
    expect(handled.filter((m) => m.startsWith('f'))).toHaveLength(3);
  });

  it("a key that throws reaches Nest's error path: the message is not handled, and the client gets Nest's error event", async () => {
    const url = await start();
    expect(await ask(await connect(url, 'throws'), 'ping', 't0')).toMatchObject({
      exception: { status: 'error', message: 'Internal server error' },
    });
    expect(handled).toEqual([]);
  });
});

describe('ws (platform-ws)', () => {
  const start = async () => {
    const r = await startNest('express', {
      imports: [SluiceModule.forRoot()],
      providers: [ByUser, ByAddress],
      setup: (app) => app.useWebSocketAdapter(new WsAdapter(app)),
    });
    running.push(r);
    return r.url.replace('http', 'ws');
  };
  const connect = async (url: string, user: string): Promise<WebSocket> => {
    const socket = new WebSocket(`${url}/?user=${user}`);
    sockets.push(socket);
    await once(socket, 'open');
    return socket;
  };
  const ask = (socket: WebSocket, event: string, data: string) =>
    new Promise<unknown>((resolve) => {
      socket.once('message', (m) => resolve(JSON.parse(String(m))));
      socket.send(JSON.stringify({ event, data }));
    });

  it('a message over the limit is not handled; the client is sent {"event":"exception","data":{ status: 429, retryAfterMs }}', async () => {
    const url = await start();
    const [tab1, tab2] = [await connect(url, 'ann'), await connect(url, 'ann')];
    const answers = [];
    for (const [i, tab] of [tab1, tab2, tab1, tab2].entries()) answers.push(await ask(tab as WebSocket, 'ping', `m${i}`));
    expect(answers.slice(0, 3)).toEqual(['m0', 'm1', 'm2'].map((data) => ({ event: 'pong', data })));
    expect(answers[3]).toEqual({ event: 'exception', data: { status: 429, retryAfterMs: expect.any(Number) } });
    expect(handled).toEqual(['m0', 'm1', 'm2']);
  });

  it("the default key is the client's address", async () => {
    const url = await start();
    expect(await ask(await connect(url, 'x'), 'hello', 'h0')).toEqual({ event: 'pong', data: 'h0' });
    expect(await ask(await connect(url, 'y'), 'hello', 'h1')).toEqual({
      event: 'exception',
      data: { status: 429, retryAfterMs: expect.any(Number) },
    });
  });
});
