// The per-request half of the kit: for one request, its key, cost and skip, the decision, its headers;
// then the answer when limited, and the tracking of an allowed request until its response ends.
import type { Decision } from '../decision.js';
import { rateLimitHeaders, retryAfterSeconds } from '../headers.js';
import type { ConsumeOptions, Limiter } from '../limiter.js';
import type { OptionTable, Resolved } from '../options.js';
import { holder } from './delay.js';
import { type ForwardedCheck, forwardedWarning } from './forwarded.js';
import { type AdapterOwn, type HttpLimitOptions, resolveHttpOptions } from './options.js';
import { deniedResponder, type LimitedResponse, limitedResponder, unavailableResponse } from './problem.js';
import { clientKeyOf } from './scope.js';
import { type RawResponse, tracker } from './settle.js';
import { type Awaitable, call, caught } from './user-call.js';

/** The outcome for one request. */
export interface HttpVerdict {
  decision: Decision;
  /** Rate-limit headers to set, Retry-After included when limited. */
  headers: Record<string, string>;
  limited: boolean;
  /** The client's key, and what it was charged (a settle moves the decision's own charge: decision.adjust). */
  key: string;
  cost: number;
}

/** One adapter middleware's resolved options and limiter. */
export interface HttpLimit<Req, Res = undefined, Own extends OptionTable = OptionTable> {
  readonly limiter: Limiter;
  /** The adapter's own options (AdapterOwn.own), resolved. */
  readonly own: Resolved<Own>;
  /**
   * Decides for one request; undefined when `skip` says so. `scope` names the default counter
   * (routeScope: 'POST /login'), `ip` reads the client IP for the default key. Throws on a bad key or cost.
   * `raw`: the response whose 'close' says the client left, for `delay` (a held request gives its place back).
   */
  check(req: Req, scope: string, ip: () => string | undefined, res?: Res, raw?: RawResponse): Promise<HttpVerdict | undefined>;
  /** The response for a limited decision: by `statusCode` and `message`, problem+json by default. */
  limitedResponse(decision: Decision, req: Req, res?: Res): Promise<LimitedResponse>;
  /**
   * Under a rival's spelling that answers by its framework's error handler (PeerAnswer.error): the error to
   * throw for a limited request; undefined for a 'fail-closed' one, answered by limitedResponse.
   */
  limitedError?(verdict: HttpVerdict, req: Req): unknown;
  /**
   * Call for an allowed request before passing it on: once `raw` closes (after it finished, or
   * without: an abort), gives the decision's concurrent slots back and settles its charge (settle, the skip
   * options). Costs nothing when there is neither.
   */
  track(verdict: HttpVerdict, req: Req, res: Res, raw: RawResponse): void;
}

/**
 * Resolves an adapter's options once, at construction (bad options throw here, naming the option), and
 * decides per request.
 * @example const limit = httpLimit<Request>({ policy: '100/1m' }, { own: { onLimited: spec(isFunction) } }); const v = await limit.check(req, routeScope('GET', '/'), () => req.ip);
 */
