// One pattern's rules in a scope of a RuleSet (match.ts): a rule of each kind that is matched, and the
// rules of other spellings of the same address waiting behind it. Two spellings of an address
// ('10.0.0.1', '10.0.0.1/32', '::ffff:10.0.0.1') are two rules in the store but one place in the trie:
// the one written last is matched, and when it goes, the latest of the others takes its place.
import type { Rule, RuleKind } from './entry.js';

/** One pattern's rules, a kind each matched (per scope). */
export interface Slot {
  deny?: Rule;
  allow?: Rule;
  override?: Rule;
  /** Rules of other spellings of the address, oldest first: none, mostly. */
  others?: Rule[];
}

export const newSlot = (): Slot => ({});

/** The slot holds no rule (nor any waiting: those wait only behind one). */
export const emptySlot = (slot: Slot): boolean => slot.deny === undefined && slot.allow === undefined && slot.override === undefined;

/** Puts `rule` in `slot`, in place of the one of its kind and pattern; true when it is a rule the slot did not hold. */
export function putInSlot(slot: Slot, rule: Rule): boolean {
  const held = slot[rule.kind];
  slot[rule.kind] = rule;
  if (held === undefined) return true;
  if (held.pattern === rule.pattern) return false;
  const others = slot.others ?? [];
  const known = takeOther(slot, (r) => r.kind === rule.kind && r.pattern === rule.pattern);
  others.push(held);
  slot.others = others;
  return known === undefined;
}

/** Takes the rule of `kind` and `pattern` out of `slot`; true when it held one. */
export function dropFromSlot(slot: Slot, kind: RuleKind, pattern: string): boolean {
  const held = slot[kind];
  if (held === undefined) return false;
  if (held.pattern === pattern) {
    slot[kind] = takeOther(slot, (r) => r.kind === kind);
    return true;
  }
  return takeOther(slot, (r) => r.kind === kind && r.pattern === pattern) !== undefined;
}

/** Every rule in `slot`, waiting ones included. */
export function* slotRules(slot: Slot): IterableIterator<Rule> {
  if (slot.deny) yield slot.deny;
  if (slot.allow) yield slot.allow;
  if (slot.override) yield slot.override;
  if (slot.others) yield* slot.others;
}

/** Takes the latest of the rules waiting in `slot` that `which` picks, or undefined. */
function takeOther(slot: Slot, which: (rule: Rule) => boolean): Rule | undefined {
  const others = slot.others ?? [];
  for (let i = others.length - 1; i >= 0; i--) {
    if (!which(others[i] as Rule)) continue;
    const [rule] = others.splice(i, 1);
    if (others.length === 0) slot.others = undefined;
    return rule;
  }
  return undefined;
}
