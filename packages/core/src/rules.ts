// Rules operators change at run time (DESIGN.md "Limits that operators change at run time"): overrides,
// deny and allow lists, bans. They live in the store (store.ts RuleStore: Redis, or the memory store for
// one process); each process holds a copy (rule-match.ts RuleSet) that decisions match without a store call.
//
// Refresh: every `refresh` (default 1 s) the copy reads the store's version counter and its clock (one small
// script call, keys.ts rulesKeys); only when the version moved does it load every rule, and build a new
// RuleSet that replaces the old one whole. So a change is in force on every process within `refresh` plus
// the reload's round trip, and an idle rule set costs the store one tiny call per process per `refresh`.
// A failed refresh is a 'rule-error' event; the copy keeps the last rules it knew (a store outage does not
// lift a block), and the next tick tries again.
// Expiry: a rule with `ttl` gets its expiresAt from the store's clock when written (lua/rules.lua); each
// copy knows the store clock's offset from its own (read with every version) and stops matching the rule
// at that instant, so it lapses everywhere at once without a write. The store deletes lapsed rules when
// it next loads them.
// Writes (override, deny, allow, remove, a ban) are one atomic script call that also bumps the version;
// one that fails rejects with a SluiceError (ERR_SLUICE_STORE): an operator must know the rule did not
// land. The writer then reloads its own copy at once, so its next decision sees the rule.

import { parseAddress } from './address.js';
import type { Duration } from './duration.js';
import { parseDuration } from './duration.js';
import { badOption, describe, SluiceError } from './errors.js';
import { eventsHeard, publish } from './events.js';
import type { LimiterEvent } from './limiter-options.js';
import { checkNames, isFunction, ownCopy } from './options.js';
import { type PolicyInput, parsePolicies } from './policy.js';
import { type Rule, type RuleKind, RuleSet } from './rule-match.js';
import type { RuleStore, Store } from './store.js';

export type { Rule, RuleKind } from './rule-match.js';

/** Options of createRules(). */
export interface RulesOptions {
  /** Where the rules live: a redisStore() (every process that shares it) or a memoryStore() (this process). */
  store: Store;
  /** The rule set's namespace: the limiters' `prefix` it is meant for. Default 'sluice'. */
  prefix?: string;
  /** How often this process checks the store for changed rules (one small read). Default '1s'. */
  refresh?: Duration;
  /** 'rule-change' (this copy's rules changed) and 'rule-error' (a refresh failed) events. Default none. */
  onEvent?: (event: LimiterEvent) => void;
}

/** Options of a rule. */
export interface RuleOptions {
  /** Only this counter: a route ('POST /login') or an adapter's `scope`. Default: every counter. */
  scope?: string;
  /** The rule expires by itself after this long, everywhere. Default: never. */
  ttl?: Duration;
  /** Why, for whoever reads the rule later (`sluice rules list`). Default none. */
  reason?: string;
}

/** Rules operators change at run time, in force on every process that shares the store. */
export interface Rules {
  /** `key` (the identity: what key(req) returned, or the client IP) gets `policy` instead of the usual one. null clears it. */
  override(key: string, policy: PolicyInput | PolicyInput[] | null, options?: RuleOptions): Promise<void>;
  /** Requests whose key (or IP, for address and CIDR patterns) matches are refused. */
  deny(pattern: string, options?: RuleOptions): Promise<void>;
  /** Requests whose key (or IP, for address and CIDR patterns) matches are never limited. */
  allow(pattern: string, options?: RuleOptions): Promise<void>;
  /** Removes a rule; resolves whether one was in force. */
  remove(kind: RuleKind, pattern: string, options?: { scope?: string }): Promise<boolean>;
  /** The rules in force, read from the store. */
  list(options?: { kind?: RuleKind }): AsyncIterable<Rule>;
  /** Stops refreshing. The rules stay in the store. */
  close(): Promise<void>;
}

