// The leases part of a store (Store.leases): one limit across regions (regions/). A region's own store spends the
// tokens it holds and asks (region.lua); the home store holds each key's global bucket and grants (home.lua).
// Every call is one atomic step on its store; keys come from store/keys.ts (leaseKey, homeKey).

/** The global limit a lease is of: a token bucket. */
export interface LeaseBucket {
  /** Capacity. */
  burst: number;
  /** Refill, tokens per ms. */
  ratePerMs: number;
}

/** How a region's leases are timed (ms). */
export interface LeaseTimes {
  /** How often a region may ask per key; a grant lasts two. */
  leaseMs: number;
  /** How long a region waits for the home: an ask the home takes later grants nothing. */
  timeoutMs: number;
  /** The least a region's record of a key lives past its lease. */
  ttlMs: number;
}

/** A region's decision on its leased tokens. */
export interface LeaseSpend {
  allowed: boolean;
  /** Whole tokens the lease (or the static share) holds after this request. */
  remaining: number;
  /** 0 when allowed; else ms until it may pass (to the µs). */
  retryAfterMs: number;
  resetMs: number;
  /**
   * What paid: the lease; a live lease holding too little ('low'); no lease yet ('none': a key's first lease
   * may be waited for); the static share; a lease that lapsed ('lapsed', not waited for: its static share
   * comes once no grant the home may count is left).
   */
  status: 'lease' | 'low' | 'none' | 'share' | 'lapsed';
}

/** A region's ask for one key, as its store prepared it. */
export interface LeaseAsk {
  /** The lease's epoch: the home's grants count from 0 in each. */
  epoch: string;
  /** Tokens the region spent in this epoch (cumulative). */
  spent: number;
  /** Units asked for per lease lately. */
  demand: number;
  /** The region's server time of the ask (ms): a grant lasts two leases from it. */
  sentAt: number;
}

/** The home's answer to one key's ask. */
export interface HomeGrant {
  /** 'granted' (tokens may be 0: the lease renewed), 'repeat' (this ask's id was answered already), 'stale'. */
  status: 'granted' | 'repeat' | 'stale';
  /** Tokens granted in the epoch so far (cumulative): a region adds what it has not had. */
  total: number;
  /** Tokens this ask was granted. */
  granted: number;
  /** The regions the home counts for the key (the static share is the policy / this). */
  regions: number;
  /** Tokens left in the global bucket. */
  tokens: number;
  /** Tokens of the epoch the home counts spent (cumulative): all it granted once it let the lease lapse. */
  spent: number;
}

/** The home's view of one key: its bucket and each region's lease. */
export interface HomeView {
  tokens: number;
  regions: number;
  /** Fraction of the bucket held back for regions without a live lease. */
  heldBack: number;
  leases: { region: string; granted: number; spent: number; msLeft: number; demand: number }[];
}

export interface LeaseStore {
  /** Region: decides `cost` on the key's lease, or on the static share (`share`, when the lease lapsed). */
  spend(
    key: string,
    cost: number,
    bucket: LeaseBucket,
    o: LeaseTimes & { share: boolean; peek: boolean; epoch: string; regions: number },
  ): Promise<LeaseSpend>;
  /** Region: marks an ask of each key (undefined: one was made within the lease, by any process). */
  prepare(keys: readonly string[], o: LeaseTimes & { epoch: string }): Promise<(LeaseAsk | undefined)[]>;
  /**
   * Region: adds a grant to the key's lease, and counts spent at least what the home does; false when the lease
   * is of another epoch now.
   */
  deposit(
    key: string,
    grant: { epoch: string; total: number; spent: number; sentAt: number; regions: number },
    o: LeaseTimes,
  ): Promise<boolean>;
  /** Region: ends the leases not in use; what each spent in its epoch (undefined: kept, or nothing held). */
  giveBack(keys: readonly string[], o: LeaseTimes & { epoch: string }): Promise<({ epoch: string; spent: number } | undefined)[]>;
  /** Region: the key's lease as stored, field by field. */
  lease(key: string): Promise<Record<string, string>>;
  /** Home: grants each ask, at most once per `id`. */
  grant(
    region: string,
    asks: readonly (LeaseAsk & { key: string; bucket: LeaseBucket; id: string })[],
    o: LeaseTimes & { count: number; known: number },
  ): Promise<HomeGrant[]>;
  /** Home: takes back what a region's ended leases did not spend; the tokens back, per lease. */
  takeBack(
    region: string,
    leases: readonly { key: string; bucket: LeaseBucket; epoch: string; spent: number }[],
    o: LeaseTimes & { count: number; known: number },
  ): Promise<number[]>;
  /** Home: a key's global bucket and its regions' leases. */
  view(key: string, bucket: LeaseBucket, o: LeaseTimes & { count: number }): Promise<HomeView>;
}
