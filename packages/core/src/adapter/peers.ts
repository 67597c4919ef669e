// The option spellings of the middlewares users switch from (express-rate-limit, @fastify/rate-limit):
// each stands for one of our options, and is turned into it here, once.
import { parseDuration } from '../duration.js';
import { badOption } from '../errors.js';
import type { HeadersMode } from '../headers.js';
import { isFunction } from '../options.js';
import type { PolicyInput } from '../policy/policy.js';

type Awaitable<T> = T | Promise<T>;

/** The option spellings of the middlewares users switch from: express-rate-limit and @fastify/rate-limit. */
export interface PeerSpellings<Req> {
  /** express-rate-limit: the window in ms (with `limit` or `max`). Default 60000. */
  windowMs?: number;
  /** express-rate-limit: requests per window, or a function of the request (peer-express.ts). */
  limit?: number | ((req: Req, res: never) => Awaitable<number>);
  /** express-rate-limit and @fastify/rate-limit: requests per window, or a function of the request (peer-express.ts, peer-fastify.ts). */
  max?: number | ((req: Req, more: never) => Awaitable<number>);
  /** @fastify/rate-limit: the window, in ms or as '1 minute', '1m'. Default 60000. */
  timeWindow?: number | string;
  /** express-rate-limit's name for `key`. */
  keyGenerator?: (req: Req) => Awaitable<string>;
  /** express-rate-limit: send the IETF RateLimit headers (any draft: sluice sends draft 10). With legacyHeaders, instead of `headers`. */
  standardHeaders?: boolean | 'draft-6' | 'draft-7' | 'draft-8';
  /** express-rate-limit: send X-RateLimit-* headers. Default true when standardHeaders is given. */
  legacyHeaders?: boolean;
}

/** The name of one peer spelling. */
export type PeerSpelling = keyof PeerSpellings<unknown>;

type Options = Record<string, unknown>;

/**
 * Each of our options and the peer spellings that stand for it. One middleware gives one or the other
 * (fromPeers); a route that gives any of a group replaces the app's whole group (mergeHttpOptions).
 */
export const ALIASES = {
  policy: ['windowMs', 'limit', 'max', 'timeWindow'],
  key: ['keyGenerator'],
  headers: ['standardHeaders', 'legacyHeaders'],
} as const satisfies Record<string, readonly PeerSpelling[]>;

/** Every peer spelling. */
export const PEER_NAMES: readonly PeerSpelling[] = Object.values(ALIASES).flat();

const WINDOW_MS = 60_000; // both peers' default window
const WORDS = /^(\d+(?:\.\d+)?)\s*(milliseconds?|seconds?|secs?|minutes?|mins?|hours?|hrs?|days?)$/i;
const WORD_MS: Record<string, number> = { mil: 1, sec: 1000, min: 60_000, hou: 3_600_000, hrs: 3_600_000, hr: 3_600_000, day: 86_400_000 };

/** @fastify/rate-limit's timeWindow: ms, a duration ('1m'), or words ('1 minute'). */
export function timeWindowMs(value: unknown): number {
  const words = typeof value === 'string' ? WORDS.exec(value.trim()) : null;
  if (!words) return parseDuration(value, 'timeWindow');
  const unit = (words[2] as string).toLowerCase();
  return Number(words[1]) * (WORD_MS[unit.slice(0, 3)] ?? WORD_MS[unit.slice(0, 2)] ?? 0);
}

/** The policy given in a peer's spelling: windowMs or timeWindow with limit or max. */
function peerPolicy(o: Options): PolicyInput {
  const { windowMs, limit, max, timeWindow } = o;
  const count = limit ?? max;
  if (count === undefined) badOption('limit', 'a positive integer when windowMs or timeWindow is given', count);
  const window =
    windowMs !== undefined ? parseDuration(windowMs, 'windowMs') : timeWindow !== undefined ? timeWindowMs(timeWindow) : WINDOW_MS;
  return { limit: count as number, window };
}

/** The `headers` mode from express-rate-limit's standardHeaders and legacyHeaders. */
function peerHeaders(o: Options): HeadersMode {
  const { standardHeaders: standard, legacyHeaders: legacy } = o;
  if (standard !== undefined && typeof standard !== 'boolean' && !['draft-6', 'draft-7', 'draft-8'].includes(standard as string)) {
    badOption('standardHeaders', "a boolean, 'draft-6', 'draft-7' or 'draft-8'", standard);
  }
  if (legacy !== undefined && typeof legacy !== 'boolean') badOption('legacyHeaders', 'a boolean', legacy);
  // express-rate-limit's defaults: no standard headers, legacy headers on.
  const draft = standard !== undefined && standard !== false;
  const old = legacy ?? true;
  return draft && old ? 'both' : draft ? 'draft' : old ? 'legacy' : false;
}

const FROM_PEERS: { [K in keyof typeof ALIASES]: (o: Options) => unknown } = {
  policy: peerPolicy,
  key: (o) => isFunction(o.keyGenerator, 'keyGenerator'),
  headers: peerHeaders,
};

/**
 * `o` (own properties, on no prototype) with its peer spellings turned into policy, key and headers.
 * Throws when an option is given beside a spelling of its own.
 * @example fromPeers(ownCopy({ windowMs: 60_000, limit: 5 })) // { policy: { limit: 5, window: 60000 } }
 */
export function fromPeers(o: Options): Options {
  for (const [name, peers] of Object.entries(ALIASES) as [keyof typeof ALIASES, readonly PeerSpelling[]][]) {
    const given = peers.filter((peer) => o[peer] !== undefined);
    if (given.length === 0) continue;
    if (o[name] !== undefined) badOption(name, `given alone, not with ${list(peers)}`, o[name]);
    o[name] = FROM_PEERS[name](o);
    for (const peer of peers) delete o[peer];
  }
  return o;
}

const list = (names: readonly string[]) => (names.length === 1 ? names[0] : `${names.slice(0, -1).join(', ')} or ${names.at(-1)}`);
