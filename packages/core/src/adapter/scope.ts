// Who a request counts as, and under which counter: the client's key and the route's scope.
import { describe, SluiceError } from '../errors.js';
import { ipKey } from '../ip-key.js';
import { type Awaitable, call, caught } from './user-call.js';

/**
 * The default counter of a middleware: its route's method and pattern ('POST /login'), or, where no
 * route matched (a middleware on an app or a mount), '*' and the mount path when there is one (an
 * app's root, '' in Express, is none). These are the scope names docs/frameworks.md and the CLI's
 * --scope use: keep them.
 * @example routeScope('POST', '/login') // 'POST /login'; routeScope(undefined, '/api') // '* /api'; routeScope() // '*'
 */
export function routeScope(method?: string, path?: string): string {
  if (method === undefined) return path === undefined || path === '' ? '*' : `* ${path}`;
  return `${method} ${path ?? ''}`;
}

/**
 * The client's key of a request: `key(req)`, or the client IP grouped by `subnet`. A string when it is
 * known at once (awaiting it would cost every request a microtask); throws ERR_SLUICE_KEY for a key
 * that is not a non-empty string.
 */
export function clientKeyOf<Req>(
  key: ((req: Req) => Awaitable<string>) | undefined,
  subnet: number | false,
): (req: Req, ip: () => string | undefined, res?: unknown) => string | Promise<string> {
  if (key === undefined) return (_req, ip) => checked(ipKey(ip(), subnet));
  return (req, _ip, res) => {
    const given = call(key, req, 'ERR_SLUICE_KEY', 'key', res);
    return typeof given === 'string' ? checked(given) : caught(given, 'ERR_SLUICE_KEY', 'key').then(checked);
  };
}

function checked(client: unknown): string {
  if (typeof client !== 'string' || client === '') {
    const got = client === '' ? 'an empty string, which would count every such request in one shared bucket' : describe(client);
    throw new SluiceError('ERR_SLUICE_KEY', `key(req) must return a non-empty string, got ${got}`);
  }
  return client;
}
