// Bans (a limiter's `ban` option): a key denied `after` times within `within` becomes a deny rule with
// `ban: true` that lapses after `for`, on every process (rules.ts).
// Denials are counted in the store (store.ts RuleStore.countDenials: one counter per counter key,
// keys.ts banKey, its window starting at the first denial), so that several processes' denials add up;
// the count is bumped only on denials, never on an allowed decision, and off the decision's path (the
// decision is answered first). A flood of denials of one key costs at most one count call in flight per
// key and process: the denials that come meanwhile go together in the next one. The process whose count
// crosses `after` (the count before its call below it, after it at or above) writes the rule, so it is
// written once however many processes deny the key; it then deletes the count, so that the key starts
// afresh when the ban lapses.
import { type Duration, parseDuration } from './duration.js';
import { badOption } from './errors.js';
import { banKey } from './keys.js';
import { checkNames, isPositiveInteger, ownCopy } from './options.js';
import type { RulesInside } from './rules.js';

/** A limiter's `ban` option. */
export interface BanOptions {
  /** Denials that make a ban. */
  after: number;
  /** ...counted within this long (from the first). */
  within: Duration;
  /** How long the ban lasts. */
  for: Duration;
}

/** `ban`, checked: each field named in its error. */
export function banSettings(v: unknown, n: string): { after: number; withinMs: number; forMs: number } {
  if (v === null || typeof v !== 'object') badOption(n, "an object such as { after: 10, within: '1m', for: '15m' }", v);
  checkNames(v, ['after', 'within', 'for'], 'a ban option', `${n}.`);
  const b = ownCopy(v);
  const missing = ['after', 'within', 'for'].filter((field) => b[field] === undefined);
  if (missing.length > 0) {
    const names = missing.join(' and ');
    badOption(n, "an object with after, within and for, such as { after: 10, within: '1m', for: '15m' }", v, `${names} missing`);
  }
  return {
    after: isPositiveInteger(b.after, `${n}.after`),
    withinMs: parseDuration(b.within, `${n}.within`),
    forMs: parseDuration(b.for, `${n}.for`),
  };
}

/**
 * The ban counter of a limiter: `denied(key, scope, tag)` after each denial that was not a rule's.
 * `report` hears a count or a write that failed.
 */
export function createBan(
  settings: { after: number; withinMs: number; forMs: number },
  rules: RulesInside,
  limiterPrefix: string,
  report: (error: Error, key: string) => void,
): (key: string, scope: string | undefined, tag: string) => void {
  const { after, withinMs, forMs } = settings;
  const { store } = rules;
  /** Per counter: the denials not yet counted in the store, while a count call is in flight. */
  const waiting = new Map<string, number>();
  const send = (counter: string, n: number, key: string, scope: string | undefined): void => {
    waiting.set(counter, 0);
    store
      .countDenials(counter, n, withinMs)
      .then(async (count) => {
        if (count - n < after && count >= after) {
          await rules.ban(key, scope, forMs, `ban: ${count} denials within ${withinMs} ms`);
          await store.countDenials(counter, -count, withinMs).catch(() => {});
        }
      })
      .catch((error: unknown) => report(error instanceof Error ? error : new Error(String(error)), key))
      .finally(() => {
        const more = waiting.get(counter) ?? 0;
        if (more > 0) send(counter, more, key, scope);
        else waiting.delete(counter);
      });
  };
  return (key, scope, tag) => {
    const counter = banKey(limiterPrefix, tag);
    const pending = waiting.get(counter);
    if (pending === undefined) send(counter, 1, key, scope);
    else waiting.set(counter, pending + 1);
  };
}
