// rateLimitedFetch(): a fetch that waits for the limiter before each request (limiter.wait), and honours
// the upstream's own limits: a 429 or 503 that says when to come back (Retry-After, or the RateLimit
// headers of draft-ietf-httpapi-ratelimit-headers, -10 and the earlier drafts) charges the key until
// then, in the store, so every process that shares it holds off, not only this one.
import { type Duration, parseMaxWait } from './duration.js';
import { badOption } from './errors.js';
import type { Limiter, WaitOptions } from './limiter-api.js';

/** Options of rateLimitedFetch(). */
export interface RateLimitedFetchOptions {
  limiter: Limiter;
  /** The key a request is counted under. Default the URL's origin ('https://api.example.com'). */
  key?: (url: URL) => string;
  /** The longest a request waits for its turn; past it the fetch rejects with ERR_SLUICE_WAIT. Default '30s'. */
  maxWait?: Duration;
  /** The fetch to call. Default globalThis.fetch. */
  fetch?: typeof fetch;
}

/** The most an upstream can make the key wait, however far off its reset (a day). */
const HOLD_MAX_MS = 86_400_000;

/**
 * ms until the upstream says to come back, from a 429 or 503's headers, or undefined when they say
 * nothing: Retry-After (seconds or an HTTP date), draft-10's RateLimit (`"name";r=0;t=5`: t seconds),
 * the earlier drafts' RateLimit-Reset (seconds), X-RateLimit-Reset (seconds, or a Unix time in s or ms).
 * The latest of them wins.
 * @example upstreamResetMs(new Headers({ 'Retry-After': '2' }), Date.now()) // 2000
 */
export function upstreamResetMs(headers: Headers, now: number): number | undefined {
  const found: number[] = [];
  const retryAfter = headers.get('retry-after')?.trim();
  if (retryAfter) {
    if (/^\d+(\.\d+)?$/.test(retryAfter)) found.push(Number(retryAfter) * 1000);
    else {
      const at = Date.parse(retryAfter);
      if (!Number.isNaN(at)) found.push(at - now);
    }
  }
  const rateLimit = headers.get('ratelimit');
  if (rateLimit) {
    // draft-10: a list of members, each with r (remaining) and t (seconds to reset); one at r=0 binds.
    for (const member of rateLimit.split(',')) {
      const r = /;\s*r=(\d+)/.exec(member);
      const t = /;\s*t=(\d+)/.exec(member);
      if (t && (!r || r[1] === '0')) found.push(Number(t[1]) * 1000);
    }
    // The drafts before -07: RateLimit "limit=10, remaining=0, reset=5".
    const reset = /(?:^|[,;\s])reset=(\d+)/.exec(rateLimit);
    if (reset) found.push(Number(reset[1]) * 1000);
  }
  const reset = headers.get('ratelimit-reset')?.trim();
  if (reset && /^\d+$/.test(reset)) found.push(Number(reset) * 1000);
  const xReset = headers.get('x-ratelimit-reset')?.trim();
  if (xReset && /^\d+(\.\d+)?$/.test(xReset)) {
    const n = Number(xReset);
    // A Unix time in ms, in s, or else seconds from now.
    found.push(n > 1e12 ? n - now : n > 1e9 ? n * 1000 - now : n * 1000);
  }
  const valid = found.filter((ms) => Number.isFinite(ms) && ms > 0);
  return valid.length === 0 ? undefined : Math.min(HOLD_MAX_MS, Math.max(...valid));
}

/**
 * A fetch that waits for the limiter before each request, and honours the upstream's own limits: an
 * answer 429 or 503 with Retry-After or RateLimit headers charges the key until the upstream's reset
 * (limiter.adjust), so every process sharing the store holds off. The answer is returned as it is.
 * @example const get = rateLimitedFetch({ limiter: createLimiter({ policy: '10/s', store }) }); await get('https://api.example.com/items');
 */
export function rateLimitedFetch(options: RateLimitedFetchOptions): typeof fetch {
  if (options === null || typeof options !== 'object') badOption('rateLimitedFetch options', 'an object, such as { limiter }', options);
  const { limiter, key = (url: URL) => url.origin, maxWait, fetch: send = globalThis.fetch } = options;
  if (limiter === null || typeof limiter !== 'object' || typeof limiter.wait !== 'function')
    badOption('limiter', 'a Limiter (createLimiter)', limiter);
  if (typeof key !== 'function') badOption('key', 'a function of the URL', key);
  if (typeof send !== 'function') badOption('fetch', 'a fetch function', send);
  const maxWaitMs = maxWait === undefined ? undefined : parseMaxWait(maxWait, 'maxWait');

  /** Charges `k` enough that its next request passes no sooner than `ms` from now (the policies' own units). */
  async function holdOff(k: string, ms: number): Promise<void> {
    const now = await limiter.peek(k);
    let delta = 0;
    for (const p of now.policies) {
      if (p.concurrent) continue;
      // The units left now, then the units that come back in `ms`, refilled or windowed at limit per window.
      delta = Math.max(delta, p.remaining + Math.ceil((ms * p.limit) / p.windowMs));
    }
    if (delta > 0) await limiter.adjust(k, delta).catch(() => undefined);
  }

  return async function rateLimited(input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]): Promise<Response> {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const k = key(url);
    const wait: WaitOptions = {};
    if (maxWaitMs !== undefined) wait.maxWait = maxWaitMs;
    const signal = init?.signal ?? (input instanceof Request ? input.signal : undefined);
    if (signal) wait.signal = signal;
    await limiter.wait(k, wait);
    const response = await send(input, init);
    if (response.status === 429 || response.status === 503) {
      const ms = upstreamResetMs(response.headers, Date.now());
      if (ms !== undefined) await holdOff(k, ms);
    }
    return response;
  };
}
