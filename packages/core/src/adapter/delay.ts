// The adapters' `delay`: a request the limiter refuses is held until its turn instead, when
// that comes within maxWait and fewer than maxQueued are held by this middleware in this process; else
// it is answered 429 as usual. It waits by limiter.wait (a reservation: its place in line, in every
// process' order); a client that leaves while held gives its place back (the wait's abort).
import type { Decision } from '../decision.js';
import { type Duration, parseMaxWait } from '../duration.js';
import { badOption } from '../errors.js';
import type { ConsumeOptions, Limiter, WaitOptions } from '../limiter-api.js';
import { WaitError } from '../wait.js';
import type { RawResponse } from './settle.js';

/** The `delay` option: hold a limited request until its turn. */
export interface DelayOptions {
  /** The longest a request is held; one whose turn is further off is answered 429. */
  maxWait: Duration;
  /** The most requests held at once by one middleware in this process; past it, 429. Default 1000. */
  maxQueued?: number;
}

export interface ResolvedDelay {
  maxWaitMs: number;
  maxQueued: number;
}

const DELAY_NAMES = ['maxWait', 'maxQueued'];

/** Checks `delay` at construction: maxWait a duration or 0, maxQueued a positive integer (default 1000). */
export function isDelay(v: unknown, n: string): ResolvedDelay {
  if (v === null || typeof v !== 'object') badOption(n, "an object such as { maxWait: '5s' }", v);
  for (const name of Object.keys(v))
    if (!DELAY_NAMES.includes(name)) badOption(`${n}.${name}`, 'absent: delay takes maxWait and maxQueued', name);
  const { maxWait, maxQueued = 1000 } = v as DelayOptions;
  if (maxWait === undefined) badOption(`${n}.maxWait`, "a duration such as '5s'", maxWait);
  const maxWaitMs = parseMaxWait(maxWait, `${n}.maxWait`);
  if (!Number.isInteger(maxQueued) || maxQueued < 1) badOption(`${n}.maxQueued`, 'a positive integer', maxQueued);
  return { maxWaitMs, maxQueued };
}

/**
 * `denied`, told to retry after `retryAfterMs` when that is later: the store's refusal of the wait counts
 * the places already in line, which a denial the deny cache held from before they were taken does not.
 * The binding policy (the one that frees last) takes the later retry too, as the RateLimit header reads it.
 */
function later(denied: Decision, retryAfterMs: number): Decision {
  if (retryAfterMs <= denied.retryAfterMs) return denied;
  const policies = denied.policies.map((p) => (p.name === denied.policy ? { ...p, retryAfterMs } : p));
  return { ...denied, retryAfterMs, policies };
}

/** Holds a limited request until its turn: the wait's allowed Decision, or `denied` (told its own turn). */
export type Hold = (denied: Decision, key: string, charge: ConsumeOptions, raw: RawResponse | undefined) => Promise<Decision>;

export function holder(limiter: Limiter, delay: ResolvedDelay): Hold {
  const { maxWaitMs, maxQueued } = delay;
  let held = 0;
  return async function hold(denied, key, charge, raw) {
    // A rule's refusal, or the store's absence (fail-closed), has no turn to wait for: answered as it is.
    if (denied.source === 'rule' || denied.source === 'fail-closed') return denied;
    // A turn past maxWait, a full queue or a client gone: 429.
    if (denied.retryAfterMs > maxWaitMs || held >= maxQueued || raw?.destroyed) return denied;
    const controller = new AbortController();
    raw?.once('close', () => controller.abort(new Error('the client left')));
    const options: WaitOptions = { maxWait: maxWaitMs, signal: controller.signal };
    if (charge.scope !== undefined) options.scope = charge.scope;
    if (charge.cost !== undefined) options.cost = charge.cost;
    if (charge.policy !== undefined) options.policy = charge.policy;
    held++;
    try {
      return await limiter.wait(key, options);
    } catch (error) {
      // Its turn is past maxWait (ERR_SLUICE_WAIT), or the client left (its place given back).
      return error instanceof WaitError ? later(denied, error.retryAfterMs) : denied;
    } finally {
      held--;
    }
  };
}
