// RateLimitedException: how the guard refuses an HTTP request or a resolver, so that the app's exception
// filters shape the answer; and the refusal of a WebSocket message, which Nest's gateways answer by an
// `exception` event.
import { HttpException } from '@nestjs/common';
import type { Decision } from '@sluice/core';
import type { LimitedResponse } from '@sluice/core/adapter';

/**
 * Thrown by SluiceGuard for a request over its limit: an HttpException whose status is the limited response's
 * (429; 403 for a deny rule or a ban; 503 while the store cannot answer and the limiter refuses) and whose
 * response is its body (the problem object by default), so Nest's default filter answers with it, as JSON. Retry-After
 * and the RateLimit headers are already set. `decision` is the Decision.
 * @example @Catch(RateLimitedException) class Filter { catch(e: RateLimitedException, host: ArgumentsHost) { ... e.decision.retryAfterMs ... } }
 */
export class RateLimitedException extends HttpException {
  /**
   * What a GraphQL error carries (graphql-js takes an original error's `extensions`): `code` 'RATE_LIMITED',
   * the `status`, and `retryAfterMs`.
   */
  readonly extensions: { code: 'RATE_LIMITED'; status: number; retryAfterMs: number };

  constructor(
    /** The decision that refused the request. */
    readonly decision: Decision,
    response: LimitedResponse,
  ) {
    const body = response.contentType.includes('json') ? (JSON.parse(response.body) as Record<string, unknown>) : response.body;
    super(body, response.status);
    // The problem's detail, not the class's name, as the message a GraphQL error shows.
    const detail = typeof body === 'string' ? body : body.detail;
    if (typeof detail === 'string') this.message = detail;
    this.extensions = { code: 'RATE_LIMITED', status: response.status, retryAfterMs: decision.retryAfterMs };
  }
}

/** What the guard sends a WebSocket client for a message over the limit. */
export interface WsRefusal {
  status: number;
  retryAfterMs: number;
}

/**
 * The refusal of a message: a WsException, which Nest's gateway filter emits to the client as an `exception` event
 * (socket.io). Nest's ws adapter has no `emit` on the wire: its client is sent `{"event":"exception","data":...}`
 * here. @nestjs/websockets is loaded only when a gateway is limited (an optional peer).
 */
export async function wsRefusal(client: Record<string, unknown> | undefined, data: WsRefusal): Promise<Error> {
  const { WsException } = await import('@nestjs/websockets');
  const send = client?.send;
  if (client !== undefined && client.handshake === undefined && typeof send === 'function') {
    send.call(client, JSON.stringify({ event: 'exception', data }));
  }
  return new WsException(data as unknown as object);
}
