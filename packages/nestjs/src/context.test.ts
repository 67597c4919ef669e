// What the guard reads of a WebSocket message's context, when the client is not what Nest's adapters make today:
// ws's private `_socket` gone, the default key has no address and refuses the message as a SluiceError, never a crash.
import type { ExecutionContext } from '@nestjs/common';
import { SluiceError } from '@sluice/core';
import { httpLimit } from '@sluice/core/adapter';
import { targetOf } from './context.js';

/** A message's context on `client`, as Nest's gateways make one (switchToWs, its type 'ws'). */
function wsContext(client: object): ExecutionContext {
  return {
    getType: () => 'ws',
    getHandler: () => function ping() {},
    switchToWs: () => ({ getClient: () => client, getData: () => undefined, getPattern: () => 'ping' }),
  } as unknown as ExecutionContext;
}

describe('a WebSocket message, read by shape', () => {
  it("socket.io's client: the handshake's address, and the pattern as the scope", () => {
    const target = targetOf(wsContext({ handshake: { address: '203.0.113.9' } }));
    expect(target.ip()).toBe('203.0.113.9');
    expect(target.scope()).toBe('WS ping');
  });

  it("ws's client: its socket's address (ws's private _socket, read on ws 8.21)", () => {
    expect(targetOf(wsContext({ _socket: { remoteAddress: '198.51.100.4' } })).ip()).toBe('198.51.100.4');
  });

  it('with _socket gone, the address is unknown, and the default key refuses the message as a SluiceError', async () => {
    const ctx = wsContext({ send() {} });
    const target = targetOf(ctx);
    expect(target.ip()).toBeUndefined();
    const limit = httpLimit<ExecutionContext>({ policy: '5/1m' });
    const refused = limit.check(ctx, target.scope(), target.ip);
    await expect(refused).rejects.toBeInstanceOf(SluiceError);
    await expect(refused).rejects.toMatchObject({ code: 'ERR_SLUICE_KEY' });
    await limit.limiter.close();
  });
});
