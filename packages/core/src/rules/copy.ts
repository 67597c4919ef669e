// A process' copy of a prefix's rules (rules.ts makes one per createRules): the RuleSet decisions match
// (match.ts), kept up to date from the store (store/contract.ts RuleStore) without a call on a decision's path.
//
// Refresh: every `refresh` (default 1 s) the copy asks the store for the changes since the version it
// holds (one script call, store/keys.ts rulesKeys): none, mostly, and then the call is all it costs; else the
// rules changed since, which it puts into or drops from its RuleSet one by one. So a change is in force on
// every process within `refresh` plus a round trip, and a refresh costs the changes, not the rules held:
// an import of 100,000 rules costs each process what it reads, once. A copy the store's log no longer
// reaches back to (the first read, or one far behind) gets every rule and builds its RuleSet afresh.
// A write's caller waits until the copy holds its write (reach), so its next decision sees the rule; the
// writes that finish while a refresh is under way share the next one.
// A failed refresh is a 'rule-error' event; the copy keeps the last rules it knew (a store outage does not
// lift a block), and the next tick tries again.
// Expiry: each copy knows the store clock's offset from its own (read with every refresh) and stops
// matching a rule at its expiresAt, so it lapses everywhere at once without a write. The store drops lapsed
// rules as later writes sweep them, and the copies with them.
// Seen: a copy that a limiter holds (attach) marks the prefix in the store at each periodic refresh, so
// that `sluice deny add` can tell when no limiter reads the prefix it wrote to (store/contract.ts RuleStore.seen).
import type { LimiterEvent } from '../events.js';
import type { RuleChanges, RuleStore } from '../store/contract.js';
import { clearInterval, clearTimeout, setInterval, setTimeout } from '../timers.js';
import { decodeRule, ruleIdentity } from './entry.js';
import { type Rule, RuleSet } from './match.js';

/** A process' copy of a prefix's rules. */
export interface RuleCopy {
  /** The rules in force now. */
  current(): RuleSet;
  /** Now on the store's clock (epoch ms), as this process reckons it. */
  now(): number;
  /** Resolves once the first read finished (or failed). */
  readonly ready: Promise<void>;
  /** Resolves once the copy holds `version` (a write's), or a refresh that started after the call failed. */
  reach(version: number): Promise<void>;
  /** A limiter holds these rules: the periodic refreshes mark the prefix seen. */
  attach(): void;
  /** Stops refreshing. */
  close(): Promise<void>;
}

/** The copy of `prefix`'s rules in `store`, refreshed every `refreshMs`; `emit` hears rule-change and rule-error. */
export function createRuleCopy(
  store: RuleStore,
  prefix: string,
  refreshMs: number,
  emit: (event: Omit<LimiterEvent, 'prefix'>) => void,
): RuleCopy {
  let set = new RuleSet();
  let version = -1;
  let offset = 0;
  let attached = false;
  /** A periodic refresh of an attached copy came: the next read marks the prefix seen. */
  let markDue = false;
  /** The refresh under way, and the one that starts after it (writers share it). */
  let running: Promise<void> | undefined;
  let next: Promise<void> | undefined;
  // A store call that never answers (a client that queues while a Cluster finds its slots) must not hold
  // the refreshes, or a write's caller, for ever; a read of every rule (100,000 take a few hundred ms of a
  // busy machine, seconds of a very busy one) must not be cut short.
  const deadlineMs = Math.max(60_000, refreshMs);
  // A mark outlives a few missed refreshes.
  const markMs = Math.max(60_000, 3 * refreshMs);

  const take = (changes: RuleChanges): void => {
    if (changes.full) {
      const rules: Rule[] = [];
      for (const [id, value] of changes.entries) {
        const rule = value === null ? undefined : decodeRule(id, value);
        if (rule !== undefined) rules.push(rule);
      }
      set = new RuleSet(rules);
      return;
    }
    for (const [id, value] of changes.entries) {
      const rule = value === null ? undefined : decodeRule(id, value);
      if (rule !== undefined) set.put(rule);
      else {
        // Removed, lapsed, or written by a later version in a form this one cannot read.
        const held = ruleIdentity(id);
        if (held !== undefined) set.drop(held.kind, held.scope, held.pattern);
      }
    }
  };
  const read = async (): Promise<void> => {
    const mark = markDue;
    markDue = false;
    try {
      const changes = await timed(store.changes(prefix, version, mark ? markMs : 0), deadlineMs);
      offset = changes.now - Date.now();
      if (changes.version === version && !changes.full) return;
      take(changes);
      version = changes.version;
      emit({ type: 'rule-change', version, rules: set.size });
    } catch (error) {
      emit({ type: 'rule-error', error: error instanceof Error ? error : new Error(String(error)) });
    }
  };
  const refresh = (): Promise<void> => {
    running ??= read().finally(() => {
      running = undefined;
    });
    return running;
  };
  /** A refresh that starts after this call: the one under way may have read before the caller's write landed. */
  const after = (): Promise<void> => {
    if (running === undefined) return refresh();
    next ??= running.then(() => {
      next = undefined;
      return refresh();
    });
    return next;
  };

  const ready = refresh();
  const timer = setInterval(() => {
    markDue ||= attached;
    void refresh();
  }, refreshMs);
  timer.unref?.();
  return {
    current: () => set,
    now: () => Date.now() + offset,
    ready,
    reach: (wrote) => (version >= wrote ? Promise.resolve() : after()),
    attach() {
      attached = true;
    },
    async close() {
      clearInterval(timer);
      await next;
      await running;
    },
  };
}

/** `call`, or a rejection once `ms` passed without its answer. */
export function timed<T>(call: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the store did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([call, late]).finally(() => clearTimeout(timer));
}
