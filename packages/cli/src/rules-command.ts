// The rules commands: an operator changes a limit, blocks a network or lifts a ban, in force on every
// process that shares the store within its `refresh` (createRules in @sluice/core):
//   sluice override set KEY POLICY... [--scope S] [--ttl D] [--reason R]
//   sluice override clear KEY [--scope S]
//   sluice deny add PATTERN... [--scope S] [--ttl D] [--reason R]
//   sluice allow add PATTERN... [--scope S] [--ttl D] [--reason R]
//   sluice rules list [--json]
//   sluice rules remove KIND PATTERN [--scope S]
// args.ts parses them (parseRulesCommand); main.ts connects and runs them (runRules) under --timeout.
// Each names the prefix it wrote to (or read), and says so on stderr when no limiter reading the rules of
// that prefix has been seen in the store lately (RuleStore.seen: marked at each of their refreshes, for a
// minute or 3 refreshes): a rule under a prefix no app reads is in force nowhere.
import { createRules, memoryStore, type PolicyInput, type Rule, type RuleKind, type Rules, redisStore, type Store } from '@sluice/core';
import type { Cluster, Redis } from 'ioredis';
import { unknownWord } from './unknown-word.js';

/** A rules command, parsed. */
export interface RulesCommand {
  command: 'rules';
  action: 'override-set' | 'override-clear' | 'deny-add' | 'allow-add' | 'list' | 'remove';
  /** KEY or PATTERNs (remove: one PATTERN). */
  patterns: string[];
  /** override set: the POLICYs. */
  policies: PolicyInput[];
  /** remove: the KIND. */
  kind?: RuleKind;
  scope: string | undefined;
  ttl: string | undefined;
  reason: string | undefined;
  json: boolean;
  redisUrl: string;
  prefix: string;
  cluster: boolean;
  timeoutMs: number;
}

/** The rules commands: each first word, and the words that may follow it. */
export const RULE_VERBS = { override: ['set', 'clear'], deny: ['add'], allow: ['add'], rules: ['list', 'remove'] } as const;

/** The first words of each rules command. */
export const RULE_COMMANDS = Object.keys(RULE_VERBS) as Array<keyof typeof RULE_VERBS>;

export const RULES_USAGE = `
  override set KEY POLICY...   KEY gets POLICY (one or several) instead of the app's, on every process
  override clear KEY           KEY is back to the app's policy
  deny add PATTERN...          refuse a key, an address or a CIDR range ('203.0.113.0/24', '2001:db8::/32')
  allow add PATTERN...         never limit a key, an address or a CIDR range
  rules list                   the rules in force (--json: as JSON)
  rules remove KIND PATTERN    remove a rule (KIND: override, deny or allow): lift a block or a ban

Rule options: --scope SCOPE (only that counter), --ttl TIME (it lapses by itself: '1h', '30m'),
  --reason TEXT (shown by rules list)`;

/**
 * A rules command from its words (after the command's first) and the options: throws `usage(message)`
 * for a bad one. POLICYs are read as --policy reads them (`policyOf`).
 */
export function parseRulesCommand(
  first: string,
  words: string[],
  values: { scope?: string; ttl?: string; reason?: string; json?: boolean },
  common: Pick<RulesCommand, 'redisUrl' | 'prefix' | 'cluster' | 'timeoutMs'>,
  policyOf: (text: string) => PolicyInput,
  usage: (message: string) => Error,
): RulesCommand {
  const [verb, ...rest] = words;
  const base = {
    patterns: [],
    policies: [],
    scope: values.scope,
    ttl: values.ttl,
    reason: values.reason,
    json: values.json === true,
    ...common,
  };
  const need = (n: number, what: string) => {
    if (rest.length < n || rest.some((w) => w === '')) throw usage(`${first} ${verb} needs ${what}`);
  };
  if (values.scope === '') throw usage('--scope must be a non-empty string');
  if (first === 'override' && verb === 'set') {
    need(2, 'KEY and at least one POLICY');
    return { ...base, command: 'rules', action: 'override-set', patterns: [rest[0] as string], policies: rest.slice(1).map(policyOf) };
  }
  if (first === 'override' && verb === 'clear') {
    need(1, 'a KEY');
    if (rest.length > 1) throw usage('override clear takes one KEY');
    return { ...base, command: 'rules', action: 'override-clear', patterns: rest };
  }
  if ((first === 'deny' || first === 'allow') && verb === 'add') {
    need(1, 'at least one PATTERN');
    return { ...base, command: 'rules', action: first === 'deny' ? 'deny-add' : 'allow-add', patterns: rest };
  }
  if (first === 'rules' && verb === 'list') {
    if (rest.length > 0) throw usage('rules list takes no arguments');
    return { ...base, command: 'rules', action: 'list' };
  }
  if (first === 'rules' && verb === 'remove') {
    need(2, 'KIND and PATTERN');
    const kind = rest[0] as RuleKind;
    if (kind !== 'override' && kind !== 'deny' && kind !== 'allow')
      throw usage(unknownWord('rules remove KIND', kind, ['override', 'deny', 'allow'], 'override, deny or allow'));
    if (rest.length > 2) throw usage('rules remove takes one KIND and one PATTERN');
    return { ...base, command: 'rules', action: 'remove', kind, patterns: [rest[1] as string] };
  }
  const verbs: readonly string[] = RULE_VERBS[first as keyof typeof RULE_VERBS];
  throw usage(
    verb === undefined ? `${first} needs ${verbs.join(' or ')}` : unknownWord(`${first} command`, verb, verbs, verbs.join(' or ')),
  );
}

