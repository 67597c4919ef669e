// A rival library's option spelling, as a framework's package gives it to the kit: the names it recognises,
// their translation into sluice's options, and how a middleware under that spelling answers. The kit
// names no library: each package brings the spelling of the library its users switch from.
import type { Decision } from '../decision.js';
import type { PolicyInput } from '../policy/policy.js';
import type { LimitedResponse } from './problem.js';
import type { Awaitable } from './user-call.js';

/** How a middleware answers under a rival's spelling, where the rival's behaviour is not sluice's. */
export interface PeerAnswer {
  /** The rival's headers for a decision on `key`. */
  headers(decision: Decision, key: string): Record<string, string>;
  /** The rival's answer to a limited request. Default: sluice's, by `statusCode` and `message`. */
  respond?(decision: Decision, req: unknown, res: unknown): Promise<LimitedResponse>;
  /** The error to throw for a limited request, when the rival answers through its framework's error handler. */
  error?(decision: Decision, req: unknown, key: string): unknown;
  /** False when the rival's own option turned the X-Forwarded-For warning off. Default true. */
  warnForwarded?: boolean;
  /** True lets the request through uncounted (the rival's allow list). */
  allow?(req: unknown, key: string): Awaitable<boolean>;
  /** Hears every decision (the rival's callbacks). */
  seen?(decision: Decision, req: unknown, key: string): void;
}

/** A rival library's options, taken with their meaning: what an adapter passes as `httpLimit(options, { peer })`. */
export interface PeerTranslator {
  /** Every option name it recognises: each is known to the kit, then taken with its meaning or refused by name. */
  readonly names: readonly string[];
  /**
   * Its names that stand for one of sluice's options (a `keyGenerator` for `key`), for mergeHttpOptions: a
   * route that gives one replaces the app's whole group; an app that gives one of `policy`'s, under a route
   * that gives no `policy` or `limiter`, is merged option by option, as the rivals merge.
   */
  readonly aliases: { readonly [Name in 'policy' | 'key' | 'headers']?: readonly string[] };
  /**
   * Rewrites `options` (own properties, on no prototype) into sluice's, in place. In the rival's spelling it
   * returns how the middleware answers; in sluice's (`policy` or `limiter` given) it turns the names it also
   * takes there into sluice's options, refuses the others naming sluice's, and returns undefined. `route`:
   * the options are a route's own, merged over an app's (Fastify's `config.rateLimit`).
   */
  translate(options: Record<string, unknown>, route: boolean): PeerAnswer | undefined;
}

/**
 * `policyFor` made once per limit, for a rival's limit given as a function of the request: the limiter
 * reads a request's policy by identity, so a limit's is one object.
 * @example const pick = policyPerLimit((limit) => ({ limit, window: 60_000 })); pick(5) === pick(5) // true
 */
export function policyPerLimit(policyFor: (limit: number) => PolicyInput): (limit: number) => PolicyInput {
  const policies = new Map<number, PolicyInput>();
  return (limit) => {
    let policy = policies.get(limit);
    if (policy === undefined) {
      policy = policyFor(limit);
      policies.set(limit, policy);
    }
    return policy;
  };
}
