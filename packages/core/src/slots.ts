// Concurrent slots: the id a consume takes a slot under, and the release() of a decision that holds
// one, given back where it was taken (the store, or the local fallback while the store was down).
import { randomBytes } from 'node:crypto';
import type { Attempt } from './attempt.js';
import type { Decision } from './decision.js';
import { isConcurrent, type Policy } from './policy/policy.js';
import type { PolicySet } from './policy-set.js';
import type { Store, StoreRequest } from './store/contract.js';
import { fallbackTag, requestKeys } from './store/keys.js';
import { ask, type ReportError, type StoreCall } from './store-call.js';

/**
 * A slot's id: this process' random tag and a count, unique across processes, and short (a UUID is
 * 36 bytes that every take and release writes to Redis).
 */
const SLOT_TAG = randomBytes(9).toString('base64url');
let slotCount = 0;

const nothing = (): void => undefined;

export interface Slots {
  /** Whether a consume takes a slot (in the store, or in the fallback while the store is down). */
  readonly taken: boolean;
  /** A new slot id. */
  next(): string;
  /**
   * Gives an allowed decision that took a slot its release(): once, idempotent, never rejecting. `keys`:
   * the store request's, one per policy of the set, when the store decided (the release reuses them).
   */
  hold(decision: Decision, attempt: Attempt, keys?: readonly string[]): Decision;
}

/** Where a limiter's slots are given back. */
interface SlotsWhere {
  prefix: string;
  /** The local fallback store, when the fail mode is 'closed' in front of a remote store. */
  local: Store | undefined;
  storeCall: StoreCall;
  clock: () => number;
  reportError: ReportError;
}

/**
 * A limiter's slots: each policy set's that has concurrent policies (made when first used), and the
 * waits woken when one is released in this process (wait.ts).
 */
export class SlotSets {
  private readonly bySet = new WeakMap<PolicySet, Slots>();
  private readonly waiting = new Set<() => void>();
  constructor(private readonly where: SlotsWhere) {}

  of(set: PolicySet): Slots {
    let slots = this.bySet.get(set);
    if (slots === undefined) {
      slots = createSlots({ ...this.where, policies: set.policies, fallback: set.fallback });
      this.bySet.set(set, slots);
    }
    return slots;
  }

  /** Slots.hold, whose release() also wakes the waits for a slot. */
  hold(decision: Decision, attempt: Attempt, keys?: readonly string[]): Decision {
    const held = this.of(attempt.set).hold(decision, attempt, keys);
    const { release } = held;
    const { waiting } = this;
    if (release)
      held.release = () =>
        release().finally(() => {
          for (const wake of waiting) wake();
        });
    return held;
  }

  /** Calls `wake` whenever a slot is released in this process; returns its removal. */
  onRelease(wake: () => void): () => void {
    this.waiting.add(wake);
    return () => this.waiting.delete(wake);
  }
}

export function createSlots(o: SlotsWhere & { policies: readonly Policy[]; fallback: readonly Policy[] }): Slots {
  const { prefix, local, storeCall, clock, reportError } = o;
  const inStore = o.policies.filter(isConcurrent);
  const inFallback = local === undefined ? [] : o.fallback.filter(isConcurrent);
  const keysOf = (tag: string, ps: readonly Policy[]) => requestKeys(prefix, tag, ps);
  // Where the concurrent policies' keys sit among a store request's (the set's policies, in order).
  const at = o.policies.flatMap((p, i) => (isConcurrent(p) ? [i] : []));
  const slotKeys = (taken: readonly string[]) => (at.length === taken.length ? taken : at.map((i) => taken[i] as string));

  /** Gives a slot back where it was taken; the lease frees it anyway if this fails. */
  function giveBack(tag: string, slot: string, store: boolean, taken: readonly string[] | undefined): Promise<void> {
    if (!store) {
      const keys = keysOf(fallbackTag(tag), inFallback);
      return (local as Store).decide({ keys, policies: inFallback, cost: 1, peek: false, delta: -1, slot }).then(
        () => undefined,
        () => undefined,
      );
    }
    const keys = taken === undefined ? keysOf(tag, inStore) : slotKeys(taken);
    const request: StoreRequest = { keys, policies: inStore, cost: 1, peek: false, delta: -1, slot };
    return ask(storeCall, reportError, undefined, request, clock(), nothing, nothing);
  }

  return {
    taken: inStore.length > 0 || inFallback.length > 0,
    next: () => SLOT_TAG + (++slotCount).toString(36),
    hold(decision, attempt, keys) {
      const { slot } = attempt;
      if (slot === undefined || !decision.allowed) return decision;
      const store = decision.source === 'store';
      if (store ? inStore.length === 0 : decision.source !== 'fallback' || inFallback.length === 0) return decision;
      let released: Promise<void> | undefined;
      decision.release = () => {
        released ??= giveBack(attempt.tag, slot, store, store ? keys : undefined);
        return released;
      };
      return decision;
    },
  };
}
