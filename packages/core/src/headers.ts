import { createHash } from 'node:crypto';
import type { Decision, PolicyDecision } from './decision.js';
import { badOption } from './errors.js';

/**
 * Which rate-limit headers to send. 'draft': IETF RateLimit-Policy and RateLimit (draft 10); 'legacy':
 * X-RateLimit-*; 'draft-6', 'draft-7', 'draft-8': the earlier drafts exactly as express-rate-limit writes them.
 */
export type HeadersMode = 'draft' | 'legacy' | 'both' | EarlierDraft | false;

/** The earlier drafts of the RateLimit fields, as express-rate-limit writes them. */
export type EarlierDraft = 'draft-6' | 'draft-7' | 'draft-8';

export const HEADERS_MODES: readonly HeadersMode[] = ['draft', 'legacy', 'both', 'draft-6', 'draft-7', 'draft-8', false];

/** The mode when none is given, here and in every adapter. */
export const DEFAULT_HEADERS_MODE: HeadersMode = 'draft';

/** Validates a `headers` option; undefined means the default, DEFAULT_HEADERS_MODE. */
export function parseHeadersMode(value: unknown, option = 'headers'): HeadersMode {
  if (value === undefined) return DEFAULT_HEADERS_MODE;
  if (!HEADERS_MODES.includes(value as HeadersMode))
    badOption(option, "'draft', 'legacy', 'both', 'draft-6', 'draft-7', 'draft-8' or false", value);
  return value as HeadersMode;
}

/**
 * Whole seconds, rounded up, at most an RFC 9651 sf-integer's 15 digits. Policies are bounded well below it
 * (policy/bounds.ts), but a debt charged by adjust() may be waited out for longer than any window.
 */
const seconds = (ms: number) => Math.min(999_999_999_999_999, Math.ceil(ms / 1000));

/** Whole seconds a client should wait; on a denial, at least 1. */
export function retryAfterSeconds(decision: Decision): number {
  return Math.max(1, seconds(decision.retryAfterMs));
}

function member(p: PolicyDecision): string {
  const t = p.retryAfterMs > 0 ? Math.max(1, seconds(p.retryAfterMs)) : seconds(p.resetMs);
  return `"${p.name}";r=${p.remaining};t=${t}`;
}

/**
 * The response headers for a decision, computed once here for every adapter. A denial always carries
 * Retry-After (whole seconds, rounded up, at least 1), whatever the mode. A fail-open or fail-closed decision
 * knows no count, so it carries the policy but no remaining or reset. Default mode 'draft'
 * (draft-ietf-httpapi-ratelimit-headers-10). 'draft-8' names the partition by `key` (its `pk`).
 * @example rateLimitHeaders(decision) // { 'RateLimit-Policy': '"100-per-60s";q=100;w=60', RateLimit: '"100-per-60s";r=42;t=18' }
 */
export function rateLimitHeaders(decision: Decision, options: { headers?: HeadersMode; key?: string } = {}): Record<string, string> {
  const mode = options.headers ?? DEFAULT_HEADERS_MODE;
  const out: Record<string, string> = {};
  if (!decision.allowed) out['Retry-After'] = String(retryAfterSeconds(decision));
  if (mode === 'draft-6' || mode === 'draft-7' || mode === 'draft-8') return earlierDraft(decision, mode, options.key ?? '', out);
  const known = decision.source !== 'fail-open' && decision.source !== 'fail-closed';
  if (mode === 'draft' || mode === 'both') {
    // A concurrent policy has no window: q is its slots, and no w.
    out['RateLimit-Policy'] = decision.policies
      .map((p) => (p.concurrent ? `"${p.name}";q=${p.limit}` : `"${p.name}";q=${p.limit};w=${Math.max(1, seconds(p.windowMs))}`))
      .join(', ');
    if (known) out.RateLimit = decision.policies.map(member).join(', ');
  }
  if (mode === 'legacy' || mode === 'both') {
    out['X-RateLimit-Limit'] = String(decision.limit);
    if (known) {
      out['X-RateLimit-Remaining'] = String(decision.remaining);
      const wait = decision.allowed ? decision.resetMs : decision.retryAfterMs;
      out['X-RateLimit-Reset'] = String(seconds(Date.now() + wait));
    }
  }
  return out;
}

/** draft-8's partition key as express-rate-limit computes it: base64 of the first 12 hex digits of the key's SHA-256. */
export function partitionKey(key: string): string {
  return Buffer.from(createHash('sha256').update(key).digest('hex').slice(0, 12)).toString('base64');
}

/**
 * The binding policy's fields in an earlier draft, as express-rate-limit 7 and 8 write them (one policy,
 * the binding one): its limit, window in whole seconds, remaining, and the seconds to its reset.
 */
function earlierDraft(decision: Decision, mode: EarlierDraft, key: string, out: Record<string, string>): Record<string, string> {
  const binding = decision.policies.find((p) => p.name === decision.policy) ?? decision.policies[0];
  const windowS = Math.ceil((binding?.windowMs ?? 0) / 1000);
  const reset = seconds(Math.max(0, decision.resetMs));
  const { limit, remaining } = decision;
  if (mode === 'draft-8') {
    out['RateLimit-Policy'] = `"${decision.policy}"; q=${limit}; w=${windowS}; pk=:${partitionKey(key)}:`;
    out.RateLimit = `"${decision.policy}"; r=${remaining}; t=${reset}`;
    return out;
  }
  out['RateLimit-Policy'] = `${limit};w=${windowS}`;
  if (mode === 'draft-7') {
    out.RateLimit = `limit=${limit}, remaining=${remaining}, reset=${reset}`;
    return out;
  }
  out['RateLimit-Limit'] = String(limit);
  out['RateLimit-Remaining'] = String(remaining);
  if (reset > 0) out['RateLimit-Reset'] = String(reset);
  return out;
}
