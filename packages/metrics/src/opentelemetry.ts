import type * as OtelApi from '@opentelemetry/api';
import { SluiceError } from '@sluice/core';
import {
  DecisionCounts,
  DURATION_BUCKETS,
  describe,
  firstLine,
  HELP,
  LeaseState,
  NAMES,
  resolveMaxPolicies,
  ShedderState,
  subscribeSink,
} from './channels.js';
import { loadPeer } from './peer.cjs';
import type { SluiceMetrics } from './prometheus.js';

/** The part of an OpenTelemetry Meter that sluice uses: structural, so these types need no @opentelemetry/api installed. */
export interface OpenTelemetryMeter {
  createHistogram(
    name: string,
    options?: { description?: string; unit?: string; advice?: { explicitBucketBoundaries?: number[] } },
  ): { record(value: number, attributes?: Record<string, string>): void };
  createObservableCounter(name: string, options?: { description?: string; unit?: string }): OpenTelemetryObservable;
  createObservableGauge(name: string, options?: { description?: string; unit?: string }): OpenTelemetryObservable;
}

/** What an observable instrument reports to, when the reader collects. */
export interface OpenTelemetryObservation {
  observe(value: number, attributes?: Record<string, string>): void;
}

/** An OpenTelemetry observable instrument, structurally. */
export interface OpenTelemetryObservable {
  addCallback(callback: (result: OpenTelemetryObservation) => void): void;
  removeCallback(callback: (result: OpenTelemetryObservation) => void): void;
}

/** Options of openTelemetryMetrics(). */
export interface OpenTelemetryMetricsOptions {
  /** The Meter to create the instruments on. Default: `metrics.getMeter('@sluice/metrics')` of @opentelemetry/api (the global MeterProvider). */
  meter?: OpenTelemetryMeter;
  /**
   * Distinct `policy` attribute values of sluice_decisions_total per prefix: the first this many policy names
   * keep theirs, the decisions of any other count under `policy: 'other'`. Default 100 (`DEFAULT_MAX_POLICIES`).
   */
  maxPolicies?: number;
}

type Observe = (result: OpenTelemetryObservation) => void;

const METER_METHODS = ['createObservableCounter', 'createHistogram', 'createObservableGauge'] as const;

function defaultMeter(): OpenTelemetryMeter {
  let api: typeof OtelApi;
  try {
    api = loadPeer('@opentelemetry/api') as typeof OtelApi;
  } catch (error) {
    const message = `openTelemetryMetrics() without a meter needs the @opentelemetry/api package (npm install @opentelemetry/api): ${firstLine(error)}`;
    throw Object.assign(new SluiceError('ERR_SLUICE_PEER', message), { cause: error });
  }
  return api.metrics.getMeter('@sluice/metrics') as unknown as OpenTelemetryMeter;
}

/**
 * Records every limiter's decisions in this process as OpenTelemetry instruments, from the `sluice:decision`
 * and `sluice:event` diagnostics channels: the (observable) counter sluice_decisions_total {prefix, policy, outcome, source},
 * the histogram sluice_store_duration_seconds {prefix} (unit s) and the gauge sluice_breaker_open {prefix} (0/1).
 * From shedders: the counter sluice_shed_total {shedder, priority} and the gauges sluice_concurrency_limit {shedder} and
 * sluice_in_flight {shedder} (`shedder`: createShedder's name option, 'default' unless given).
 * Never a key attribute. The series stay bounded when policies are built per request with names of their own: a
 * prefix keeps its first `maxPolicies` (default 100) policy names, and counts the decisions of any further one
 * under `policy: 'other'`. stop() unsubscribes and stops reporting the observable instruments; instruments cannot leave a Meter.
 * @example
 * const metrics = openTelemetryMetrics(); // on the global MeterProvider's meter '@sluice/metrics'
 */