/** What a limiter reads of a Rules (rule-check.ts, ban.ts): not public. */
export interface RulesInside {
  readonly prefix: string;
  readonly store: RuleStore;
  /** The copy in force now. */
  current(): RuleSet;
  /** Now on the store's clock (epoch ms), as this process reckons it. */
  now(): number;
  /** Resolves once the first load finished (or failed). */
  readonly ready: Promise<void>;
  /** Writes a ban: a deny rule with `ban: true` that lapses after `forMs`. */
  ban(pattern: string, scope: string | undefined, forMs: number, reason: string): Promise<void>;
}

/** The key a limiter finds a Rules' inside under. */
export const RULES = Symbol.for('sluice.rules');

const KINDS: readonly RuleKind[] = ['override', 'deny', 'allow'];
const PREFIX = /^[!-z|]{1,64}$/;
const RULE_OPTIONS = ['scope', 'ttl', 'reason'];

/**
 * Rules operators change at run time: per-key overrides, deny and allow lists (keys, addresses, CIDR ranges),
 * and the bans a limiter's `ban` writes. Pass it to createLimiter({ rules }) or an adapter's `rules`.
 * @example
 * const rules = createRules({ store: redisStore({ client }) });
 * await rules.override('customer:42', '5000/1m', { reason: 'ticket 1234' });
 * await rules.deny('203.0.113.0/24', { ttl: '1h' });
 */
