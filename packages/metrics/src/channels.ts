// What both metric backends read off the core's diagnostics channels, in one place: a decision reduced to
// bounded labels (never the key) and breaker changes by prefix.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { type Decision, type LimiterEvent, type ShedderEvent, SluiceError } from '@sluice/core';

/** Whether a decision let the request through. A shadow-mode denial (let through, `shadowed`) is 'denied'. */
export type Outcome = 'allowed' | 'denied';

/** The labels of one sluice_decisions_total series: bounded by configuration, never a key. */
export interface DecisionLabels {
  prefix: string;
  policy: string;
  outcome: Outcome;
  source: string;
}

/** One sluice_decisions_total series: its labels, its count so far, and how much of it a backend has exported. */
export interface DecisionSeries {
  readonly labels: DecisionLabels;
  count: number;
  exported: number;
}

/**
 * How many distinct `policy` label values sluice_decisions_total keeps per prefix by default (the
 * `maxPolicies` option): the decisions of any further policy name are counted under the policy `other`.
 * Policy names come from configuration, except for plans built per request (`consume(key, { policy })` with
 * a name of each customer's own): without a cap those would make a series per name, without end.
 */
export const DEFAULT_MAX_POLICIES = 100;

/** The `policy` label of the decisions past a prefix's first maxPolicies policy names. */
export const OTHER_POLICY = 'other';

/** Checks the `maxPolicies` option: an integer >= 0 (0 counts every decision under `other`). */
export function resolveMaxPolicies(value: unknown): number {
  if (value === undefined) return DEFAULT_MAX_POLICIES;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    const shown = typeof value === 'number' ? String(value) : describe(value);
    throw new SluiceError('ERR_SLUICE_OPTION', `maxPolicies must be an integer >= 0 (default ${DEFAULT_MAX_POLICIES}), got ${shown}`);
  }
  return value;
}

/**
 * The decision counts, by series. A decision costs a few Map lookups and an increment here; the backends read
 * the totals when they are collected (a scrape, an export), which is rarer than decisions by far.
 * Each prefix keeps its first `maxPolicies` policy names; a decision under any other name counts under
 * `other` (one more Map lookup), so a prefix has at most maxPolicies + 1 policy values.
 */
export class DecisionCounts {
  /** Every series, in the order first seen. */
  readonly all: DecisionSeries[] = [];
  private readonly byPrefix = new Map<string, Map<string, DecisionSeries[]>>();
  /** Slot of each source within a policy's series (allowed first, then denied); grows if a core adds a source. */
  private readonly sources = new Map<string, number>();

  constructor(private readonly maxPolicies: number = DEFAULT_MAX_POLICIES) {}

  add(prefix: string, policy: string, outcome: Outcome, source: string): void {
    let byPolicy = this.byPrefix.get(prefix);
    if (byPolicy === undefined) {
      byPolicy = new Map();
      this.byPrefix.set(prefix, byPolicy);
    }
    let slots = byPolicy.get(policy);
    if (slots === undefined) {
      // Past the cap, `other` (an entry of byPolicy like any name: a policy named 'other' shares it).
      if (byPolicy.size >= this.maxPolicies) {
        policy = OTHER_POLICY;
        slots = byPolicy.get(OTHER_POLICY);
      }
      if (slots === undefined) {
        slots = [];
        byPolicy.set(policy, slots);
      }
    }
    let index = this.sources.get(source);
    if (index === undefined) {
      index = this.sources.size;
      this.sources.set(source, index);
    }
    const slot = index * 2 + (outcome === 'allowed' ? 0 : 1);
    let series = slots[slot];
    if (series === undefined) {
      series = { labels: { prefix, policy, outcome, source }, count: 0, exported: 0 };
      slots[slot] = series;
      this.all.push(series);
    }
    series.count++;
  }
}

/** What a backend records as it happens (the counts it reads from DecisionCounts). */
export interface MetricsSink {
  /** A decision the store answered (source 'store') took `seconds`. */
  duration(prefix: string, seconds: number): void;
  /** The breaker of the store under `prefix` opened (true) or closed (false). */
  breaker(prefix: string, open: boolean): void;
  /** The shedder named `shedder` refused a request of this priority (503). */
  shed(shedder: string, priority: string): void;
  /** The concurrency limit and slots in flight now of the shedder named `shedder`. */
  concurrency(shedder: string, limit: number, inFlight: number): void;
  /** A limit across regions: a lease granted or returned (`tokens`), or the home unreachable, in `region`. */
  lease?(prefix: string, region: string, event: LeaseEvent, tokens: number): void;
}

/** The lease events counted: `lease-granted` as 'granted', `lease-returned` as 'returned', `home-unreachable` as it is. */
export type LeaseEvent = 'granted' | 'returned' | 'home-unreachable';
const LEASE_EVENTS: Record<string, LeaseEvent> = {
  'lease-granted': 'granted',
  'lease-returned': 'returned',
  'home-unreachable': 'home-unreachable',
};

interface DecisionMessage {
  prefix: string;
  key: string;
  decision: Decision;
  durationMs: number;
}

