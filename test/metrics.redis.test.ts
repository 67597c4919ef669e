// @sluice/metrics through a Redis outage: the server is killed, the breaker opens (gauge 1), decisions come
// from the fallback; it restarts, the breaker closes (gauge 0) and decisions come from the store again.
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { createLimiter, type Decision, redisStore } from '@sluice/core';
import { openTelemetryMetrics, prometheusMetrics } from '@sluice/metrics';
import Redis from 'ioredis';
import { Registry } from 'prom-client';
import { type RedisServer, sleep, startServer, uniquePrefix } from './support/redis';

class OnDemandReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

describe('metrics through a Redis outage', () => {
  let server: RedisServer;
  let client: Redis;
  beforeAll(async () => {
    server = await startServer();
    client = new Redis({ port: server.port, maxRetriesPerRequest: 1, retryStrategy: () => 20 });
    client.on('error', () => {}); // the outage is the point
    await new Promise((r) => client.once('ready', r));
  });
  afterAll(async () => {
    client.disconnect();
    await server.stop();
  });

  it('times only the decisions the store answered, not the deny cache', async () => {
    const register = new Registry();
    const prom = prometheusMetrics({ register });
    const prefix = uniquePrefix();
    const limiter = createLimiter({ prefix, policy: '2/1m', store: redisStore({ client }), timeout: 1000 });
    try {
      const sources = [];
      for (let i = 0; i < 5; i++) sources.push((await limiter.consume('k')).source);
      const fromStore = sources.filter((s) => s === 'store').length;
      expect(sources.filter((s) => s === 'deny-cache').length).toBeGreaterThan(0);
      const values = (await register.getSingleMetric('sluice_store_duration_seconds')?.get())?.values ?? [];
      const count = values.find((v) => (v as { metricName?: string }).metricName === 'sluice_store_duration_seconds_count');
      expect(count?.value).toBe(fromStore);
      const decisions = (await register.getSingleMetric('sluice_decisions_total')?.get())?.values ?? [];
      expect(decisions.find((v) => v.labels.source === 'deny-cache' && v.labels.outcome === 'denied')?.value).toBe(
        sources.length - fromStore,
      );
    } finally {
      prom.stop();
      await limiter.close();
    }
  });

  it('shows the breaker open and the fallback source while Redis is dead, and the store again after', async () => {
    const register = new Registry();
    const prom = prometheusMetrics({ register });
    const reader = new OnDemandReader();
    const provider = new MeterProvider({ readers: [reader] });
    const otel = openTelemetryMetrics({ meter: provider.getMeter('test') });
    const prefix = uniquePrefix();
    const limiter = createLimiter({
      prefix,
      policy: '1000/1h',
      store: redisStore({ client }),
      // Wide: a busy machine must not turn a live store's answer into a fallback. A dead one fails at once.
      timeout: 1000,
      breaker: { failures: 2, cooldown: '300ms' },
    });
    const gauge = async () =>
      (await register.getSingleMetric('sluice_breaker_open')?.get())?.values.find((v) => v.labels.prefix === prefix)?.value;
    const otelGauge = async () => {
      const { resourceMetrics } = await reader.collect();
      const metric = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === 'sluice_breaker_open');
      return metric?.dataPoints.find((p) => p.attributes.prefix === prefix)?.value;
    };
    const count = async (source: string) =>
      (await register.getSingleMetric('sluice_decisions_total')?.get())?.values
        .filter((v) => v.labels.prefix === prefix && v.labels.source === source)
        .reduce((s, v) => s + v.value, 0) ?? 0;
    try {
      const seen: Decision[] = [await limiter.consume('k')];
      expect(seen[0]?.source).toBe('store');
      expect(await gauge()).toBe(0);

      await server.kill();
      for (let i = 0; i < 6; i++) seen.push(await limiter.consume('k'));
      expect(seen.slice(1).every((d) => d.source === 'fallback')).toBe(true);
      expect(await gauge()).toBe(1);
      expect(await otelGauge()).toBe(1);
      expect(await count('fallback')).toBe(6);
      // Only decisions the store answered are timed: the failed calls are not store durations.
      const durations = (await register.getSingleMetric('sluice_store_duration_seconds')?.get())?.values;
      expect(
        durations?.find(
          (v) => (v as { metricName?: string }).metricName === 'sluice_store_duration_seconds_count' && v.labels.prefix === prefix,
        )?.value,
      ).toBe(1);

      await server.restart();
      let decision = await limiter.consume('k');
      for (let tries = 0; decision.source !== 'store' && tries < 200; tries++) {
        await sleep(25);
        decision = await limiter.consume('k');
      }
      expect(decision.source).toBe('store');
      expect(await gauge()).toBe(0);
      expect(await otelGauge()).toBe(0);
      expect(await count('store')).toBeGreaterThanOrEqual(2);
    } finally {
      prom.stop();
      otel.stop();
      await limiter.close();
      await provider.shutdown();
    }
  });
});
