// The rules stage: the first a consume or peek goes through when the limiter has `rules`. It matches the
// call's key, scope and client IP against this process' copy of the rules (rules/match.ts; no store call)
// and answers a deny or an allow itself, or names the policy set an override puts in place of the
// limiter's or the plan's. Everything else goes on as usual.
import type { Decision } from './decision.js';
import { badOption } from './errors.js';
import { decisionChannel, type LimiterEvent } from './events.js';
import type { ResolvedLimiterOptions } from './limiter-options.js';
import type { PolicySet } from './policy-set.js';
import { createBan } from './rules/ban.js';
import type { Rule } from './rules/match.js';
import { createRules, RULES, type RulesInside } from './rules/rules.js';

/** The rules stage of a limiter (limiter.ts wires it): undefined when it has neither `rules` nor `ban`. */
export interface RuleStage {
  /** The rules' verdict on a call: its caller's key, its scope, its client IP (adapters). */
  check(key: string, scope: string | undefined, ip: unknown): RuleVerdict;
  /** A deny's or an allow's decision as the call's answer, published on sluice:decision like any other. */
  answer(counter: string, decision: Decision): Promise<Decision>;
  /** With `ban`: counts the decision's denial once it is made (a rule's own denials are not counted). */
  watch(key: string, scope: string | undefined, tag: string, decision: Promise<Decision>): Promise<Decision>;
  close(): Promise<void>;
}

/** The stage for a limiter's options; `setOf` parses an override's policies (the limiter's cache). */
export function createRuleStage(
  o: ResolvedLimiterOptions,
  setOf: (inputs: unknown[]) => PolicySet,
  emit: (event: Omit<LimiterEvent, 'prefix'>) => void,
): RuleStage | undefined {
  if (o.rules === undefined && o.ban === undefined) return undefined;
  let own: { close(): Promise<void> } | undefined;
  let inside = o.rules;
  if (inside === undefined) {
    // A ban without rules: rules of the limiter's own store and prefix, which this limiter closes.
    if (o.store.rules === undefined)
      badOption('ban', 'given with rules, or on a store that keeps rules (memoryStore() or redisStore())', o.ban);
    const made = createRules({ store: o.store, prefix: o.prefix });
    own = made;
    inside = (made as unknown as { [RULES]: RulesInside })[RULES];
  }
  inside.attach();
  const check = createRuleCheck(inside, setOf);
  const ban = o.ban && createBan(o.ban, inside, o.prefix, (error, key) => emit({ type: 'rule-error', key, error }));
  return {
    check: (key, scope, ip) => check(key, scope, typeof ip === 'string' ? ip : undefined),
    answer(counter, decision) {
      if (decisionChannel.hasSubscribers) decisionChannel.publish({ prefix: o.prefix, key: counter, decision, durationMs: 0 });
      return Promise.resolve(decision);
    },
    watch: (key, scope, tag, decision) =>
      ban === undefined
        ? decision
        : decision.then((d) => {
            if (!d.allowed && d.source !== 'rule') ban(key, scope, tag);
            return d;
          }),
    close: async () => own?.close(),
  };
}

/** What the rules say of a call: a decision (deny, allow), an override's set, or nothing. */
export type RuleVerdict = { decision: Decision; set?: undefined } | { decision?: undefined; set: PolicySet } | undefined;

/**
 * The stage: `(key, scope, ip)` -> the rules' verdict. `setOf(inputs)` parses an override's policies (the
 * limiter's policy cache); a set is kept per rule, so an override costs its parse once.
 */
export function createRuleCheck(
  rules: RulesInside,
  setOf: (inputs: unknown[]) => PolicySet,
): (key: string, scope: string | undefined, ip: string | undefined) => RuleVerdict {
  const sets = new WeakMap<Rule, PolicySet | null>();
  const overrideSet = (rule: Rule): PolicySet | undefined => {
    let set = sets.get(rule);
    if (set === undefined) {
      try {
        set = setOf((rule.policy ?? []).map((p) => (p.startsWith('{') ? (JSON.parse(p) as unknown) : p)));
      } catch {
        // A policy this version cannot read (written by a later one): the usual policies decide.
        set = null;
      }
      sets.set(rule, set);
    }
    return set ?? undefined;
  };
  return (key, scope, ip) => {
    const set = rules.current();
    if (set.size === 0) return undefined;
    const rule = set.match(key, scope, ip, rules.now);
    if (rule === undefined) return undefined;
    if (rule.kind === 'override') {
      const over = overrideSet(rule);
      return over === undefined ? undefined : { set: over };
    }
    return { decision: ruleDecision(rule, rule.expiresAt === undefined ? 0 : rules.now()) };
  };
}

/**
 * A deny's or an allow's decision: `source: 'rule'` with the rule, and no counts. A deny's retry is the
 * time until the rule lapses, 0 when it does not.
 */
export function ruleDecision(rule: Rule, now: number): Decision {
  const retry = rule.kind === 'deny' && rule.expiresAt !== undefined ? Math.max(1, Math.ceil(rule.expiresAt - now)) : 0;
  return {
    allowed: rule.kind === 'allow',
    limit: 0,
    remaining: 0,
    resetMs: retry,
    retryAfterMs: retry,
    policy: rule.kind,
    policies: [],
    source: 'rule',
    rule,
  };
}
