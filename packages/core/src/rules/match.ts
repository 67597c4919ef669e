// The rules a process holds, as it matches them on every decision (copy.ts keeps it up to date;
// rule-check.ts asks). Built from a full read of the store's rules, then changed a rule at a time as the
// store's rules change (put, drop): a change costs the same for 10 rules held as for 100,000. Changes and
// matches are synchronous, so a match never sees half a change.
//
// Matching, per scope (the rules of the call's scope, then the unscoped ones):
//   - exact keys: one Map per scope, O(1);
//   - addresses and CIDR ranges: a binary trie per family (trie.ts; an IPv4-mapped IPv6 address or
//     range is IPv4), O(address bits) and in practice about log2 of the ranges. A trie, not
//     node:net's BlockList: BlockList answers only whether an address is in the list, not which rule
//     holds it (an override's policy, a rule's expiry and reason), and it checks its ranges one by one
//     (bench/rules.mjs measures both on 100,000 rules: see bench/RESULTS.md).
// A request is matched on its key (exactly, and as an address when it is one, or a range as ipKey
// writes an IPv6 client: '2001:db8:1:200::/56') and on its client IP when an adapter gives one.
// Precedence: a deny anywhere, then an allow anywhere, then the most specific override (the call's
// scope before none; an exact key before an address; a longer range before a shorter one).
// A rule whose expiresAt (the store's clock) has passed is not matched, though it is still held until
// the store's sweep of lapsed rules drops it (lua/rules.lua).
import { type Address, parseAddress, v4Number } from './address.js';
import type { Rule, RuleKind } from './entry.js';
import { dropFromSlot, emptySlot, newSlot, putInSlot, type Slot, slotRules } from './slot.js';
import { Trie } from './trie.js';

export type { Rule, RuleKind } from './entry.js';

/** The rules of one scope. */
class ScopeRules {
  readonly exact = new Map<string, Slot>();
  v4: Trie<Slot> | undefined;
  v6: Trie<Slot> | undefined;
  /** Rules held. */
  size = 0;
}

/** Most keys whose rule a RuleSet remembers (match()). */
const SEEN_KEYS = 65_536;

/** A rule is in force at `now` (store clock) when it has no expiry or has not reached it. */
const live = (rule: Rule | undefined, now: number): rule is Rule =>
  rule !== undefined && (rule.expiresAt === undefined || rule.expiresAt > now);

/** The rules a process holds, matched per request; copy.ts puts and drops them as the store's rules change. */
export class RuleSet {
  private readonly scopes = new Map<string, ScopeRules>();
  /** The rule (or null: none) of keys matched lately on themselves alone (match()); emptied by every change. */
  private readonly seen = new Map<string, Rule | null>();
  private unscoped: ScopeRules | undefined;
  private addresses = false;
  /** Rules held. */
  size = 0;
  /**
   * No rule held lapses before this (store clock, Infinity: none lapses), so the clock need not be read
   * before then. Lowered as rules come, not raised as they go: at worst the clock is read for nothing.
   */
  nextExpiry = Number.POSITIVE_INFINITY;

  constructor(rules: Iterable<Rule> = []) {
    for (const rule of rules) this.put(rule);
  }

  /** Holds `rule`, in place of the one of its kind, scope and pattern, if any. */
  put(rule: Rule): void {
    const name = rule.scope ?? '';
    let scope = this.scopes.get(name);
    if (scope === undefined) {
      scope = new ScopeRules();
      this.scopes.set(name, scope);
      if (name === '') this.unscoped = scope;
    }
    const a = parseAddress(rule.pattern);
    let slot: Slot;
    if (a === undefined) {
      slot = scope.exact.get(rule.pattern) ?? newSlot();
      scope.exact.set(rule.pattern, slot);
    } else {
      this.addresses = true;
      if (a.v6) scope.v6 ??= new Trie();
      else scope.v4 ??= new Trie();
      const trie = (a.v6 ? scope.v6 : scope.v4) as Trie<Slot>;
      const slots = trie.slots.length;
      slot = trie.slot(a.words, a.bits, newSlot);
      if (trie.slots.length === slots && emptySlot(slot)) trie.empty--;
    }
    if (putInSlot(slot, rule)) {
      scope.size++;
      this.size++;
    }
    if (rule.expiresAt !== undefined && rule.expiresAt < this.nextExpiry) this.nextExpiry = rule.expiresAt;
    this.seen.clear();
  }

  /** Lets go of the rule of `kind`, `scope` and `pattern`, if it holds one. */
  drop(kind: RuleKind, scope: string | undefined, pattern: string): void {
    const name = scope ?? '';
    const rules = this.scopes.get(name);
    if (rules === undefined) return;
    const a = parseAddress(pattern);
    const trie = a === undefined ? undefined : a.v6 ? rules.v6 : rules.v4;
    const slot = a === undefined ? rules.exact.get(pattern) : trie?.slot(a.words, a.bits);
    if (slot === undefined || !dropFromSlot(slot, kind, pattern)) return;
    rules.size--;
    this.size--;
    this.seen.clear();
    if (!emptySlot(slot)) return;
    if (rules.size === 0) {
      this.scopes.delete(name);
      if (name === '') this.unscoped = undefined;
    } else if (a === undefined) {
      rules.exact.delete(pattern);
    } else if (trie !== undefined && ++trie.empty > 1024 && trie.empty * 2 > trie.slots.length) {
      // Mostly empty slots (bans that lapsed): the same rules, in a trie of their own.
      const fresh = new Trie<Slot>();
      for (const held of trie.slots) {
        if (emptySlot(held)) continue;
        const rule = (held.deny ?? held.allow ?? held.override) as Rule;
        const at = parseAddress(rule.pattern) as Address;
        Object.assign(fresh.slot(at.words, at.bits, newSlot), held);
      }
      if (a.v6) rules.v6 = fresh;
      else rules.v4 = fresh;
    }
  }

