// Rules operators change at run time (DESIGN.md "Limits that operators change at run time"): overrides,
// deny and allow lists, bans. They live in the store (store/contract.ts RuleStore: Redis, or the memory store for
// one process); each process holds a copy (copy.ts) that decisions match without a store call.
// Writes (override, deny, allow, remove, a ban) are one atomic script call each, whose cost does not
// depend on the rules stored; one that fails rejects with a SluiceError (ERR_SLUICE_STORE): an operator
// must know the rule did not land. The writer's copy then takes the write in before the call resolves, so
// its next decision sees the rule. A limiter takes only rules of its own prefix (limiter-options.ts).

import type { Duration } from '../duration.js';
import { parseDuration } from '../duration.js';
import { badOption, describe, SluiceError } from '../errors.js';
import { eventsHeard, type LimiterEvent, publish } from '../events.js';
import { holdsLocally } from '../held-locally.js';
import { checkNames, isFunction, ownCopy } from '../options.js';
import { type PolicyInput, parsePolicies } from '../policy/policy.js';
import type { RuleStore, Store } from '../store/contract.js';
import { createRuleCopy, timed } from './copy.js';
import type { Rule, RuleKind } from './entry.js';
import { checkPattern, checkRuleOptions, checkScope, decodeRule, identity, KINDS } from './entry.js';
import type { RuleSet } from './match.js';

export type { Rule, RuleKind } from './entry.js';

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
  /** A limiter holds these rules (rule-check.ts): the store hears of it, for `sluice deny add` (copy.ts). */
  attach(): void;
  /** Writes a ban: a deny rule with `ban: true` that lapses after `forMs`. */
  ban(pattern: string, scope: string | undefined, forMs: number, reason: string): Promise<void>;
}

/** The key a limiter finds a Rules' inside under. */
export const RULES = Symbol.for('sluice.rules');

const PREFIX = /^[!-z|]{1,64}$/;

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

  const copy = createRuleCopy(rs, prefix, refreshMs, emit);
  // resetAll (testing) deletes the prefix's rules: the copy reads them again at once (none), not at its refresh.
  const letGo = holdsLocally(store, prefix, () => copy.reach(Number.POSITIVE_INFINITY));
  let closed = false;
  const writeDeadlineMs = Math.max(5000, refreshMs);

  const write = async (
    kind: RuleKind,
    pattern: string,
    scope: string | undefined,
    value: string | null,
    ttlMs: number,
  ): Promise<boolean> => {
    if (closed) throw new SluiceError('ERR_SLUICE_CLOSED', 'these rules are closed: make a new createRules()');
    let result: { existed: boolean; version: number };
    try {
      result = await timed(rs.write(prefix, identity(kind, scope, pattern), value, ttlMs), writeDeadlineMs);
    } catch (error) {
      throw new SluiceError(
        'ERR_SLUICE_STORE',
        `the ${kind} rule for ${describe(pattern)} was not written: the store failed (${errorText(error)})`,
        {
          cause: error,
        },
      );
    }
    await copy.reach(result.version);
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
    current: copy.current,
    now: copy.now,
    ready: copy.ready,
    attach: copy.attach,
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
          let snapshot: Awaited<ReturnType<RuleStore['changes']>>;
          try {
            snapshot = await timed(rs.changes(prefix, -1, 0), Math.max(60_000, refreshMs));
          } catch (error) {
            throw new SluiceError('ERR_SLUICE_STORE', `the rules could not be read: the store failed (${errorText(error)})`, {
              cause: error,
            });
          }
          for (const [id, value] of snapshot.entries) {
            const rule = value === null ? undefined : decodeRule(id, value);
            if (rule !== undefined && (kind === undefined || rule.kind === kind)) yield rule;
          }
        },
      };
    },
    async close() {
      closed = true;
      letGo();
      await copy.close();
    },
  };
  Object.defineProperty(rules, RULES, { value: inside });
  return rules;
}

/** The inside of a Rules for a limiter's `rules` option; refuses anything else. */
export function rulesInside(value: unknown, name: string): RulesInside {
  const inside = value !== null && typeof value === 'object' ? (value as { [RULES]?: RulesInside })[RULES] : undefined;
  if (inside === undefined) badOption(name, 'a Rules from createRules({ store })', value);
  return inside;
}

const errorText = (error: unknown): string => (error instanceof Error ? error.message : describe(error));

function pickScope(ruleOptions: RuleOptions | undefined): { scope?: string } | undefined {
  return ruleOptions?.scope === undefined ? undefined : { scope: ruleOptions.scope };
}