export function createRules(options: RulesOptions): Rules {
  if (options === null || typeof options !== 'object') badOption('options', 'an object, such as { store }', options);
  checkNames(options, ['store', 'prefix', 'refresh', 'onEvent'], 'a createRules option');
  const o = ownCopy(options);
  const store = o.store as Store | undefined;
  if (store === null || typeof store !== 'object' || typeof store.decide !== 'function') {
    badOption('store', 'a Store, such as memoryStore() or redisStore({ client })', store);
  }
  const rs = store.rules;
  if (rs === undefined) badOption('store', 'a store that keeps rules (memoryStore() or redisStore())', store);
  const prefix = o.prefix === undefined ? 'sluice' : (o.prefix as string);
  if (typeof prefix !== 'string' || !PREFIX.test(prefix))
    badOption('prefix', 'a string of 1 to 64 printable characters without braces or spaces', prefix);
  const refreshMs = o.refresh === undefined ? 1000 : parseDuration(o.refresh, 'refresh');
  const onEvent = o.onEvent === undefined ? undefined : isFunction<(event: LimiterEvent) => void>(o.onEvent, 'onEvent');
  const hooks = [onEvent];
  const emit = (event: Omit<LimiterEvent, 'prefix'>) => {
    if (eventsHeard(onEvent)) publish({ prefix, ...event } as LimiterEvent, hooks);
  };

  let set = new RuleSet([]);
  let version = -1;
  let offset = 0;
  let closed = false;
  /** The refresh under way, so that ticks and writes do not load twice at once. */
  let refreshing: Promise<void> | undefined;

  // A store call that never answers (a client that queues while a Cluster finds its slots) must not hold
  // the refreshes, or a write's caller, for ever.
  // A load reads every rule (100,000 take a few hundred ms of a busy machine): it gets longer.
  const deadlineMs = Math.max(5000, refreshMs);
  const loadDeadlineMs = Math.max(60_000, refreshMs);
  const load = async (): Promise<void> => {
    const snapshot = await timed(rs.load(prefix), loadDeadlineMs);
    offset = snapshot.now - Date.now();
    const rules: Rule[] = [];
    for (const [id, value] of snapshot.entries) {
      const rule = decode(id, value);
      if (rule !== undefined) rules.push(rule);
    }
    set = new RuleSet(rules);
    version = snapshot.version;
    emit({ type: 'rule-change', version, rules: rules.length });
  };
  /** One refresh: the version, and the rules when it moved. `force` loads whatever the version. */
  const refresh = (force = false): Promise<void> => {
    if (refreshing !== undefined) return force ? refreshing.then(() => refresh(true)) : refreshing;
    const run = (async () => {
      try {
        if (!force) {
          const v = await timed(rs.version(prefix), deadlineMs);
          offset = v.now - Date.now();
          if (v.version === version) return;
        }
        await load();
      } catch (error) {
        emit({ type: 'rule-error', error: error instanceof Error ? error : new Error(String(error)) });
      } finally {
        refreshing = undefined;
      }
    })();
    refreshing = run;
    return run;
  };
  const ready = refresh(true);
  const timer = setInterval(() => void refresh(), refreshMs);
  timer.unref?.();

  const write = async (
    kind: RuleKind,
    pattern: string,
    scope: string | undefined,
    value: string | null,
    ttlMs: number,
  ): Promise<boolean> => {
    if (closed) throw new SluiceError('ERR_SLUICE_CLOSED', 'these rules are closed: make a new createRules()');
    let result: { existed: boolean };
    try {
      result = await timed(rs.write(prefix, identity(kind, scope, pattern), value, ttlMs), deadlineMs);
    } catch (error) {
      throw new SluiceError(
        'ERR_SLUICE_STORE',
        `the ${kind} rule for ${describe(pattern)} was not written: the store failed (${errorText(error)})`,
        {
          cause: error,
        },
      );
    }
    await refresh(true);
    return result.existed;
  };

  const set1 = (kind: RuleKind, pattern: unknown, extra: Record<string, unknown>, ruleOptions: unknown): Promise<void> => {
    let checked: { scope?: string; ttlMs: number; reason?: string };
    try {
      checkPattern(pattern, kind === 'override' ? 'key' : 'pattern');
      checked = checkRuleOptions(ruleOptions);
    } catch (error) {
      return Promise.reject(error);
    }
    const value = JSON.stringify({ ...extra, ...(checked.reason === undefined ? {} : { reason: checked.reason }) });
    return write(kind, pattern as string, checked.scope, value, checked.ttlMs).then(() => undefined);
  };

  const inside: RulesInside = {
    prefix,
    store: rs,
    current: () => set,
    now: () => Date.now() + offset,
    ready,
    async ban(pattern, scope, forMs, reason) {
      await write('deny', pattern, scope, JSON.stringify({ ban: true, reason }), forMs);
    },
  };

  const rules: Rules = {
    override(key, policy, ruleOptions) {
      if (policy === null) return this.remove('override', key, pickScope(ruleOptions)).then(() => undefined);
      let inputs: string[];
      try {
        parsePolicies(policy, 'policy');
        inputs = (Array.isArray(policy) ? policy : [policy]).map((p) => (typeof p === 'string' ? p : JSON.stringify(p)));
      } catch (error) {
        return Promise.reject(error);
      }
      return set1('override', key, { policy: inputs }, ruleOptions);
    },
    deny: (pattern, ruleOptions) => set1('deny', pattern, {}, ruleOptions),
    allow: (pattern, ruleOptions) => set1('allow', pattern, {}, ruleOptions),
    remove(kind, pattern, removeOptions) {
      try {
        if (!KINDS.includes(kind)) badOption('kind', "'override', 'deny' or 'allow'", kind);
        checkPattern(pattern, 'pattern');
        if (removeOptions !== undefined) checkNames(removeOptions, ['scope'], 'a remove option');
        checkScope(removeOptions?.scope);
      } catch (error) {
        return Promise.reject(error);
      }
      return write(kind, pattern, removeOptions?.scope, null, 0);
    },
    list(listOptions) {
      const kind = listOptions?.kind;
      if (kind !== undefined && !KINDS.includes(kind)) badOption('kind', "'override', 'deny' or 'allow'", kind);
      return {
        async *[Symbol.asyncIterator]() {
          let snapshot: Awaited<ReturnType<RuleStore['load']>>;
          try {
            snapshot = await timed(rs.load(prefix), loadDeadlineMs);
          } catch (error) {
            throw new SluiceError('ERR_SLUICE_STORE', `the rules could not be read: the store failed (${errorText(error)})`, {
              cause: error,
            });
          }
          for (const [id, value] of snapshot.entries) {
            const rule = decode(id, value);
            if (rule !== undefined && (kind === undefined || rule.kind === kind)) yield rule;
          }
        },
      };
    },
    async close() {
      closed = true;
      clearInterval(timer);
      await refreshing;
    },
  };
  Object.defineProperty(rules, RULES, { value: inside });
  return rules;
}