export function httpLimit<Req, Res = undefined, Own extends OptionTable = OptionTable>(
  options: HttpLimitOptions<Req, Res>,
  adapter: AdapterOwn<Own> & { forwarded?: ForwardedCheck<Req> } = {},
): HttpLimit<Req, Res, Own> {
  const o = resolveHttpOptions(options, adapter);
  const { limiter, scope, policyOf } = o;
  const { skip, cost } = o;
  const clientKey = clientKeyOf<Req>(o.key, o.ipv6Subnet);
  // Only the default key (the client IP) is keyed on a proxy's address.
  const { peer } = o;
  const forwarded = o.key === undefined && peer?.warnForwarded !== false ? forwardedWarning(limiter, adapter.forwarded) : undefined;
  const headers = { headers: o.headers };
  const draft8 = o.headers === 'draft-8';
  // A rival's headers and answer, under its spelling (translator.ts).
  const headersOf = (decision: Decision, key: string) =>
    peer !== undefined ? peer.headers(decision, key) : rateLimitHeaders(decision, draft8 ? { headers: 'draft-8', key } : headers);
  const limited = peer?.respond ?? limitedResponder<Req>(o.message, o.statusCode);
  const hold = o.delay && holder(limiter, o.delay);

  return {
    limiter,
    own: o.own,
    async check(req, route, ip, res, raw) {
      // A sync answer is taken as it is: awaiting it would cost every request a microtask.
      if (skip !== undefined) {
        const skipped = call(skip, req, 'ERR_SLUICE_KEY', 'skip', res);
        if (skipped === true || (skipped !== false && (await caught(skipped, 'ERR_SLUICE_KEY', 'skip')))) return undefined;
      }
      if (forwarded !== undefined) forwarded(req);
      const known = clientKey(req, ip, res);
      const key = typeof known === 'string' ? known : await known;
      if (peer?.allow !== undefined) {
        const allowed = peer.allow(req, key);
        if (allowed === true || (allowed !== false && (await allowed))) return undefined;
      }
      const charge: ConsumeOptions = { scope: scope ?? route };
      // The client IP, for the rules' address and CIDR patterns (a key of its own may not be one).
      const client = ip();
      if (client !== undefined) charge.ip = client;
      if (cost !== undefined) {
        const price = call(cost, req, 'ERR_SLUICE_COST', 'cost', res);
        charge.cost = typeof price === 'number' ? price : await caught(price, 'ERR_SLUICE_COST', 'cost');
      }
      if (policyOf !== undefined) {
        const chosen = call(policyOf, req, 'ERR_SLUICE_OPTION', 'policy', res, key);
        charge.policy = isPromise(chosen) ? await caught(chosen, 'ERR_SLUICE_OPTION', 'policy') : chosen;
      }
      let decision = await limiter.consume(key, charge);
      if (hold !== undefined && !decision.allowed) decision = await hold(decision, key, charge, raw);
      peer?.seen?.(decision, req, key);
      const uncounted = decision.source === 'rule' || decision.source === 'fail-closed';
      const sent = uncounted ? retryAfterOnly(decision) : headersOf(decision, key);
      return { decision, headers: sent, limited: !decision.allowed, key, cost: charge.cost ?? 1 };
    },
    limitedResponse: bySource(limited, deniedResponder<Req>(o.message, o.deniedStatusCode)),
    track: tracker<Req, Res>(limiter, o),
    ...(peer?.error === undefined
      ? {}
      : {
          limitedError: (verdict: HttpVerdict, req: Req) =>
            verdict.decision.source === 'fail-closed' ? undefined : peer.error?.(verdict.decision, req, verdict.key),
        }),
  };
}

/** A rule's or a fail-closed decision counted nothing: no rate-limit headers, and Retry-After when it says when (a deny rule that lapses). */
function retryAfterOnly(decision: Decision): Record<string, string> {
  return !decision.allowed && decision.retryAfterMs > 0 ? { 'Retry-After': String(retryAfterSeconds(decision)) } : {};
}

/** A limited decision's responder, a denied one's for a decision a rule made, or the 503 while the store cannot answer. */
const bySource =
  <Req>(
    limited: (d: Decision, req: Req, res?: unknown) => Promise<LimitedResponse>,
    denied: (d: Decision, req: Req) => Promise<LimitedResponse>,
  ) =>
  (decision: Decision, req: Req, res?: unknown): Promise<LimitedResponse> =>
    decision.source === 'rule'
      ? denied(decision, req)
      : decision.source === 'fail-closed'
        ? Promise.resolve(unavailableResponse(decision))
        : limited(decision, req, res);

const isPromise = <T>(value: Awaitable<T>): value is Promise<T> => typeof (value as Promise<T> | undefined)?.then === 'function';
