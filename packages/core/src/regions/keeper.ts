// A region's leases, kept off the decision path: every half lease, one ask to the home for the keys this
// process decided lately (batched; the region's store lets one ask per key and lease through, whichever
// process makes it), the grants deposited in the region's store, and the leases of keys gone quiet given
// back. A key's first request may ask at once (first()). While the home is away, a probe instead of asks.
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { LimiterEvent } from '../events.js';
import type { LeaseBucket, LeaseSpend, LeaseStore, LeaseTimes } from '../store/leases.js';
import type { ResolvedRegions } from './options.js';

/** One key this process decides in its region. */
export interface Leased {
  /** The caller's key, for events. */
  readonly key: string;
  /** The key's store key (keys.ts storeKey): the entry's name here. */
  readonly id: string;
  readonly regionKey: string;
  readonly homeKey: string;
  readonly bucket: LeaseBucket;
  seenAt: number;
  /** The last spend's status in this process. */
  status: LeaseSpend['status'];
  /** Calls of first() waiting for this key's ask. */
  waiters: ((outcome: Asked) => void)[];
  asking: boolean;
}

/** How a first() ask ended: asked (a grant deposited, or none), skipped (another process asked lately), failed. */
export type Asked = 'asked' | 'skipped' | 'failed';

type Emit = (event: Omit<LimiterEvent, 'prefix'>) => void;

const epoch = (): string => randomBytes(6).toString('hex');

/** Settles with `p`, or rejects after `ms`. */
function within<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

export class LeaseKeeper {
  readonly keys = new Map<string, Leased>();
  /** The home did not answer the last ask or probe: spends may use the static share. */
  away = false;
  /** The most regions the home counted for any key: the static share of a key not heard of yet. */
  known: number;
  private readonly urgent = new Set<Leased>();
  private flushing = false;
  private readonly timer: ReturnType<typeof setInterval>;
  private ids = 0;
  private readonly process = epoch();
  private closed = false;

  constructor(
    readonly o: ResolvedRegions,
    private readonly region: LeaseStore,
    private readonly home: LeaseStore,
    private readonly storeTimeout: number,
    private readonly emit: Emit,
  ) {
    this.known = o.count ?? 0;
    this.timer = setInterval(() => void this.tick(), o.lease / 2);
    this.timer.unref?.();
  }

  times(bucket: LeaseBucket): LeaseTimes {
    const { lease, timeout } = this.o;
    // A record outlives its lease, the wait for its static share, and a refill of that share from empty.
    return { leaseMs: lease, timeoutMs: timeout, ttlMs: 2 * lease + timeout + bucket.burst / bucket.ratePerMs };
  }

  /** The key's entry, made on its first decision here. */
  note(key: string, id: string, regionKey: string, homeKey: string, bucket: LeaseBucket): Leased {
    let entry = this.keys.get(id);
    if (entry === undefined) {
      entry = { key, id, regionKey, homeKey, bucket, seenAt: 0, status: 'none', waiters: [], asking: false };
      this.keys.set(id, entry);
    }
    entry.seenAt = performance.now();
    return entry;
  }

  /** Asks for `entry` now, with the other keys asking in this turn. */
  first(entry: Leased): Promise<Asked> {
    return new Promise<Asked>((resolve) => {
      entry.waiters.push(resolve);
      this.urgent.add(entry);
      if (!this.flushing) {
        this.flushing = true;
        setImmediate(() => {
          this.flushing = false;
          const batch = [...this.urgent].filter((e) => !e.asking);
          this.urgent.clear();
          void this.ask(batch);
        });
      }
    });
  }

  /** Every half lease: asks for the keys in use, gives back the quiet ones; a probe while the home is away. */
  async tick(): Promise<void> {
    if (this.closed) return;
    if (this.away) {
      await this.probe();
      if (this.away) return;
    }
    const now = performance.now();
    const quiet: Leased[] = [];
    const busy: Leased[] = [];
    for (const entry of this.keys.values()) {
      if (now - entry.seenAt > 2 * this.o.lease) quiet.push(entry);
      else if (!entry.asking) busy.push(entry);
    }
    await Promise.all([this.ask(busy), this.giveBack(quiet)]);
  }