export function openTelemetryMetrics(options: OpenTelemetryMetricsOptions = {}): SluiceMetrics {
  const given = checkOptions(options);
  const maxPolicies = resolveMaxPolicies(options.maxPolicies);
  const meter = given ?? defaultMeter();
  // Counted here, reported as cumulative totals when the reader collects: cheaper per decision than Counter.add.
  const counts = new DecisionCounts(maxPolicies);
  const decisions = meter.createObservableCounter(NAMES.decisions, { description: HELP.decisions });
  const removers = [
    observe(decisions, (result) => {
      for (const series of counts.all) result.observe(series.count, { ...series.labels });
    }),
  ];
  const duration = meter.createHistogram(NAMES.duration, {
    description: HELP.duration,
    unit: 's',
    advice: { explicitBucketBoundaries: DURATION_BUCKETS },
  });
  const gauge = meter.createObservableGauge(NAMES.breaker, { description: HELP.breaker });
  const open = new Map<string, number>();
  removers.push(
    observe(gauge, (result) => {
      for (const [prefix, value] of open) result.observe(value, { prefix });
    }),
  );
  const shedder = new ShedderState();
  removers.push(...observeShedder(meter, shedder));
  const leaseState = new LeaseState();
  const leases = meter.createObservableCounter(NAMES.leases, { description: HELP.leases });
  const leaseTokens = meter.createObservableCounter(NAMES.leaseTokens, { description: HELP.leaseTokens });
  removers.push(
    observe(leases, (result) => {
      for (const { labels, count } of leaseState.series.values()) result.observe(count, { ...labels });
    }),
    observe(leaseTokens, (result) => {
      for (const { labels, tokens } of leaseState.series.values())
        if (labels.event !== 'home-unreachable') result.observe(tokens, { ...labels });
    }),
  );

  const unsubscribe = subscribeSink(counts, {
    shed(name, priority) {
      shedder.add(name, priority);
    },
    concurrency(name, value, held) {
      shedder.set(name, value, held);
    },
    duration(prefix, seconds) {
      duration.record(seconds, { prefix });
    },
    breaker(prefix, isOpen) {
      open.set(prefix, isOpen ? 1 : 0);
    },
    lease(prefix, region, event, tokens) {
      leaseState.add(prefix, region, event, tokens);
    },
  });
  let live = true;
  return {
    stop() {
      unsubscribe();
      if (live) for (const remove of removers) remove();
      live = false;
    },
  };
}

/** Throws unless `options` is an object whose meter, if given, is an OpenTelemetry Meter; returns the meter. */
function checkOptions(options: OpenTelemetryMetricsOptions): OpenTelemetryMeter | undefined {
  if (options === null || typeof options !== 'object') {
    throw new SluiceError('ERR_SLUICE_OPTION', `options must be an object, got ${describe(options)}`);
  }
  const given = options.meter;
  if (given !== undefined && (given === null || typeof given !== 'object' || METER_METHODS.some((m) => typeof given[m] !== 'function'))) {
    throw new SluiceError('ERR_SLUICE_OPTION', `meter must be an OpenTelemetry Meter (metrics.getMeter(name)), got ${describe(given)}`);
  }
  return given;
}

/** Adds `report` to `instrument`; returns what removes it. */
function observe(instrument: OpenTelemetryObservable, report: Observe): () => void {
  instrument.addCallback(report);
  return () => instrument.removeCallback(report);
}

/** The shedders' instruments, reporting `shedder`; returns what removes their callbacks. */
function observeShedder(meter: OpenTelemetryMeter, shedder: ShedderState): Array<() => void> {
  const shed = meter.createObservableCounter(NAMES.shed, { description: HELP.shed });
  const removeShed = observe(shed, (result) => {
    for (const { labels, count } of shedder.shed.values()) result.observe(count, { ...labels });
  });
  const limit = meter.createObservableGauge(NAMES.limit, { description: HELP.limit });
  const inFlight = meter.createObservableGauge(NAMES.inFlight, { description: HELP.inFlight });
  const reportLimit: Observe = (result) => {
    for (const [name, g] of shedder.gauges) result.observe(g.limit, { shedder: name });
  };
  const reportInFlight: Observe = (result) => {
    for (const [name, g] of shedder.gauges) result.observe(g.inFlight, { shedder: name });
  };
  return [removeShed, observe(limit, reportLimit), observe(inFlight, reportInFlight)];
}
