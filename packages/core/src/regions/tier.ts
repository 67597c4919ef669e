// One limit across regions: the stage that decides a consume or peek in this region (regions/options.ts says
// what it takes). A decision is one call to the region's own store (lua/region.lua: the tokens the region
// holds, or its static share while the home is away), through the same store call as any other (deadline,
// breaker, fail mode: decide-shard.ts). A key's first request may wait for its first lease (noLease 'wait').
// keeper.ts asks the home for more, off the request path, and gives back what quiet keys did not spend.
import { performance } from 'node:perf_hooks';
import type { Attempt } from '../attempt.js';
import { decideShard as decideOn, type ShardStages } from '../decide-shard.js';
import type { Decision } from '../decision.js';
import { SluiceError } from '../errors.js';
import type { LimiterEvent } from '../events.js';
import type { ResolvedLimiterOptions } from '../limiter-options.js';
import type { Policy } from '../policy/policy.js';
import type { Store, StoreReply, StoreRequest } from '../store/contract.js';
import { homeKey, leaseKey, storeKey } from '../store/keys.js';
import type { LeaseBucket, LeaseStore } from '../store/leases.js';
import { createStoreCall } from '../store-call.js';
import { type Leased, LeaseKeeper } from './keeper.js';
import type { ResolvedRegions } from './options.js';

export type { RegionsOptions } from './options.js';

/** What the stage is given by the limiter: its options, and the stages one shard's decision hands on to. */
export interface RegionStages {
  options: Pick<ResolvedLimiterOptions, 'prefix' | 'store' | 'timeout' | 'breaker' | 'clock' | 'testClock'>;
  stages: ShardStages;
  emit: (event: Omit<LimiterEvent, 'prefix'>) => void;
  onEvent: ((event: LimiterEvent) => void) | undefined;
}

export interface RegionTier {
  decide(attempt: Attempt): Promise<Decision>;
  /** What is not leased (wait, adjust): refused, ERR_SLUICE_OPTION, rather than decided on counters no region shares. */
  refuse(operation: 'wait' | 'adjust'): Promise<never>;
  close(): Promise<void>;
}

/** A policy's token bucket, as the leases count it. */
export const bucketOf = (p: Policy): LeaseBucket => ({ burst: p.burst, ratePerMs: p.limit / p.windowMs });

const pause = (ms: number) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    t.unref?.();
  });

/**
 * The region's store as the store call sees it: a decision spends from the key's lease (LeaseStore.spend),
 * and its status goes to the key's entry, which the stage reads.
 */
function spendingStore(store: Store, leases: LeaseStore, keeper: LeaseKeeper, share: boolean): Store {
  let spends = 0;
  const name = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
  return {
    local: false,
    decide(request: StoreRequest): Promise<StoreReply> {
      const entry = keeper.keys.get(request.keys[0] as string) as Leased;
      const { bucket } = entry;
      const o = {
        ...keeper.times(bucket),
        share: share || keeper.away,
        peek: request.peek,
        epoch: `${name}.${++spends}`,
        regions: keeper.known,
      };
      return leases.spend(entry.regionKey, request.peek ? 1 : request.cost, bucket, o).then((s) => {
        entry.status = s.status;
        return { allowed: s.allowed, states: [{ remaining: s.remaining, resetMs: s.resetMs, retryAfterMs: s.retryAfterMs }] };
      });
    },
    connecting: store.connecting && (() => (store.connecting as () => boolean)()),
    reset: (keys) => store.reset(keys),
    close: async () => {},
  };
}

/** The region's stage. */
export function createRegionTier(r: ResolvedRegions, { options: o, stages, emit, onEvent }: RegionStages): RegionTier {
  const leases = o.store.leases as LeaseStore;
  const keeper = new LeaseKeeper(r, leases, r.home.leases as LeaseStore, o.timeout, emit);
  // One shard's decision on the spending store, under a store call of its own: no deny cache (a grant lands
  // between two decisions), no adjust (a decision's tokens are the lease's).
  const spending = spendingStore(o.store, leases, keeper, r.noLease === 'share');
  const storeCall = createStoreCall(spending, o, { prefix: o.prefix, onEvent });
  const own: ShardStages = {
    prefix: stages.prefix,
    clock: stages.clock,
    denyCache: undefined,
    storeCall,
    reportError: (key, error, latencyMs) => stages.reportError(key, error, latencyMs),
    hold: (decision, attempt, keys) => stages.hold(decision, attempt, keys),
    finish: (key, decision) => stages.finish(key, decision),
    adjustOf: () => undefined,
    withoutStore: (attempt) => stages.withoutStore(attempt),
  };
  const decideShard = (attempt: Attempt, shard: number) => decideOn(own, attempt, shard);

  async function decide(attempt: Attempt): Promise<Decision> {
    const policy = attempt.set.policies[0] as Policy;
    const { prefix } = o;
    const key = storeKey(prefix, attempt.tag, policy.id);
    const entry = keeper.note(
      attempt.key,
      key,
      leaseKey(prefix, attempt.tag, policy.id),
      homeKey(prefix, attempt.tag, policy.id),
      bucketOf(policy),
    );
    const asked = attempt.final ? { ...attempt, final: false } : attempt;
    let d = await decideShard(asked, 0);
    // A key without a lease here: its first lease, waited for within the home's timeout (noLease 'wait'; with
    // 'share', once the static share stops for the ask on its way).
    if (!d.allowed && !attempt.peek && d.source === 'store' && entry.status === 'none' && !keeper.away) {
      const until = performance.now() + r.timeout;
      for (;;) {
        const left = until - performance.now();
        if (left <= 0) break;
        const outcome = await Promise.race([keeper.first(entry), pause(left).then(() => 'late' as const)]);
        d = await decideShard(asked, 0);
        if (d.allowed || entry.status !== 'none' || keeper.away || outcome !== 'skipped') break;
        // Another process of this region asked: its grant lands in the region's store shortly.
        await pause(Math.min(20, Math.max(1, until - performance.now())));
      }
    }
    d.region = r.region;
    return attempt.final ? stages.finish(attempt.key, d) : d;
  }

  const refuse = (operation: string) =>
    Promise.reject(new SluiceError('ERR_SLUICE_OPTION', `${operation} is not leased across regions: use consume with \`regions\``));
  return { decide, refuse, close: () => keeper.close() };
}
