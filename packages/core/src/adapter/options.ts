// The options every adapter takes: their types, their table (each check and default once), and their
// resolution at construction into the kit's settings and one limiter.
import type { Decision } from '../decision.js';
import { badOption } from '../errors.js';
import { DEFAULT_HEADERS_MODE, type HeadersMode, parseHeadersMode } from '../headers.js';
import { CHECK_COST, createLimiter, type Limiter, type LimiterOptions } from '../limiter.js';
import { LIMITER_OPTION_NAMES } from '../limiter-options.js';
import { checkNames, isBoolean, isFunction, type OptionSpec, type OptionTable, ownCopy, type Resolved, resolve, spec } from '../options.js';
import type { PolicyInput } from '../policy/policy.js';
import { type DelayOptions, isDelay } from './delay.js';
import type { LimitedBody } from './problem.js';
import type { PeerAnswer, PeerTranslator } from './translator.js';
import type { Awaitable } from './user-call.js';

/** A request's own policies (its plan): one policy or several, chosen from the request; may be async. */
export type PolicyOf<Req> = (req: Req) => Awaitable<PolicyInput | PolicyInput[]>;

/**
 * The options every adapter takes, for a request type `Req` and a response type `Res` (Koa has none:
 * its functions get the context alone), but where its policy comes from. Each doc comment ends with the
 * option's default, the one in ADAPTER_OPTIONS (options.test.ts holds them together).
 */
export interface HttpLimitOptions<Req, Res = undefined> extends Omit<Partial<LimiterOptions>, 'policy'> {
  /**
   * One policy, or several (as in createLimiter), or a function of the request that returns them (per
   * plan: `(req) => plans[req.user.plan]`, may be async; also with a shared `limiter`). Give this, or `limiter`.
   */
  policy?: PolicyInput | PolicyInput[] | PolicyOf<Req>;
  /** A limiter to use (and share) instead of limiter options. Default: one made from the limiter options. */
  limiter?: Limiter;
  /** The client's key. Default: the client IP as the framework resolves it (trust-proxy aware), see ipv6Subnet. */
  key?: (req: Req) => Awaitable<string>;
  /** The request's cost, a positive number, or a function of the request that returns it. Default 1. */
  cost?: number | ((req: Req) => Awaitable<number>);
  /** Requests for which it returns true are not counted. Default: none. */
  skip?: (req: Req) => Awaitable<boolean>;
  /** Names a counter to share it across routes. Default: each route counts on its own (method and route pattern). */
  scope?: string;
  /** Which headers to send: 'draft' (IETF RateLimit), 'legacy' (X-RateLimit-*), 'both' or false. Default 'draft'. */
  headers?: HeadersMode;
  /** Status of a limited response, 400 to 599. Default 429. */
  statusCode?: number;
  /** Status of a response refused by a deny rule or a ban (`rules`, `ban`), 400 to 599. Default 403. */
  deniedStatusCode?: number;
  /** Body of a limited response, or a function of the decision that returns it. Default: application/problem+json. */
  message?: LimitedBody | ((decision: Decision, req: Req) => Awaitable<LimitedBody>);
  /** Prefix length that groups IPv6 clients in the default key; false keeps whole addresses. Default 56. */
  ipv6Subnet?: number | false;
  /**
   * The request's real cost, known once the response has finished or the connection closed (tokens an
   * LLM call used): the charge moves to it, up (a debt later requests wait out) or down (a refund).
   * Runs once per allowed request, may be async; undefined keeps the charge. An error in it never
   * touches the response: it is reported as a 'settle-error' event. Default none.
   */
  settle?: (req: Req, res: Res) => Awaitable<number | undefined>;
  /** Refund a request that failed (requestWasSuccessful false, or aborted by the client). Default false. */
  skipFailedRequests?: boolean;
  /** Refund a request that succeeded. Default false. */
  skipSuccessfulRequests?: boolean;
  /** Whether a finished request succeeded, for the two skip options. Default: status below 400. */
  requestWasSuccessful?: (req: Req, res: Res) => Awaitable<boolean>;
  /**
   * Hold a limited request until its turn instead of answering 429 (limiter.wait), when its turn comes
   * within `maxWait` and fewer than `maxQueued` (default 1000) are held by this middleware in this process;
   * a client that leaves gives its place back. Default none: 429 at once.
   */
  delay?: DelayOptions;
}

/** Where an adapter's policy comes from, for types: `policy` or a shared `limiter` (a middleware without either does not type-check). */
export type PolicyGiven<Req> = { policy: PolicyInput | PolicyInput[] | PolicyOf<Req> } | { limiter: Limiter };

function isLimiter(v: unknown, n: string): Limiter {
  if (typeof v !== 'object' || v === null || typeof (v as Limiter).consume !== 'function')
    badOption(n, 'a Limiter from createLimiter()', v);
  return v as Limiter;
}

/** A constant cost becomes a function, so a request reads one shape. */
function isCost(v: unknown, n: string): (req: unknown) => Awaitable<number> {
  if (typeof v !== 'number') return isFunction(v, n);
  if (!Number.isFinite(v) || v <= 0) badOption(n, 'a positive finite number or a function', v);
  return () => v;
}

function isScope(v: unknown, n: string): string {
  if (typeof v !== 'string' || v === '') badOption(n, 'a non-empty string', v);
  return v;
}