/** `call`, or a rejection once `ms` passed without its answer. */
function timed<T>(call: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the store did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([call, late]).finally(() => clearTimeout(timer));
}

/** The inside of a Rules for a limiter's `rules` option; refuses anything else. */
export function rulesInside(value: unknown, name: string): RulesInside {
  const inside = value !== null && typeof value === 'object' ? (value as { [RULES]?: RulesInside })[RULES] : undefined;
  if (inside === undefined) badOption(name, 'a Rules from createRules({ store })', value);
  return inside;
}

/** A rule's identity in the store: its kind, scope and pattern, as a JSON array (no pattern can spell another's). */
function identity(kind: RuleKind, scope: string | undefined, pattern: string): string {
  return JSON.stringify([kind, scope ?? '', pattern]);
}

/** A stored rule, or undefined for one this version cannot read (written by a later one). */
function decode(id: string, value: string): Rule | undefined {
  try {
    const [kind, scope, pattern] = JSON.parse(id) as [RuleKind, string, string];
    const bar = value.indexOf('|');
    const expiresAt = Number(value.slice(0, bar));
    const rest = JSON.parse(value.slice(bar + 1)) as { policy?: string[]; reason?: string; ban?: true };
    if (!KINDS.includes(kind) || typeof pattern !== 'string') return undefined;
    const rule: Rule = { kind, pattern };
    if (scope !== '') rule.scope = scope;
    if (Array.isArray(rest.policy)) rule.policy = rest.policy;
    if (expiresAt > 0) rule.expiresAt = expiresAt;
    if (typeof rest.reason === 'string') rule.reason = rest.reason;
    if (rest.ban === true) rule.ban = true;
    return rule;
  } catch {
    return undefined;
  }
}

const errorText = (error: unknown): string => (error instanceof Error ? error.message : describe(error));

/** Looks like an IPv4 or IPv6 address or range (a typo in one must not become an exact key that never matches). */
const looksLikeAddress = (p: string): boolean =>
  /^\d{1,3}(\.\d{1,3}){3}(\/.*)?$/.test(p) || (/^[\da-f:.%]+(\/.*)?$/i.test(p) && p.split(':').length > 2);

/** A pattern: a non-empty string; one that looks like an address or a range must be a valid one. */
function checkPattern(pattern: unknown, name: string): asserts pattern is string {
  if (typeof pattern !== 'string' || pattern === '') badOption(name, 'a non-empty string: a key, an address or a CIDR range', pattern);
  if (pattern.length > 1024) badOption(name, 'at most 1024 characters', pattern);
  if (looksLikeAddress(pattern) && parseAddress(pattern) === undefined) {
    badOption(name, "a key, an IPv4 / IPv6 address, or a CIDR range such as '203.0.113.0/24' or '2001:db8::/32'", pattern);
  }
}

function checkScope(scope: unknown): string | undefined {
  if (scope !== undefined && (typeof scope !== 'string' || scope === '')) badOption('scope', 'a non-empty string', scope);
  return scope as string | undefined;
}

function pickScope(ruleOptions: RuleOptions | undefined): { scope?: string } | undefined {
  return ruleOptions?.scope === undefined ? undefined : { scope: ruleOptions.scope };
}

function checkRuleOptions(ruleOptions: unknown): { scope?: string; ttlMs: number; reason?: string } {
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