/** Counts decisions into `counts` and feeds `sink` from sluice:decision and sluice:event until the returned function is called (idempotent). */
export function subscribeSink(counts: DecisionCounts, sink: MetricsSink): () => void {
  // A prefix's breaker gauge starts at 0 with its first decision, so that a dashboard shows 0, not "no data".
  const seen = new Set<string>();
  const onDecision = (message: unknown) => {
    const { prefix, decision, durationMs } = message as DecisionMessage;
    if (!seen.has(prefix)) {
      seen.add(prefix);
      sink.breaker(prefix, false);
    }
    counts.add(prefix, decision.policy, decision.allowed && decision.shadowed !== true ? 'allowed' : 'denied', decision.source);
    if (decision.source === 'store') sink.duration(prefix, durationMs / 1000);
  };
  const onEvent = (message: unknown) => {
    const shedder = message as ShedderEvent;
    if (shedder.type === 'shed' || shedder.type === 'concurrency') {
      // A shedder of a build before the `name` option publishes none: it is the default one.
      const name = shedder.name ?? 'default';
      if (shedder.type === 'shed') sink.shed(name, shedder.priority);
      sink.concurrency(name, shedder.limit, shedder.inFlight);
      return;
    }
    const event = message as LimiterEvent;
    const lease = LEASE_EVENTS[event.type];
    if (lease !== undefined) {
      sink.lease?.(event.prefix, event.region ?? '', lease, event.tokens ?? 0);
      return;
    }
    if (event.type !== 'breaker-open' && event.type !== 'breaker-close') return;
    // One event per change names every limiter on the shared breaker: each prefix's gauge moves.
    for (const prefix of event.prefixes ?? [event.prefix]) {
      seen.add(prefix);
      sink.breaker(prefix, event.type === 'breaker-open');
    }
  };
  subscribe('sluice:decision', onDecision);
  subscribe('sluice:event', onEvent);
  let live = true;
  return () => {
    if (!live) return;
    live = false;
    unsubscribe('sluice:decision', onDecision);
    unsubscribe('sluice:event', onEvent);
  };
}

/** Store round trips are sub-ms on a LAN and bounded by the limiter's timeout (default 50 ms). */
export const DURATION_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];

export const NAMES = {
  decisions: 'sluice_decisions_total',
  duration: 'sluice_store_duration_seconds',
  breaker: 'sluice_breaker_open',
  shed: 'sluice_shed_total',
  limit: 'sluice_concurrency_limit',
  inFlight: 'sluice_in_flight',
  leases: 'sluice_lease_events_total',
  leaseTokens: 'sluice_lease_tokens_total',
} as const;

export const HELP = {
  decisions:
    "Rate-limit decisions, by prefix, binding policy ('other' past a prefix's first maxPolicies names), outcome (allowed|denied) and source.",
  duration:
    'Seconds from consume() or peek() to the decision, for decisions the store answered (source="store"): the store round trip plus the limiter around it.',
  breaker: "1 while the circuit breaker in front of the prefix's store is open (the fail mode decides), else 0.",
  shed: 'Requests a shedder refused with 503 (service overloaded), by shedder (its name option) and priority (critical|normal|sheddable).',
  limit: "A shedder's adaptive concurrency limit, by shedder (its name option).",
  inFlight: 'Requests holding a slot of a shedder, by shedder (its name option).',
  leases:
    'A limit across regions: leases granted and returned, and asks the home did not answer, by prefix, region and event (granted|returned|home-unreachable).',
  leaseTokens:
    'A limit across regions: tokens the home granted to a region, and tokens its quiet leases gave back, by prefix, region and event (granted|returned).',
} as const;

/** The lease events as both backends keep them: per prefix, region and event, how many and their tokens. */
export class LeaseState {
  readonly series = new Map<string, { labels: { prefix: string; region: string; event: LeaseEvent }; count: number; tokens: number }>();
  add(prefix: string, region: string, event: LeaseEvent, tokens: number): void {
    const key = `${prefix}\0${region}\0${event}`;
    const found = this.series.get(key) ?? { labels: { prefix, region, event }, count: 0, tokens: 0 };
    found.count++;
    found.tokens += tokens;
    this.series.set(key, found);
  }
}

/** The shedders' figures as both backends keep them: sheds by shedder and priority, and each one's last limit and in-flight count. */
export class ShedderState {
  /** `${shedder}\0${priority}` -> the labels and the count. */
  readonly shed = new Map<string, { labels: { shedder: string; priority: string }; count: number }>();
  /** Shedder name -> its last limit and slots in flight. */
  readonly gauges = new Map<string, { limit: number; inFlight: number }>();
  add(shedder: string, priority: string): void {
    const key = `${shedder}\0${priority}`;
    const found = this.shed.get(key);
    if (found === undefined) this.shed.set(key, { labels: { shedder, priority }, count: 1 });
    else found.count++;
  }
  set(shedder: string, limit: number, inFlight: number): void {
    this.gauges.set(shedder, { limit, inFlight });
  }
}

/** How a bad option value is named in a message: its type or constructor, never its contents. */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value !== 'object') return typeof value;
  const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof name === 'string' && name !== '' ? `an object (${name})` : 'an object';
}

/** The first line of an error's message: a module-not-found error goes on with its require stack. */
export function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0] as string;
}