  private async probe(): Promise<void> {
    try {
      await within(this.home.grant(this.o.region, [], { ...this.times({ burst: 1, ratePerMs: 1 }), count: 0, known: 0 }), this.o.timeout);
      this.away = false;
    } catch {
      // Still away: the static share goes on.
    }
  }

  private homeAway(error: unknown): void {
    if (!this.away) {
      this.away = true;
      this.emit({ type: 'home-unreachable', region: this.o.region, error: error instanceof Error ? error : new Error(String(error)) });
    }
  }

  private async ask(entries: Leased[]): Promise<void> {
    if (entries.length === 0) return;
    for (const e of entries) e.asking = true;
    const settle = (e: Leased, outcome: Asked) => {
      e.asking = false;
      for (const w of e.waiters.splice(0)) w(outcome);
    };
    const times = this.times(entries[0]?.bucket as LeaseBucket);
    let prepared: Awaited<ReturnType<LeaseStore['prepare']>>;
    try {
      prepared = await within(
        this.region.prepare(
          entries.map((e) => e.regionKey),
          { ...times, epoch: epoch() },
        ),
        this.storeTimeout * 4,
      );
    } catch {
      for (const e of entries) settle(e, 'failed');
      return;
    }
    const asks = [];
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i] as Leased;
      const ask = prepared[i];
      if (ask === undefined) settle(e, 'skipped');
      else asks.push({ e, ask, id: `${this.process}:${++this.ids}` });
    }
    if (asks.length === 0) return;
    let grants: Awaited<ReturnType<LeaseStore['grant']>>;
    try {
      const sent = asks.map(({ e, ask, id }) => ({ ...ask, key: e.homeKey, bucket: e.bucket, id }));
      grants = await within(
        this.home.grant(this.o.region, sent, { ...times, count: this.o.count ?? 0, known: this.known }),
        this.o.timeout,
      );
    } catch (error) {
      this.homeAway(error);
      for (const { e } of asks) settle(e, 'failed');
      return;
    }
    this.away = false;
    await Promise.all(
      asks.map(async ({ e, ask }, i) => {
        const g = grants[i];
        try {
          if (g !== undefined && g.status !== 'stale') {
            if (g.regions > this.known && this.o.count === undefined) this.known = g.regions;
            const grant = {
              epoch: ask.epoch,
              total: g.total,
              spent: g.spent,
              sentAt: ask.sentAt,
              regions: Math.max(g.regions, this.known),
            };
            const deposited = await within(this.region.deposit(e.regionKey, grant, this.times(e.bucket)), this.storeTimeout * 4);
            if (deposited && g.granted > 0) this.emit({ type: 'lease-granted', key: e.key, region: this.o.region, tokens: g.granted });
          }
        } catch {
          // The region's store did not take it: the next ask brings the same total, and it is added then.
        }
        settle(e, 'asked');
      }),
    );
  }

  private async giveBack(entries: Leased[]): Promise<void> {
    if (entries.length === 0) return;
    for (const e of entries) this.keys.delete(e.id);
    const times = this.times(entries[0]?.bucket as LeaseBucket);
    try {
      const given = await within(
        this.region.giveBack(
          entries.map((e) => e.regionKey),
          { ...times, epoch: epoch() },
        ),
        this.storeTimeout * 4,
      );
      const back = [];
      for (let i = 0; i < entries.length; i++) {
        const g = given[i];
        const e = entries[i] as Leased;
        if (g !== undefined) back.push({ e, lease: { key: e.homeKey, bucket: e.bucket, epoch: g.epoch, spent: g.spent } });
      }
      if (back.length === 0) return;
      const opts = { ...times, count: this.o.count ?? 0, known: this.known };
      const tokens = await within(
        this.home.takeBack(
          this.o.region,
          back.map((b) => b.lease),
          opts,
        ),
        this.o.timeout,
      );
      back.forEach(({ e }, i) => {
        this.emit({ type: 'lease-returned', key: e.key, region: this.o.region, tokens: tokens[i] ?? 0 });
      });
    } catch {
      // What was not given back lapses at the home two leases after its last ask: the ceiling holds either way.
    }
  }

  /** Stops asking, and gives back every lease this process holds (bounded by the home's timeout). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    const all = [...this.keys.values()];
    for (const e of all) for (const w of e.waiters.splice(0)) w('failed');
    await this.giveBack(all);
  }
}
