import type { Decision } from './decision.js';
import type { PolicySet } from './policy-set.js';
import { shardTag } from './store/keys.js';

/** The deny-cache tag of a key's shard under a set: a call's policies keep their denials apart ('{' is in no tag). */
export const deniedTag = (tag: string, set: PolicySet): string => (set.id === '' ? tag : `${tag}{${set.id}`);

interface Denial {
  /** performance.now() when the denied store call was sent: the store decided no earlier. */
  sentAt: number;
  /** Until when (same clock as sentAt) the store would still deny this cost. */
  until: number;
  cost: number;
  decision: Decision;
}

/**
 * Longest a denial is answered here: a reset made by another process (or the CLI) cannot reach this
 * one, so a key reset anywhere is denied locally for at most this long after. A flood still costs the
 * store one call per key per second and process.
 */
export const MAX_HOLD_MS = 1000;

/**
 * Remembers store denials so this process can answer them without asking the store again. An entry
 * answers only a cost at least the denied one, and only until the store's retry-after (ms to the µs,
 * from the StoreReply, not the Decision's whole ms) has run from the moment the call was sent, less
 * the 1 µs that rounding it up may have added: never longer than the store would keep denying, and
 * never longer than MAX_HOLD_MS. Bounded: past `maxKeys` the oldest entry goes.
 */
export class DenyCache {
  private readonly entries = new Map<string, Denial>();
  constructor(private readonly maxKeys: number) {}

  get(tag: string, cost: number, now: number): Decision | undefined {
    const denial = this.entries.get(tag);
    if (denial === undefined || cost < denial.cost) return undefined;
    const { sentAt, until, decision } = denial;
    if (now >= until) {
      this.entries.delete(tag);
      return undefined;
    }
    // Every wait shrinks by the time since the store decided, the binding one and each policy's alike,
    // so Retry-After and the RateLimit header's t keep agreeing.
    const elapsed = now - sentAt;
    const wait = (ms: number) => (ms > 0 ? Math.max(1, Math.ceil(ms - elapsed)) : 0);
    const reset = (ms: number) => Math.max(0, Math.ceil(ms - elapsed));
    return {
      ...decision,
      retryAfterMs: wait(decision.retryAfterMs),
      resetMs: reset(decision.resetMs),
      policies: decision.policies.map((p) => ({ ...p, retryAfterMs: wait(p.retryAfterMs), resetMs: reset(p.resetMs) })),
      source: 'deny-cache',
    };
  }

  /** `retryMs`: the store's retry-after to the µs (whole µs, rounded up, / 1000), e.g. replyRetryMs(reply). */
  set(tag: string, cost: number, decision: Decision, sentAt: number, retryMs: number): void {
    // Whole µs less the one rounding up may have added; exact in µs, so no float error lengthens it.
    const holdMs = Math.min(MAX_HOLD_MS, (Math.round(retryMs * 1000) - 1) / 1000);
    this.entries.delete(tag);
    if (!(holdMs > 0)) return;
    this.entries.set(tag, { sentAt, until: sentAt + holdMs, cost, decision });
    if (this.entries.size > this.maxKeys) this.entries.delete(this.entries.keys().next().value as string);
  }

  /** Forgets a key's denials under every set in `sets`, each of its shards. */
  forget(tag: string, sets: readonly PolicySet[]): void {
    if (this.entries.size === 0) return;
    for (const set of sets) {
      for (let s = 0; s < set.shards.count; s++) this.entries.delete(deniedTag(shardTag(tag, s, set.shards.count), set));
    }
  }

  clear(): void {
    this.entries.clear();
  }
}
