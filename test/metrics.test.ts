// @sluice/metrics against a real prom-client Registry and a real OpenTelemetry SDK MeterProvider, fed by real
// limiters on the memory store through the core's diagnostics channels.
import { channel } from 'node:diagnostics_channel';
import { metrics } from '@opentelemetry/api';
import { type DataPoint, type Histogram, MeterProvider, MetricReader, type ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { createLimiter, type Decision, SluiceError, type Store } from '@sluice/core';
import {
  DEFAULT_MAX_POLICIES,
  type OpenTelemetryMeter,
  openTelemetryMetrics,
  type PrometheusRegistry,
  prometheusMetrics,
} from '@sluice/metrics';
import { register as globalRegister, Registry } from 'prom-client';
import { uniquePrefix } from './support/redis';

type Labels = Record<string, string | number>;

/** The values of one metric whose labels include `match`, from the registry's JSON. */
async function promValues(register: Registry, name: string, match: Labels) {
  const metric = (await register.getMetricsAsJSON()).find((m) => m.name === name);
  if (metric === undefined) return [];
  return (metric.values as Array<{ value: number; labels: Labels; metricName?: string }>).filter((v) =>
    Object.entries(match).every(([k, want]) => v.labels[k] === want),
  );
}
const promCount = async (register: Registry, match: Labels) =>
  (await promValues(register, 'sluice_decisions_total', match)).reduce((sum, v) => sum + v.value, 0);

/** A reader that collects on demand, in memory. */
class OnDemandReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

type Point = DataPoint<number | Histogram>;

function otelPoints(metrics: ResourceMetrics, name: string, prefix: string): Point[] {
  const all = metrics.scopeMetrics.flatMap((s) => s.metrics).filter((m) => m.descriptor.name === name);
  return all.flatMap((m) => m.dataPoints as Point[]).filter((p) => p.attributes.prefix === prefix);
}

const tally = (decisions: Decision[]) => ({
  allowed: decisions.filter((d) => d.allowed).length,
  denied: decisions.filter((d) => !d.allowed).length,
});

describe('prometheusMetrics', () => {
  let register: Registry;
  let stop: () => void;
  beforeEach(() => {
    register = new Registry();
    stop = prometheusMetrics({ register }).stop;
  });
  afterEach(() => stop());

  it('counts each decision by prefix, binding policy, outcome and source, and never labels the key', async () => {
    const prefix = uniquePrefix();
    const limiter = createLimiter({ prefix, policy: [{ limit: 3, window: '1m', name: 'burst' }, '50/1h'] });
    const key = 'customer-7f3a9c';
    const decisions: Decision[] = [];
    for (let i = 0; i < 5; i++) decisions.push(await limiter.consume(key));
    const { allowed, denied } = tally(decisions);
    expect(allowed).toBeGreaterThan(0);
    expect(denied).toBeGreaterThan(0);

    expect(await promCount(register, { prefix, outcome: 'allowed', source: 'store' })).toBe(allowed);
    expect(await promCount(register, { prefix, outcome: 'denied', source: 'store' })).toBe(denied);
    // The denials are the 3-per-minute policy's: it binds.
    expect(await promCount(register, { prefix, outcome: 'denied', policy: 'burst' })).toBe(denied);
    const text = await register.metrics();
    expect(text).not.toContain(key);
    for (const m of await register.getMetricsAsJSON()) {
      for (const v of m.values) expect(Object.keys(v.labels).sort()).not.toContain('key');
    }
    await limiter.close();
  });

  it('observes the duration of store decisions in seconds and starts the breaker gauge at 0', async () => {
    const prefix = uniquePrefix();
    const limiter = createLimiter({ prefix, policy: '100/1m' });
    const n = 7;
    for (let i = 0; i < n; i++) await limiter.consume(`k${i}`);
    const count = await promValues(register, 'sluice_store_duration_seconds', { prefix });
    expect(count.find((v) => v.metricName === 'sluice_store_duration_seconds_count')?.value).toBe(n);
    const sum = count.find((v) => v.metricName === 'sluice_store_duration_seconds_sum')?.value ?? -1;
    // A memory-store decision takes microseconds; a whole second for seven would be a unit slip (ms for s).
    expect(sum).toBeGreaterThan(0);
    expect(sum).toBeLessThan(1);
    expect(await promValues(register, 'sluice_breaker_open', { prefix })).toEqual([expect.objectContaining({ value: 0 })]);
    await limiter.close();
  });

  it('counts a peek, and a shadow-mode denial as denied', async () => {
    const prefix = uniquePrefix();
    const limiter = createLimiter({ prefix, policy: '2/1m', shadow: true });
    const decisions = [];
    for (let i = 0; i < 4; i++) decisions.push(await limiter.consume('k'));
    expect(decisions.every((d) => d.allowed)).toBe(true);
    const shadowed = decisions.filter((d) => d.shadowed).length;
    expect(shadowed).toBeGreaterThan(0);
    expect(await promCount(register, { prefix, outcome: 'denied' })).toBe(shadowed);
    await limiter.peek('k');
    expect(await promCount(register, { prefix })).toBe(decisions.length + 1);
    await limiter.close();
  });

  it("counts a refusal while the store cannot answer (fallback: false) as denied, source 'fail-closed'", async () => {
    const prefix = uniquePrefix();
    const down: Store = { local: false, decide: () => Promise.reject(new Error('down')), reset: async () => {}, close: async () => {} };
    const limiter = createLimiter({ prefix, policy: '5/15m', store: down, fallback: false, breaker: false });
    for (let i = 0; i < 3; i++) expect(await limiter.consume(`k${i}`)).toMatchObject({ allowed: false, source: 'fail-closed' });
    expect(await promCount(register, { prefix, outcome: 'denied', source: 'fail-closed' })).toBe(3);
    await limiter.close();
  });

  it('counts each decision once however often it is scraped, and register.resetMetrics() resets it', async () => {
    const prefix = uniquePrefix();
    const limiter = createLimiter({ prefix, policy: '100/1m' });
    await limiter.consume('k');
    await limiter.consume('k');
    expect(await promCount(register, { prefix })).toBe(2);
    expect(await promCount(register, { prefix })).toBe(2);
    register.resetMetrics();
    expect(await promCount(register, { prefix })).toBe(0);
    await limiter.consume('k');
    expect(await promCount(register, { prefix })).toBe(1);
    await limiter.close();
  });

  it('stop() unsubscribes and leaves the registry, so the same registry can take a new one', async () => {
    const prefix = uniquePrefix();
    const limiter = createLimiter({ prefix, policy: '100/1m' });
    await limiter.consume('k');
    expect(await promCount(register, { prefix })).toBe(1);
    stop();
    stop(); // idempotent
    expect(channel('sluice:decision').hasSubscribers).toBe(false);
    expect(channel('sluice:event').hasSubscribers).toBe(false);
    expect(register.getSingleMetric('sluice_decisions_total')).toBeUndefined();
    const again = prometheusMetrics({ register });
    await limiter.consume('k');
    await limiter.consume('k');
    expect(await promCount(register, { prefix })).toBe(2);
    stop(); // the first one's stop must not remove the second one's metrics
    expect(register.getSingleMetric('sluice_decisions_total')).toBeDefined();
    again.stop();
    await limiter.consume('k');
    expect(register.getSingleMetric('sluice_decisions_total')).toBeUndefined();
    await limiter.close();
  });

  it('refuses a second live instance on one registry and a register that is not a Registry, without printing it', () => {
    expect(() => prometheusMetrics({ register })).toThrow(/register already holds sluice_decisions_total/);
    const secret = { password: 'hunter2', registerMetric: 1 };
    let error: unknown;
    try {
      prometheusMetrics({ register: secret as never });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(SluiceError);
    expect((error as SluiceError).code).toBe('ERR_SLUICE_OPTION');
    expect((error as Error).message).toMatch(/^register must be a prom-client Registry, got an object \(Object\)$/);
    expect((error as Error).message).not.toContain('hunter2');
  });
});

describe('openTelemetryMetrics', () => {
  let reader: OnDemandReader;
  let provider: MeterProvider;
  let stop: () => void;
  beforeEach(() => {
    reader = new OnDemandReader();
    provider = new MeterProvider({ readers: [reader] });
    stop = openTelemetryMetrics({ meter: provider.getMeter('test') }).stop;
  });
  afterEach(async () => {
    stop();
    await provider.shutdown();
  });

  it('records decisions, store durations in seconds and the breaker gauge, with no key attribute', async () => {
    const prefix = uniquePrefix();
    const limiter = createLimiter({ prefix, policy: { limit: 2, window: '1m', name: 'two' } });
    const decisions: Decision[] = [];
    for (let i = 0; i < 5; i++) decisions.push(await limiter.consume('secret-key-42'));
    const { allowed, denied } = tally(decisions);
    const { resourceMetrics, errors } = await reader.collect();
    expect(errors).toEqual([]);

    const counts = otelPoints(resourceMetrics, 'sluice_decisions_total', prefix);
    const sumOf = (outcome: string) =>
      counts.filter((p) => p.attributes.outcome === outcome && p.attributes.source === 'store').reduce((s, p) => s + Number(p.value), 0);
    expect(sumOf('allowed')).toBe(allowed);
    expect(sumOf('denied')).toBe(denied);
    expect(counts.every((p) => p.attributes.policy === 'two' && !('key' in p.attributes))).toBe(true);

    const [histogram] = otelPoints(resourceMetrics, 'sluice_store_duration_seconds', prefix);
    const h = histogram?.value as Histogram;
    expect(h.count).toBe(decisions.length);
    expect(h.sum).toBeGreaterThan(0);
    expect(h.sum).toBeLessThan(1);
    // The advised buckets, in seconds: the SDK's default ones are for ms.
    expect(h.buckets.boundaries[0]).toBeLessThan(0.001);

    const gauge = otelPoints(resourceMetrics, 'sluice_breaker_open', prefix);
    expect(gauge.map((p) => p.value)).toEqual([0]);
    expect(JSON.stringify(resourceMetrics)).not.toContain('secret-key-42');
    await limiter.close();
  });

  it('reports cumulative totals at each collection; stop() unsubscribes and stops counting', async () => {
    const prefix = uniquePrefix();
    const limiter = createLimiter({ prefix, policy: '100/1m' });
    const total = async () =>
      otelPoints((await reader.collect()).resourceMetrics, 'sluice_decisions_total', prefix).reduce((s, p) => s + Number(p.value), 0);
    await limiter.consume('k');
    expect(await total()).toBe(1);
    await limiter.consume('k');
    expect(await total()).toBe(2);
    stop();
    expect(channel('sluice:decision').hasSubscribers).toBe(false);
    expect(channel('sluice:event').hasSubscribers).toBe(false);
    await limiter.consume('k');
    // The SDK keeps an async instrument's last cumulative value; the decision after stop() is not in it.
    expect(await total()).toBe(2);
    await limiter.close();
  });

  it('refuses a meter that is not a Meter', () => {
    expect(() => openTelemetryMetrics({ meter: new Map() as never })).toThrow(
      /^meter must be an OpenTelemetry Meter \(metrics\.getMeter\(name\)\), got an object \(Map\)$/,
    );
  });
});

describe('metrics stay bounded', () => {
  const N = 50_000;

  /** N decisions of one prefix, each under a plan of its own name (built per request), all allowed. */
  async function decideUnderDistinctPolicies(prefix: string): Promise<void> {
    const limiter = createLimiter({ prefix, policy: '10/1m' });
    // One counter for all of them (a policy's counter does not depend on its name): every one is allowed.
    for (let i = 0; i < N; i++) await limiter.consume('k', { policy: { limit: 10 * N, window: '1m', name: `p${i}` } });
    await limiter.close();
  }

  it('prometheusMetrics keeps the first 100 policy names of a prefix and counts the rest as policy="other"', async () => {
    const register = new Registry();
    const metrics = prometheusMetrics({ register });
    try {
      const prefix = uniquePrefix();
      await decideUnderDistinctPolicies(prefix);
      const text = await register.metrics();
      const series = text.split('\n').filter((line) => line.startsWith('sluice_decisions_total{') && line.includes(`prefix="${prefix}"`));
      expect(series.length).toBeLessThanOrEqual(101);
      expect(text.length).toBeLessThan(100_000);
      const values = await promValues(register, 'sluice_decisions_total', { prefix });
      expect(values.reduce((sum, v) => sum + v.value, 0)).toBe(N);
      expect(values.find((v) => v.labels.policy === 'other')?.value).toBe(N - 100);
      expect(values.filter((v) => v.labels.policy === 'p0' || v.labels.policy === 'p99').map((v) => v.value)).toEqual([1, 1]);
      expect(values.some((v) => v.labels.policy === 'p100')).toBe(false);
    } finally {
      metrics.stop();
    }
  });

  it('openTelemetryMetrics keeps the first 100 policy names of a prefix and counts the rest as policy "other"', async () => {
    const reader = new OnDemandReader();
    const provider = new MeterProvider({ readers: [reader] });
    const metrics = openTelemetryMetrics({ meter: provider.getMeter('bounded') });
    try {
      const prefix = uniquePrefix();
      await decideUnderDistinctPolicies(prefix);
      const points = otelPoints((await reader.collect()).resourceMetrics, 'sluice_decisions_total', prefix);
      expect(points.length).toBeLessThanOrEqual(101);
      expect(points.reduce((sum, p) => sum + Number(p.value), 0)).toBe(N);
      expect(points.find((p) => p.attributes.policy === 'other')?.value).toBe(N - 100);
    } finally {
      metrics.stop();
      await provider.shutdown();
    }
  });

  it('takes maxPolicies, per prefix, and refuses a bad one', async () => {
    expect(DEFAULT_MAX_POLICIES).toBe(100);
    const register = new Registry();
    const metrics = prometheusMetrics({ register, maxPolicies: 2 });
    try {
      const [a, b] = [uniquePrefix(), uniquePrefix()];
      for (const prefix of [a, b]) {
        const limiter = createLimiter({ prefix, policy: '100/1m' });
        for (const name of ['x', 'y', 'z', 'w', 'x']) await limiter.consume('k', { policy: { limit: 100, window: '1m', name } });
        await limiter.close();
        const values = await promValues(register, 'sluice_decisions_total', { prefix });
        expect(Object.fromEntries(values.map((v) => [v.labels.policy, v.value]))).toEqual({ x: 2, y: 1, other: 2 });
      }
    } finally {
      metrics.stop();
    }
    for (const bad of [-1, 1.5, Number.NaN, '100', null]) {
      expect(() => prometheusMetrics({ register: new Registry(), maxPolicies: bad as never })).toThrow(
        /^maxPolicies must be an integer >= 0/,
      );
      expect(() => openTelemetryMetrics({ meter: new MeterProvider().getMeter('m'), maxPolicies: bad as never })).toThrow(
        /^maxPolicies must be an integer >= 0/,
      );
    }
  });
});

describe('types', () => {
  it("take @opentelemetry/api's Meter and prom-client's global register as they are", () => {
    // Compile-time: the structural option types accept the real ones (pnpm typecheck fails otherwise).
    const meter: OpenTelemetryMeter = metrics.getMeter('types');
    const registry: PrometheusRegistry = globalRegister;
    expect(typeof meter.createHistogram).toBe('function');
    expect(typeof registry.registerMetric).toBe('function');
  });
});