  /** Every rule held. */
  *rules(): IterableIterator<Rule> {
    for (const scope of this.scopes.values()) {
      for (const slots of [scope.exact.values(), scope.v4?.slots ?? [], scope.v6?.slots ?? []]) {
        for (const slot of slots) yield* slotRules(slot);
      }
    }
  }

  /**
   * The rule in force for a request: its key, its counter's scope, its client IP (adapters), at `now`
   * on the store's clock (or a clock to read it from, when a rule that lapses is found). A deny, else an allow, else the most specific override, else undefined.
   */
  match(key: string, scope: string | undefined, ip: string | undefined, now: number | (() => number)): Rule | undefined {
    if (this.size === 0) return undefined;
    // A key matched on itself alone (no other IP, no rules of its scope) is looked up once: its rule, or
    // none, holds until the rules change (put and drop forget every key), for meanwhile rules only lapse.
    // A rule found that has lapsed since is looked up again (what stood behind it may be in force).
    const plain = (ip === undefined || ip === key) && (scope === undefined || !this.scopes.has(scope));
    if (plain) {
      const known = this.seen.get(key);
      if (known === null) return undefined;
      // The clock is read only for a rule that lapses: most decisions read none.
      if (known !== undefined && (known.expiresAt === undefined || known.expiresAt > (typeof now === 'number' ? now : now()))) return known;
    }
    const rule = this.find(key, scope, ip, typeof now === 'number' ? now : this.nextExpiry === Number.POSITIVE_INFINITY ? 0 : now());
    if (plain) {
      // Bounded: a flood of new keys empties it now and then, and costs each a lookup of its own.
      if (this.seen.size >= SEEN_KEYS) this.seen.clear();
      this.seen.set(key, rule ?? null);
    }
    return rule;
  }

  private find(key: string, scope: string | undefined, ip: string | undefined, now: number): Rule | undefined {
    found.deny = found.allow = found.override = undefined;
    found.depth = -1;
    found.now = now;
    // Addresses: a plain IPv4 one as a number (the usual client key or IP: nothing allocated), else parsed.
    let keyV4 = -1;
    let ipV4 = -1;
    let keyAddress: Address | undefined;
    let ipAddress: Address | undefined;
    if (this.addresses) {
      keyV4 = v4Number(key);
      if (keyV4 < 0) keyAddress = parseAddress(key);
      if (ip !== undefined && ip !== key) {
        ipV4 = v4Number(ip);
        if (ipV4 < 0) ipAddress = parseAddress(ip);
      }
    }
    if (scope !== undefined) {
      const scoped = this.scopes.get(scope);
      if (scoped !== undefined) look(scoped, key, keyV4, keyAddress, ipV4, ipAddress);
    }
    // The call's scope is more specific: an override found there stands.
    const scopedOverride = found.override;
    if (this.unscoped !== undefined) look(this.unscoped, key, keyV4, keyAddress, ipV4, ipAddress);
    return found.deny ?? found.allow ?? scopedOverride ?? found.override;
  }
}

/** What one match found so far; one object for every match (matching is synchronous). */
const found: { deny?: Rule; allow?: Rule; override?: Rule; depth: number; now: number } = { depth: -1, now: 0 };

function take(slot: Slot, depth: number): void {
  const { now } = found;
  if (found.deny === undefined && live(slot.deny, now)) found.deny = slot.deny;
  if (found.allow === undefined && live(slot.allow, now)) found.allow = slot.allow;
  // The longest range's override; an exact key's (depth Infinity) before any.
  if (depth > found.depth && live(slot.override, now)) {
    found.override = slot.override;
    found.depth = depth;
  }
}

function look(
  rules: ScopeRules,
  key: string,
  keyV4: number,
  keyAddress: Address | undefined,
  ipV4: number,
  ipAddress: Address | undefined,
): void {
  const exact = rules.exact.get(key);
  if (exact !== undefined) take(exact, Number.POSITIVE_INFINITY);
  const { v4 } = rules;
  if (keyV4 >= 0) v4?.walkV4(keyV4, take);
  else if (keyAddress !== undefined) (keyAddress.v6 ? rules.v6 : v4)?.walk(keyAddress.words, keyAddress.bits, take);
  if (ipV4 >= 0) v4?.walkV4(ipV4, take);
  else if (ipAddress !== undefined) (ipAddress.v6 ? rules.v6 : v4)?.walk(ipAddress.words, ipAddress.bits, take);
}
