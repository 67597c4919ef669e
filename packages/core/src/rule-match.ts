// The rules a process holds, as it matches them on every decision (rules.ts loads them; rule-check.ts
// asks). Built whole from a snapshot of the store's rules, and replaced whole when they change: nothing
// here is written while decisions read it.
//
// Matching, per scope (the rules of the call's scope, then the unscoped ones):
//   - exact keys: one Map per scope, O(1);
//   - addresses and CIDR ranges: a binary trie per family (32 bits for IPv4, 128 for IPv6; an
//     IPv4-mapped IPv6 address or range is IPv4), in typed arrays, O(address bits) and in practice the
//     depth at which a random address leaves the trie (about log2 of the ranges). A trie, not
//     node:net's BlockList: BlockList answers only whether an address is in the list, not which rule
//     holds it (an override's policy, a rule's expiry and reason), and it checks its ranges one by one
//     (bench/rules.mjs measures both on 100,000 rules: see bench/RESULTS.md, issue 27).
// A request is matched on its key (exactly, and as an address when it is one, or a range as ipKey
// writes an IPv6 client: '2001:db8:1:200::/56') and on its client IP when an adapter gives one.
// Precedence: a deny anywhere, then an allow anywhere, then the most specific override (the call's
// scope before none; an exact key before an address; a longer range before a shorter one).
// A rule whose expiresAt (the store's clock) has passed is not matched, though it is still held until
// the next load drops it.
import { type Address, parseAddress, v4Number } from './address.js';

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

/** One pattern's rules, a kind each at most (per scope). */
interface Slot {
  deny?: Rule;
  allow?: Rule;
  override?: Rule;
}

/** A binary trie of ranges over `width` bits, in typed arrays that grow by doubling. */
class Trie {
  private zero = new Int32Array(1024);
  private one = new Int32Array(1024);
  /** Per node, 1 + the index of its slot in `slots`, or 0. */
  private at = new Int32Array(1024);
  private nodes = 1;
  readonly slots: Slot[] = [];

  /** The slot of a range, made on first use. */
  slot(words: readonly number[], bits: number): Slot {
    let node = 0;
    for (let b = 0; b < bits; b++) {
      const bit = ((words[b >>> 5] as number) >>> (31 - (b & 31))) & 1;
      const next = bit === 1 ? this.one : this.zero;
      let child = next[node] as number;
      if (child === 0) {
        child = this.grow();
        (bit === 1 ? this.one : this.zero)[node] = child;
      }
      node = child;
    }
    let i = this.at[node] as number;
    if (i === 0) {
      this.slots.push({});
      i = this.slots.length;
      this.at[node] = i;
    }
    return this.slots[i - 1] as Slot;
  }

  private grow(): number {
    if (this.nodes === this.zero.length) {
      const size = this.nodes * 2;
      const copy = (a: Int32Array) => {
        const b = new Int32Array(size);
        b.set(a);
        return b;
      };
      this.zero = copy(this.zero);
      this.one = copy(this.one);
      this.at = copy(this.at);
    }
    return this.nodes++;
  }

  /** walk() for an IPv4 address as a number, all 32 bits: the decision path's, with no array made. */
  walkV4(n: number): void {
    const { zero, one, at, slots } = this;
    let node = 0;
    for (let b = 0; ; b++) {
      const i = at[node] as number;
      if (i !== 0) take(slots[i - 1] as Slot, b);
      if (b === 32) return;
      node = ((n >>> (31 - b)) & 1) === 1 ? (one[node] as number) : (zero[node] as number);
      if (node === 0) return;
    }
  }

  /** Gives `seen` each slot on the path of `words`, up to `bits` deep, shortest range first. */
  walk(words: readonly number[], bits: number, seen: (slot: Slot, depth: number) => void): void {
    const { zero, one, at, slots } = this;
    let node = 0;
    for (let b = 0; ; b++) {
      const i = at[node] as number;
      if (i !== 0) seen(slots[i - 1] as Slot, b);
      if (b === bits) return;
      const bit = ((words[b >>> 5] as number) >>> (31 - (b & 31))) & 1;
      node = (bit === 1 ? one[node] : zero[node]) as number;
      if (node === 0) return;
    }
  }
}

/** The rules of one scope. */
class ScopeRules {
  readonly exact = new Map<string, Slot>();
  v4: Trie | undefined;
  v6: Trie | undefined;
}

/** Most keys whose rule a RuleSet remembers (match()). */
const SEEN_KEYS = 65_536;

/** A rule is in force at `now` (store clock) when it has no expiry or has not reached it. */
const live = (rule: Rule | undefined, now: number): rule is Rule =>
  rule !== undefined && (rule.expiresAt === undefined || rule.expiresAt > now);

/** The rules a process holds, matched per request. Immutable once built. */
export class RuleSet {
  private readonly scopes = new Map<string, ScopeRules>();
  /** The rule (or null: none) of keys matched lately on themselves alone (match()). */
  private readonly seen = new Map<string, Rule | null>();
  private readonly unscoped: ScopeRules | undefined;
  private addresses = false;
  readonly size: number;
  /** The earliest expiresAt among the rules, for a refresh that wants to drop it (Infinity: none). */
  readonly nextExpiry: number;

  constructor(readonly rules: readonly Rule[]) {
    let next = Number.POSITIVE_INFINITY;
    for (const rule of rules) {
      let scope = this.scopes.get(rule.scope ?? '');
      if (scope === undefined) {
        scope = new ScopeRules();
        this.scopes.set(rule.scope ?? '', scope);
      }
      const a = parseAddress(rule.pattern);
      let slot: Slot;
      if (a === undefined) {
        slot = scope.exact.get(rule.pattern) ?? {};
        scope.exact.set(rule.pattern, slot);
      } else {
        this.addresses = true;
        if (a.v6) scope.v6 ??= new Trie();
        else scope.v4 ??= new Trie();
        const trie = (a.v6 ? scope.v6 : scope.v4) as Trie;
        slot = trie.slot(a.words, a.bits);
      }
      slot[rule.kind] = rule;
      if (rule.expiresAt !== undefined && rule.expiresAt < next) next = rule.expiresAt;
    }
    this.unscoped = this.scopes.get('');
    this.size = rules.length;
    this.nextExpiry = next;
  }

  /**
   * The rule in force for a request: its key, its counter's scope, its client IP (adapters), at `now`
   * on the store's clock (or a clock to read it from, when a rule that lapses is found). A deny, else an allow, else the most specific override, else undefined.
   */
  match(key: string, scope: string | undefined, ip: string | undefined, now: number | (() => number)): Rule | undefined {
    if (this.size === 0) return undefined;
    // A key matched on itself alone (no other IP, no rules of its scope) is looked up once per rule set: its
    // rule, or none, holds until the set is replaced, for within a set rules only lapse. A rule found that
    // has lapsed since is looked up again (what stood behind it may be in force).
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
  if (keyV4 >= 0) v4?.walkV4(keyV4);
  else if (keyAddress !== undefined) (keyAddress.v6 ? rules.v6 : v4)?.walk(keyAddress.words, keyAddress.bits, take);
  if (ipV4 >= 0) v4?.walkV4(ipV4);
  else if (ipAddress !== undefined) (ipAddress.v6 ? rules.v6 : v4)?.walk(ipAddress.words, ipAddress.bits, take);
}
