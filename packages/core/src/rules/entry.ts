// A rule (the Rule type) on its way in and out of the store (rules.ts writes, copy.ts and list()
// read): a caller's pattern and options checked, its identity in the store, the Rule read back from its value.
// The store keeps a rule under its identity, with the value "<expiresAt ms, 0 for none>|<the rest as JSON>"
// (lua/rules.lua).

import { parseDuration } from '../duration.js';
import { badOption } from '../errors.js';
import { checkNames, ownCopy } from '../options.js';
import { parseAddress } from './address.js';

/** What a rule does: replace the policy, refuse, or let through unlimited. */
export type RuleKind = 'override' | 'deny' | 'allow';

/** A rule, as `Rules.list()` yields it and as a decision by a rule carries it. */
export interface Rule {
  kind: RuleKind;
  /** An exact key, or an IPv4 / IPv6 address or CIDR range ('203.0.113.0/24', '2001:db8::/32'). */
  pattern: string;
  /** Only this counter (a route, or an adapter's `scope`); absent for every counter. */
  scope?: string;
  /** An override's policies: each a string policy as given ('1000/1m'), or an object policy's JSON. */
  policy?: string[];
  /** When the rule lapses, epoch ms on the store's clock; absent when it does not. */
  expiresAt?: number;
  /** Why it was set, for the operator who reads it later. */
  reason?: string;
  /** Set by a limiter's `ban`: a deny rule written after repeated denials. */
  ban?: true;
}

export const KINDS: readonly RuleKind[] = ['override', 'deny', 'allow'];
const RULE_OPTIONS = ['scope', 'ttl', 'reason'];

/** A rule's identity in the store: its kind, scope and pattern, as a JSON array (no pattern can spell another's). */
export function identity(kind: RuleKind, scope: string | undefined, pattern: string): string {
  return JSON.stringify([kind, scope ?? '', pattern]);
}

/** The kind, scope and pattern of an identity, or undefined for one this version cannot read. */
export function ruleIdentity(id: string): { kind: RuleKind; scope?: string; pattern: string } | undefined {
  try {
    const [kind, scope, pattern] = JSON.parse(id) as [RuleKind, string, string];
    if (!KINDS.includes(kind) || typeof pattern !== 'string' || typeof scope !== 'string') return undefined;
    return scope === '' ? { kind, pattern } : { kind, scope, pattern };
  } catch {
    return undefined;
  }
}

/** A stored rule, or undefined for one this version cannot read (written by a later one). */
export function decodeRule(id: string, value: string): Rule | undefined {
  const rule: Rule | undefined = ruleIdentity(id);
  if (rule === undefined) return undefined;
  try {
    const bar = value.indexOf('|');
    const expiresAt = Number(value.slice(0, bar));
    const rest = JSON.parse(value.slice(bar + 1)) as { policy?: string[]; reason?: string; ban?: true };
    if (Array.isArray(rest.policy)) rule.policy = rest.policy;
    if (expiresAt > 0) rule.expiresAt = expiresAt;
    if (typeof rest.reason === 'string') rule.reason = rest.reason;
    if (rest.ban === true) rule.ban = true;
    return rule;
  } catch {
    return undefined;
  }
}

/** Looks like an IPv4 or IPv6 address or range (a typo in one must not become an exact key that never matches). */
const looksLikeAddress = (p: string): boolean =>
  /^\d{1,3}(\.\d{1,3}){3}(\/.*)?$/.test(p) || (/^[\da-f:.%]+(\/.*)?$/i.test(p) && p.split(':').length > 2);

/** A pattern: a non-empty string; one that looks like an address or a range must be a valid one. */
export function checkPattern(pattern: unknown, name: string): asserts pattern is string {
  if (typeof pattern !== 'string' || pattern === '') badOption(name, 'a non-empty string: a key, an address or a CIDR range', pattern);
  if (pattern.length > 1024) badOption(name, 'at most 1024 characters', pattern);
  if (looksLikeAddress(pattern) && parseAddress(pattern) === undefined) {
    badOption(name, "a key, an IPv4 / IPv6 address, or a CIDR range such as '203.0.113.0/24' or '2001:db8::/32'", pattern);
  }
}

export function checkScope(scope: unknown): string | undefined {
  if (scope !== undefined && (typeof scope !== 'string' || scope === '')) badOption('scope', 'a non-empty string', scope);
  return scope as string | undefined;
}

/** A rule's options (scope, ttl, reason), checked. */
export function checkRuleOptions(ruleOptions: unknown): { scope?: string; ttlMs: number; reason?: string } {
  if (ruleOptions === undefined) return { ttlMs: 0 };
  if (ruleOptions === null || typeof ruleOptions !== 'object')
    badOption('options', 'an object such as { ttl, scope, reason }', ruleOptions);
  checkNames(ruleOptions, RULE_OPTIONS, 'a rule option');
  const r = ownCopy(ruleOptions);
  const out: { scope?: string; ttlMs: number; reason?: string } = { ttlMs: r.ttl === undefined ? 0 : parseDuration(r.ttl, 'ttl') };
  const scope = checkScope(r.scope);
  if (scope !== undefined) out.scope = scope;
  if (r.reason !== undefined) {
    if (typeof r.reason !== 'string' || r.reason.length > 1024) badOption('reason', 'a string of at most 1024 characters', r.reason);
    out.reason = r.reason;
  }
  return out;
}
