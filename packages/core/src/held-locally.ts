// What limiters hold of a store's prefix in their own process (the deny cache's denials, the prefilter's
// and the fallback's counts), found by store and prefix, so that resetAll (testing/reset-all.ts) forgets it
// with the store's keys: a denial held here would otherwise outlive the counters it came from. Held
// weakly, so that a limiter dropped without close() is not kept for it. Construction and reset only:
// nothing here is on a decision's path.

interface Holder {
  forget(): Promise<void>;
}

interface Holders {
  refs: Set<WeakRef<Holder>>;
  /** Dead refs are swept when the set reaches this size: a sweep per doubling. */
  sweepAt: number;
}

const byStore = new WeakMap<object, Map<string, Holders>>();

/**
 * Records that a limiter holds state of `store`'s `prefix` that `forget` drops. Returns the limiter's
 * let-go (for its close()), which also keeps the record alive as long as the limiter is.
 */
export function holdsLocally(store: object, prefix: string, forget: () => Promise<void>): () => void {
  const prefixes = byStore.get(store) ?? new Map<string, Holders>();
  byStore.set(store, prefixes);
  const holders = prefixes.get(prefix) ?? { refs: new Set(), sweepAt: 16 };
  prefixes.set(prefix, holders);
  const holder: Holder = { forget };
  const ref = new WeakRef(holder);
  holders.refs.add(ref);
  if (holders.refs.size >= holders.sweepAt) {
    for (const r of holders.refs) if (r.deref() === undefined) holders.refs.delete(r);
    holders.sweepAt = Math.max(16, holders.refs.size * 2);
  }
  const { refs } = holders;
  return () => {
    refs.delete(ref);
    holder.forget = () => Promise.resolve();
  };
}

/** Drops what every live limiter on `store` holds of `prefix`. */
export async function forgetLocally(store: object, prefix: string): Promise<void> {
  const holders = byStore.get(store)?.get(prefix);
  if (holders === undefined) return;
  const forgets: Promise<void>[] = [];
  for (const ref of holders.refs) {
    const holder = ref.deref();
    if (holder === undefined) holders.refs.delete(ref);
    else forgets.push(holder.forget());
  }
  await Promise.all(forgets);
}
