// Per-route options over an app's (Fastify's config.rateLimit): which of the app's a route's replace.
import { badOption } from '../errors.js';
import { LIMITER_OPTION_NAMES } from '../limiter-options.js';
import { ownCopy } from '../options.js';
import type { PeerTranslator } from './translator.js';

const ALIASED = ['policy', 'key', 'headers'] as const;

/**
 * Per-route options over an app's: the route's win. A route that gives a policy replaces the app's policy
 * (in any spelling `peer` knows), a key or headers likewise; a route that gives a limiter, or limiter options,
 * replaces the other kind. An app whose policy is in `peer`'s spelling, under a route that gives no policy or
 * limiter of sluice's, is merged option by option (a route's limit keeps the app's window), as the rivals merge.
 * @example mergeHttpOptions({ policy: '100/1m', store }, { policy: '5/15m', failMode: 'closed' })
 */
export function mergeHttpOptions<T extends object>(app: T, route: Partial<T>, peer?: PeerTranslator): T {
  // Own properties only, on no prototype: a route's JSON `"__proto__"` is a key (refused by name), not the prototype.
  const merged = ownCopy(app);
  const r = ownCopy(route);
  const given = (name: string) => r[name] !== undefined;
  const aliases = peer?.aliases ?? {};
  const peerSpelled = (aliases.policy ?? []).some((n) => merged[n] !== undefined) && r.policy === undefined && r.limiter === undefined;
  if (!peerSpelled) {
    for (const name of ALIASED) {
      const group = [name, ...(aliases[name] ?? [])];
      if (group.some(given)) for (const n of group) delete merged[n];
    }
  }
  if (given('limiter')) for (const n of LIMITER_OPTION_NAMES) delete merged[n];
  // A policy function is the request's, not the limiter's: a route may give one over an app's limiter.
  else if (
    LIMITER_OPTION_NAMES.some((n) => given(n) && !(n === 'policy' && typeof r.policy === 'function')) &&
    merged.limiter !== undefined
  ) {
    badOption('limiter', 'absent on the app when a route sets limiter options: give the app a store instead', 'a Limiter');
  }
  for (const n of Object.keys(r)) if (given(n)) merged[n] = r[n];
  return merged as T;
}
