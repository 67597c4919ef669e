// What metrics cost per decision: Node CPU µs per consume() on the memory store (the fastest decision, so the
// largest share) with no subscriber, with prometheusMetrics() and with openTelemetryMetrics() on an SDK
// MeterProvider. Rounds alternate between the modes; the median of each is printed. After `pnpm build`:
//   node packages/metrics/scripts/cost.mjs [decisions per round] [rounds]

import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { createLimiter } from '@sluice/core';
import { Registry } from 'prom-client';
import { openTelemetryMetrics, prometheusMetrics } from '../dist/esm/index.js';

const N = Number(process.argv[2] ?? 200_000);
const ROUNDS = Number(process.argv[3] ?? 7);

class Reader extends MetricReader {
  async onForceFlush() {}
  async onShutdown() {}
}
const provider = new MeterProvider({ readers: [new Reader()] });
const modes = {
  off: () => ({ stop() {} }),
  prometheus: () => prometheusMetrics({ register: new Registry() }),
  opentelemetry: () => openTelemetryMetrics({ meter: provider.getMeter('cost') }),
};

// Two policies and 64 keys, all allowed: the common case.
const limiter = createLimiter({ policy: ['1000000/1s', '2500000/1h'], prefix: 'cost' });
const keys = Array.from({ length: 64 }, (_, i) => `client-${i}`);

async function round(mode) {
  const metrics = modes[mode]();
  const before = process.cpuUsage();
  for (let i = 0; i < N; i++) await limiter.consume(keys[i & 63]);
  const used = process.cpuUsage(before);
  metrics.stop();
  return (used.user + used.system) / N;
}

const results = Object.fromEntries(Object.keys(modes).map((m) => [m, []]));
await round('off'); // warm-up
for (let r = 0; r < ROUNDS; r++) for (const mode of Object.keys(modes)) results[mode].push(await round(mode));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const off = median(results.off);
for (const [mode, xs] of Object.entries(results)) {
  const m = median(xs);
  console.log(
    `${mode.padEnd(13)} ${m.toFixed(2)} µs CPU/decision (median of ${ROUNDS} x ${N})${mode === 'off' ? '' : `, +${(m - off).toFixed(2)} µs`}`,
  );
}
await provider.shutdown();
