import type * as OtelApi from '@opentelemetry/api';
import { SluiceError } from '@sluice/core';
import { DURATION_BUCKETS, describe, firstLine, HELP, NAMES, subscribeSink } from './channels.js';
import { loadPeer } from './peer.cjs';
import type { SluiceMetrics } from './prometheus.js';

/** The part of an OpenTelemetry Meter that sluice uses: structural, so these types need no @opentelemetry/api installed. */
export interface OpenTelemetryMeter {
  createCounter(
    name: string,
    options?: { description?: string; unit?: string },
  ): {
    add(value: number, attributes?: Record<string, string>): void;
  };
  createHistogram(
    name: string,
    options?: { description?: string; unit?: string; advice?: { explicitBucketBoundaries?: number[] } },
  ): { record(value: number, attributes?: Record<string, string>): void };
  createObservableGauge(
    name: string,
    options?: { description?: string; unit?: string },
  ): {
    addCallback(callback: (result: { observe(value: number, attributes?: Record<string, string>): void }) => void): void;
    removeCallback(callback: (result: { observe(value: number, attributes?: Record<string, string>): void }) => void): void;
  };
}

/** Options of openTelemetryMetrics(). */
export interface OpenTelemetryMetricsOptions {
  /** The Meter to create the instruments on. Default: `metrics.getMeter('@sluice/metrics')` of @opentelemetry/api (the global MeterProvider). */
  meter?: OpenTelemetryMeter;
}

const METER_METHODS = ['createCounter', 'createHistogram', 'createObservableGauge'] as const;

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
 * and `sluice:event` diagnostics channels: the counter sluice_decisions_total {prefix, policy, outcome, source},
 * the histogram sluice_store_duration_seconds {prefix} (unit s) and the gauge sluice_breaker_open {prefix} (0/1).
 * Never a key attribute. stop() unsubscribes and stops reporting the gauge; instruments cannot leave a Meter.
 * @example
 * const metrics = openTelemetryMetrics(); // on the global MeterProvider's meter '@sluice/metrics'
 */
export function openTelemetryMetrics(options: OpenTelemetryMetricsOptions = {}): SluiceMetrics {
  if (options === null || typeof options !== 'object') {
    throw new SluiceError('ERR_SLUICE_OPTION', `options must be an object, got ${describe(options)}`);
  }
  const given = options.meter;
  if (given !== undefined && (given === null || typeof given !== 'object' || METER_METHODS.some((m) => typeof given[m] !== 'function'))) {
    throw new SluiceError('ERR_SLUICE_OPTION', `meter must be an OpenTelemetry Meter (metrics.getMeter(name)), got ${describe(given)}`);
  }
  const meter = given ?? defaultMeter();
  const decisions = meter.createCounter(NAMES.decisions, { description: HELP.decisions });
  const duration = meter.createHistogram(NAMES.duration, {
    description: HELP.duration,
    unit: 's',
    advice: { explicitBucketBoundaries: DURATION_BUCKETS },
  });
  const gauge = meter.createObservableGauge(NAMES.breaker, { description: HELP.breaker });
  const open = new Map<string, number>();
  const report = (result: { observe(value: number, attributes?: Record<string, string>): void }) => {
    for (const [prefix, value] of open) result.observe(value, { prefix });
  };
  gauge.addCallback(report);

  const unsubscribe = subscribeSink({
    decision(prefix, policy, outcome, source, storeSeconds) {
      decisions.add(1, { prefix, policy, outcome, source });
      if (storeSeconds !== undefined) duration.record(storeSeconds, { prefix });
    },
    breaker(prefix, isOpen) {
      open.set(prefix, isOpen ? 1 : 0);
    },
  });
  let live = true;
  return {
    stop() {
      unsubscribe();
      if (live) gauge.removeCallback(report);
      live = false;
    },
  };
}
