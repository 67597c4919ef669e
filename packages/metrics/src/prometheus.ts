import { SluiceError } from '@sluice/core';
import type * as PromClient from 'prom-client';
import { DecisionCounts, DURATION_BUCKETS, describe, firstLine, HELP, NAMES, resolveMaxPolicies, subscribeSink } from './channels.js';
import { loadPeer } from './peer.cjs';

/** The part of a prom-client Registry that sluice uses: structural, so these types need no prom-client installed. */
export interface PrometheusRegistry {
  registerMetric(metric: never): void;
  getSingleMetric(name: string): unknown;
  removeSingleMetric(name: string): void;
}

/** Options of prometheusMetrics(). */
export interface PrometheusMetricsOptions {
  /** The prom-client Registry to register the metrics in. Default: prom-client's global `register`. */
  register?: PrometheusRegistry;
  /**
   * Distinct `policy` label values of sluice_decisions_total per prefix: the first this many policy names
   * keep theirs, the decisions of any other count under `policy="other"`. Default 100 (`DEFAULT_MAX_POLICIES`).
   */
  maxPolicies?: number;
}

/** What prometheusMetrics() and openTelemetryMetrics() return. */
export interface SluiceMetrics {
  /** Unsubscribes from the channels (idempotent); Prometheus metrics also leave their registry. */
  stop(): void;
}

function promClient(): typeof PromClient {
  try {
    return loadPeer('prom-client') as typeof PromClient;
  } catch (error) {
    const message = `prometheusMetrics() needs the prom-client package (npm install prom-client): ${firstLine(error)}`;
    throw Object.assign(new SluiceError('ERR_SLUICE_PEER', message), { cause: error });
  }
}

/**
 * Counts every limiter's decisions in this process into prom-client metrics, from the `sluice:decision` and
 * `sluice:event` diagnostics channels: sluice_decisions_total{prefix,policy,outcome,source},
 * sluice_store_duration_seconds{prefix} (histogram) and sluice_breaker_open{prefix} (0/1). Never a key label.
 * From shedders (createShedder, the adapters' shed): sluice_shed_total{shedder,priority}, sluice_concurrency_limit{shedder}
 * and sluice_in_flight{shedder}, where `shedder` is createShedder's name option ('default' unless given).
 * The series stay bounded when policies are built per request with names of their own: a prefix keeps its first
 * `maxPolicies` (default 100) policy names, and counts the decisions of any further one under `policy="other"`.
 * Throws if the registry already holds a metric of these names (stop() the earlier one first).
 * @example
 * const metrics = prometheusMetrics(); // into prom-client's global register
 * app.get('/metrics', async (_req, res) => res.type(register.contentType).send(await register.metrics()));
 */
export function prometheusMetrics(options: PrometheusMetricsOptions = {}): SluiceMetrics {
  const given = checkOptions(options);
  const maxPolicies = resolveMaxPolicies(options.maxPolicies);
  const prom = promClient();
  const register = (given ?? prom.register) as PromClient.Registry;
  for (const name of Object.values(NAMES)) {
    if (register.getSingleMetric(name) !== undefined) {
      throw new SluiceError('ERR_SLUICE_OPTION', `register already holds ${name}: stop() the earlier prometheusMetrics() first`);
    }
  }
  const counts = new DecisionCounts(maxPolicies);
  const metrics = createMetrics(prom, [register], counts);
  const { duration, breaker, shed, limit, inFlight, leases, leaseTokens } = metrics;
  const unsubscribe = subscribeSink(counts, {
    shed(shedder, priority) {
      shed.inc({ shedder, priority });
    },
    concurrency(shedder, value, held) {
      limit.set({ shedder }, value);
      inFlight.set({ shedder }, held);
    },
    duration(prefix, seconds) {
      duration.observe({ prefix }, seconds);
    },
    breaker(prefix, open) {
      breaker.set({ prefix }, open ? 1 : 0);
    },
    lease(prefix, region, event, tokens) {
      leases.inc({ prefix, region, event });
      if (event !== 'home-unreachable') leaseTokens.inc({ prefix, region, event }, tokens);
    },
  });

  return {
    stop() {
      unsubscribe();
      // Only its own: after a stop() and a new prometheusMetrics(), the names may be another's.
      for (const metric of [metrics.decisions, duration, breaker, shed, limit, inFlight, leases, leaseTokens]) {
        const name = (metric as unknown as { name: string }).name;
        if (register.getSingleMetric(name) === metric) register.removeSingleMetric(name);
      }
    },
  };
}

/** Throws unless `options` is an object whose register, if given, is a prom-client Registry; returns the register. */
function checkOptions(options: PrometheusMetricsOptions): PrometheusRegistry | undefined {
  if (options === null || typeof options !== 'object') {
    throw new SluiceError('ERR_SLUICE_OPTION', `options must be an object, got ${describe(options)}`);
  }
  const given = options.register;
  if (
    given !== undefined &&
    (given === null ||
      typeof given !== 'object' ||
      typeof given.registerMetric !== 'function' ||
      typeof given.getSingleMetric !== 'function')
  ) {
    throw new SluiceError('ERR_SLUICE_OPTION', `register must be a prom-client Registry, got ${describe(given)}`);
  }
  return given;
}

/** The metrics, registered in `registers`; sluice_decisions_total reads `counts` at each scrape. */
function createMetrics(prom: typeof PromClient, registers: PromClient.Registry[], counts: DecisionCounts) {
  const decisions = new prom.Counter({
    name: NAMES.decisions,
    help: HELP.decisions,
    labelNames: ['prefix', 'policy', 'outcome', 'source'] as const,
    registers,
    // At each scrape, what was counted since the last one: as prom-client's own process_cpu_seconds_total,
    // so that register.resetMetrics() still resets it.
    collect() {
      for (const series of counts.all) {
        if (series.count === series.exported) continue;
        this.inc({ ...series.labels }, series.count - series.exported);
        series.exported = series.count;
      }
    },
  });
  const duration = new prom.Histogram({
    name: NAMES.duration,
    help: HELP.duration,
    labelNames: ['prefix'] as const,
    buckets: DURATION_BUCKETS,
    registers,
  });
  const breaker = new prom.Gauge({ name: NAMES.breaker, help: HELP.breaker, labelNames: ['prefix'] as const, registers });
  const shed = new prom.Counter({ name: NAMES.shed, help: HELP.shed, labelNames: ['shedder', 'priority'] as const, registers });
  const limit = new prom.Gauge({ name: NAMES.limit, help: HELP.limit, labelNames: ['shedder'] as const, registers });
  const inFlight = new prom.Gauge({ name: NAMES.inFlight, help: HELP.inFlight, labelNames: ['shedder'] as const, registers });
  const labelNames = ['prefix', 'region', 'event'] as const;
  const leases = new prom.Counter({ name: NAMES.leases, help: HELP.leases, labelNames, registers });
  const leaseTokens = new prom.Counter({ name: NAMES.leaseTokens, help: HELP.leaseTokens, labelNames, registers });
  return { decisions, duration, breaker, shed, limit, inFlight, leases, leaseTokens };
}
