export type { OpenTelemetryMeter, OpenTelemetryMetricsOptions } from './opentelemetry.js';
export { openTelemetryMetrics } from './opentelemetry.js';
export type { PrometheusMetricsOptions, PrometheusRegistry, SluiceMetrics } from './prometheus.js';
export { prometheusMetrics } from './prometheus.js';