/** One rule as a line of `rules list`. */
export function ruleLine(rule: Rule): string {
  const parts = [rule.kind, JSON.stringify(rule.pattern)];
  if (rule.scope !== undefined) parts.push(`scope ${JSON.stringify(rule.scope)}`);
  if (rule.policy !== undefined) parts.push(`policy ${rule.policy.join(' ')}`);
  if (rule.ban) parts.push('ban');
  if (rule.expiresAt !== undefined) parts.push(`until ${new Date(rule.expiresAt).toISOString()}`);
  if (rule.reason !== undefined) parts.push(`reason ${JSON.stringify(rule.reason)}`);
  return parts.join('  ');
}

/**
 * Rules on the connected store, for a command; the caller closes them. A command never waits for a
 * periodic refresh (a write reads its own back), and must not mark the prefix seen as an app's limiter
 * does: its refresh is longer than any command runs.
 */
export function openRules(store: Store, prefix: string, onEvent?: Parameters<typeof createRules>[0]['onEvent']): Rules {
  return createRules({ store, prefix, refresh: '1h', ...(onEvent ? { onEvent } : {}) });
}

/** Runs a rules command on the connected client; writes what it did, one line per change. Rejects as the rules do. */
export async function runRules(
  command: RulesCommand,
  client: Redis | Cluster,
  write: (to: 'out' | 'err', text: string) => void,
): Promise<void> {
  const store = redisStore({ client });
  const rules = openRules(store, command.prefix);
  try {
    await runOn(command, rules, write);
  } finally {
    await rules.close();
  }
  if (!(await store.rules?.seen(command.prefix))) {
    write(
      'err',
      `sluice: no limiter reading the rules of prefix ${JSON.stringify(command.prefix)} has been seen in this store lately: is the app's prefix another? (--prefix)\n`,
    );
  }
}

async function runOn(command: RulesCommand, rules: Rules, write: (to: 'out' | 'err', text: string) => void): Promise<void> {
  const { scope, ttl, reason, prefix } = command;
  const options = {
    ...(scope === undefined ? {} : { scope }),
    ...(ttl === undefined ? {} : { ttl: ttl as never }),
    ...(reason === undefined ? {} : { reason }),
  };
  const where = ` (prefix ${JSON.stringify(prefix)}${scope === undefined ? '' : `, scope ${JSON.stringify(scope)}`})`;
  switch (command.action) {
    case 'override-set': {
      const [key] = command.patterns as [string];
      await rules.override(key, command.policies, options);
      write(
        'out',
        `override ${JSON.stringify(key)}: ${command.policies.map((p) => (typeof p === 'string' ? p : JSON.stringify(p))).join(' ')}${where}\n`,
      );
      return;
    }
    case 'override-clear': {
      const [key] = command.patterns as [string];
      const had = await rules.remove('override', key, scope === undefined ? undefined : { scope });
      write(
        had ? 'out' : 'err',
        had ? `override ${JSON.stringify(key)} cleared${where}\n` : `sluice: no override for ${JSON.stringify(key)}${where}\n`,
      );
      return;
    }
    case 'deny-add':
    case 'allow-add': {
      const kind = command.action === 'deny-add' ? 'deny' : 'allow';
      // Each pattern is checked before any is written, by the same checks on rules in memory: a typo in
      // the third must not leave two written.
      const probe = createRules({ store: memoryStore() });
      try {
        for (const pattern of command.patterns) await probe[kind](pattern, options);
      } finally {
        await probe.close();
      }
      for (const pattern of command.patterns) await rules[kind](pattern, options);
      for (const pattern of command.patterns) write('out', `${kind} ${JSON.stringify(pattern)}${where}\n`);
      return;
    }
    case 'list': {
      const all: Rule[] = [];
      for await (const rule of rules.list()) all.push(rule);
      all.sort((a, b) => a.kind.localeCompare(b.kind) || a.pattern.localeCompare(b.pattern));
      if (command.json) write('out', `${JSON.stringify(all, null, 2)}\n`);
      else for (const rule of all) write('out', `${ruleLine(rule)}\n`);
      if (!command.json && all.length === 0) write('err', `sluice: no rules${where}\n`);
      return;
    }
    case 'remove': {
      const [pattern] = command.patterns as [string];
      const had = await rules.remove(command.kind as RuleKind, pattern, scope === undefined ? undefined : { scope });
      write(
        had ? 'out' : 'err',
        had
          ? `removed ${command.kind} ${JSON.stringify(pattern)}${where}\n`
          : `sluice: no ${command.kind} rule for ${JSON.stringify(pattern)}${where}\n`,
      );
      return;
    }
  }
}
