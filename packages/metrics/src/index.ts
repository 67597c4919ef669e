export { DEFAULT_MAX_POLICIES } from './channels.js';
export type {
  OpenTelemetryMeter,
  OpenTelemetryMetricsOptions,
  OpenTelemetryObservable,
  OpenTelemetryObservation,
} from './opentelemetry.js';
export { openTelemetryMetrics } from './opentelemetry.js';
export type { PrometheusMetricsOptions, PrometheusRegistry, SluiceMetrics } from './prometheus.js';
export { prometheusMetrics } from './prometheus.js';
