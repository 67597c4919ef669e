// webSocketLimit(): a limit on each message of a WebSocket, around the events given to Hono's upgradeWebSocket.
// The key (and a policy of the connection's own) is read once, from the upgrade request; each message is one
// consume, in the order it came; a message over the limit never reaches onMessage.
import { type Decision, ipKey, type PolicyInput, SluiceError } from '@sluice/core';
import { badOption, type HttpLimitOptions, httpLimit, isFunction, own, type PolicyGiven, routeScope, spec } from '@sluice/core/adapter';
import type { Context, Env } from 'hono';
import { clientAddress, type GetIP, routeOf } from './client.js';

/** The adapter's options that have no meaning for a message: it has no HTTP request or response of its own. */
const HTTP_ONLY = [
  'cost',
  'skip',
  'headers',
  'statusCode',
  'deniedStatusCode',
  'message',
  'settle',
  'skipFailedRequests',
  'skipSuccessfulRequests',
  'requestWasSuccessful',
  'delay',
] as const;

/**
 * Options of webSocketLimit(): every createLimiter option or `limiter`, and `key`, `scope`, `ipv6Subnet`,
 * `getIP` as rateLimit() takes them (read once per connection, from the upgrade request), and `onLimited`.
 */
// biome-ignore lint/suspicious/noExplicitAny: Hono's own default Env, as HonoRateLimitOptions
export type WebSocketLimitOptions<E extends Env = any> = Omit<HttpLimitOptions<Context<E>>, (typeof HTTP_ONLY)[number]> &
  PolicyGiven<Context<E>> & {
    /** A message over the limit: 'close' closes the socket with 1008 (policy violation); 'drop' drops the message. Default 'close'. */
    onLimited?: 'close' | 'drop';
    /** Where the client's address comes from, as rateLimit() takes it. Default: @hono/node-server's getConnInfo. */
    getIP?: GetIP;
  };

/**
 * What webSocketLimit reads of upgradeWebSocket's events. Not hono/ws's WSEvents: its declarations need the DOM
 * lib (CloseEvent), which a Node app's strict TypeScript without skipLibCheck does not have.
 */
type MessageEvents = { onMessage?: (event: unknown, ws: { close(code?: number, reason?: string): void }) => void };

const isOnLimited = (v: unknown, n: string): 'close' | 'drop' => (v === 'close' || v === 'drop' ? v : badOption(n, "'close' or 'drop'", v));
const OWN = { onLimited: spec(isOnLimited, 'close'), getIP: spec<GetIP>(isFunction) };

/** Calls `f(c)`: a throw or a rejection becomes a SluiceError with `code`, the original as its cause. */
async function ofConnection<T>(f: (c: Context) => T | Promise<T>, c: Context, code: string, name: string): Promise<T> {
  try {
    return await f(c);
  } catch (error) {
    throw new SluiceError(code, `${name}(c) threw${error instanceof Error ? `: ${error.message}` : ''}`, { cause: error });
  }
}

/**
 * Limits the messages of each WebSocket: wraps the events you give Hono's upgradeWebSocket, so that a message
 * over the limit is not passed to `onMessage`, and the socket is closed with 1008 (`onLimited: 'close'`, the
 * default) or the message dropped ('drop'). Each connection counts under `key(c)` (a user's five tabs share one
 * budget), or the client's address; its messages are decided in order, and one client's flood waits on no other's.
 * A `key` that throws fails the upgrade through app.onError, as a SluiceError. Bad options throw here.
 * @example app.get('/ws', upgradeWebSocket(webSocketLimit({ policy: '20/1s', key: (c) => c.var.user.id })(() => ({ onMessage(e, ws) {} }))))
 */
// biome-ignore lint/suspicious/noExplicitAny: Hono's own default Env, as HonoRateLimitOptions
export function webSocketLimit<E extends Env = any>(options: WebSocketLimitOptions<E>) {
  for (const name of HTTP_ONLY) {
    const given = own(Object(options), name);
    if (given !== undefined) badOption(name, 'absent: a WebSocket message has no HTTP request or response of its own', given);
  }
  const limit = httpLimit<Context, undefined, typeof OWN>(options as HttpLimitOptions<Context>, { own: OWN });
  const { limiter } = limit;
  const { onLimited, getIP } = limit.own;
  const ip = clientAddress(getIP);
  const key = own(options, 'key') as ((c: Context) => string | Promise<string>) | undefined;
  const scope = own(options, 'scope') as string | undefined;
  const subnet = (own(options, 'ipv6Subnet') ?? 56) as number | false;
  const policy = own(options, 'policy');
  const policyOf = typeof policy === 'function' ? (policy as (c: Context) => PolicyInput | PolicyInput[]) : undefined;

  // `Events` is upgradeWebSocket's own events type, inferred from where the result goes: it types onMessage's arguments.
  return <Events>(createEvents: (c: Context<E>) => Events | Promise<Events>) =>
    async function sluiceWebSocketLimit(c: Context<E>): Promise<Events> {
      const client = key === undefined ? ipKey(ip(c), subnet) : await ofConnection(key, c, 'ERR_SLUICE_KEY', 'key');
      if (typeof client !== 'string' || client === '') throw new SluiceError('ERR_SLUICE_KEY', 'key(c) must return a non-empty string');
      const route = routeOf(c);
      const charge: { scope: string; policy?: PolicyInput | PolicyInput[]; ip?: string } = {
        scope: scope ?? routeScope('WS', route?.path ?? c.req.path),
      };
      if (policyOf !== undefined) charge.policy = await ofConnection(policyOf, c, 'ERR_SLUICE_OPTION', 'policy');
      const address = ip(c);
      if (address !== undefined) charge.ip = address;
      const events = await createEvents(c);
      const { onMessage } = events as MessageEvents;
      if (onMessage === undefined) return events;
      let queue: Promise<void> = Promise.resolve();
      let closed = false;
      const decide = async (...args: Parameters<typeof onMessage>) => {
        if (closed) return;
        const decision: Decision = await limiter.consume(client, charge);
        if (decision.allowed) return void onMessage(...args);
        if (onLimited === 'drop') return;
        closed = true;
        args[1].close(1008, `rate limit "${decision.policy}" exceeded; retry in ${Math.ceil(decision.retryAfterMs / 1000)} s`);
      };
      const limited: MessageEvents = {
        onMessage(...args) {
          // One after another: a message is decided, and handled, after the one before it.
          queue = queue.then(() => decide(...args)).catch((error: unknown) => console.error(error));
        },
      };
      return { ...events, ...limited };
    };
}