function isStatus(v: unknown, n: string): number {
  if (!Number.isInteger(v) || (v as number) < 400 || (v as number) > 599) badOption(n, 'an integer from 400 to 599', v);
  return v as number;
}

function isMessage(v: unknown, n: string): LimitedBody | ((decision: Decision, req: unknown) => Awaitable<LimitedBody>) {
  if (typeof v !== 'string' && typeof v !== 'function' && (v === null || typeof v !== 'object')) {
    badOption(n, 'a string, an object or a function', v);
  }
  return v as LimitedBody | ((decision: Decision, req: unknown) => Awaitable<LimitedBody>);
}

function isSubnet(v: unknown, n: string): number | false {
  if (v !== false && (!Number.isInteger(v) || (v as number) < 1 || (v as number) > 128))
    badOption(n, 'an integer from 1 to 128, or false', v);
  return v as number | false;
}

/** The adapter kit's own options, each once: its check and its default. `Req` and `Res` are opaque here. */
export const ADAPTER_OPTIONS = {
  limiter: spec(isLimiter),
  key: spec<(req: unknown) => Awaitable<string>>(isFunction),
  cost: spec(isCost),
  skip: spec<(req: unknown) => Awaitable<boolean>>(isFunction),
  scope: spec(isScope),
  headers: spec(parseHeadersMode, DEFAULT_HEADERS_MODE),
  statusCode: spec(isStatus, 429),
  deniedStatusCode: spec(isStatus, 403),
  message: spec(isMessage),
  ipv6Subnet: spec(isSubnet, 56),
  settle: spec<(req: unknown, res: unknown) => Awaitable<number | undefined>>(isFunction),
  skipFailedRequests: spec(isBoolean, false),
  skipSuccessfulRequests: spec(isBoolean, false),
  requestWasSuccessful: spec<(req: unknown, res: unknown) => Awaitable<boolean>>(isFunction),
  delay: spec(isDelay),
} satisfies { [K in Exclude<keyof HttpLimitOptions<unknown>, keyof LimiterOptions>]-?: OptionSpec<unknown> };

/** What an adapter adds to the kit: its own options' table (such as onLimited), and the rival spelling it takes. */
export interface AdapterOwn<Own extends OptionTable = OptionTable> {
  own?: Own;
  /** A rival library's options, taken with their meaning when given in its spelling (translator.ts). Default none. */
  peer?: PeerTranslator;
  /** The options are a route's own (Fastify's config.rateLimit), not an app's or a plugin's. */
  route?: boolean;
}

/** An adapter's options, resolved: the kit's, the adapter's own, a request's policy function, and the limiter. */
export interface ResolvedHttpOptions<Own extends OptionTable> extends Resolved<typeof ADAPTER_OPTIONS> {
  own: Resolved<Own>;
  /** A policy function is the request's: each call passes what it returns, and the limiter has none. */
  policyOf: PolicyOf<unknown> | undefined;
  limiter: Limiter;
  /** The rival's headers and answer, when the options are in its spelling. */
  peer: PeerAnswer | undefined;
}

/** Resolves an adapter's options once, at construction; each rule is checked here, once, naming the option. */
export function resolveHttpOptions<Own extends OptionTable>(options: object, adapter: AdapterOwn<Own>): ResolvedHttpOptions<Own> {
  if (options === null || typeof options !== 'object') badOption('options', 'an object', options);
  const table = adapter.own ?? ({} as Own);
  // Each name once: a rival's names repeat some of ours (ban, message, statusCode).
  const known = [
    ...new Set([...LIMITER_OPTION_NAMES, ...Object.keys(ADAPTER_OPTIONS), ...(adapter.peer?.names ?? []), ...Object.keys(table)]),
  ];
  checkNames(options, known, 'a rate-limit option');
  const o = ownCopy(options);
  const peer = adapter.peer?.translate(o, adapter.route === true);
  const kit = resolve(ADAPTER_OPTIONS, o);
  const policyOf = typeof o.policy === 'function' ? (o.policy as PolicyOf<unknown>) : undefined;
  const given = limiterOptions(o, policyOf);
  const extra = kit.limiter === undefined ? undefined : Object.keys(given)[0];
  if (extra !== undefined) badOption(extra, 'absent when limiter is given (set it on the limiter)', given[extra]);
  const limiter = kit.limiter ?? createLimiter(given as LimiterOptions);
  // A constant cost that can never pass would answer every request 500: refused here (not with a per-request policy).
  if (typeof o.cost === 'number' && policyOf === undefined) (limiter as { [CHECK_COST]?: (cost: number) => void })[CHECK_COST]?.(o.cost);
  return { ...kit, own: resolve(table, o), policyOf, limiter, peer };
}

/** The limiter options given, for a limiter the adapter makes; refused without a policy of either kind. */
function limiterOptions(o: Record<string, unknown>, policyOf: PolicyOf<unknown> | undefined): Record<string, unknown> {
  const given: Record<string, unknown> = {};
  for (const name of LIMITER_OPTION_NAMES) if (o[name] !== undefined && !(name === 'policy' && policyOf)) given[name] = o[name];
  if (o.limiter === undefined && given.policy === undefined && policyOf === undefined) {
    badOption('policy', "given (e.g. '100/1m' or (req) => plans[req.user.plan]), or limiter", undefined);
  }
  return given;
}
