// The built @sluice/metrics (pnpm build first) from real CommonJS and ES module consumers: with its peers it
// counts a real limiter's decisions; without them its root still loads, and only the function that needs a
// missing peer says so.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = join(__dirname, '..');
const metricsDir = join(root, 'packages', 'metrics');

// Without pnpm's NODE_PATH (set by pnpm exec), through which any hoisted package would resolve.
const { NODE_PATH: _, ...env } = process.env;

function node(cwd: string, type: 'commonjs' | 'module', source: string): string {
  return execFileSync(process.execPath, ['--input-type', type, '-e', source], { cwd, env, encoding: 'utf8', timeout: 20_000 });
}

const cjs = `
const { createLimiter } = require('@sluice/core');
const { prometheusMetrics } = require('@sluice/metrics');
const { Registry } = require('prom-client');
(async () => {
  const register = new Registry();
  const m = prometheusMetrics({ register });
  const limiter = createLimiter({ prefix: 'consumer', policy: '2/1m' });
  for (let i = 0; i < 3; i++) await limiter.consume('k');
  process.stdout.write(await register.metrics());
  m.stop();
})();`;
const esm = `
import { createLimiter } from '@sluice/core';
import { openTelemetryMetrics, prometheusMetrics } from '@sluice/metrics';
import { Registry } from 'prom-client';
const register = new Registry();
const m = prometheusMetrics({ register });
openTelemetryMetrics().stop(); // the global (no-op) MeterProvider's meter, through @opentelemetry/api
const limiter = createLimiter({ prefix: 'consumer', policy: '2/1m' });
for (let i = 0; i < 3; i++) await limiter.consume('k');
process.stdout.write(await register.metrics());
m.stop();`;

describe('built @sluice/metrics', () => {
  it.each([
    ['CommonJS', 'commonjs', cjs],
    ['an ES module', 'module', esm],
  ] as const)('counts decisions from %s', (_, type, source) => {
    const text = node(metricsDir, type, source);
    expect(text).toContain('sluice_decisions_total{prefix="consumer",policy="2-per-60s",outcome="allowed",source="store"} 2');
    expect(text).toContain('sluice_decisions_total{prefix="consumer",policy="2-per-60s",outcome="denied",source="store"} 1');
    expect(text).toContain('sluice_breaker_open{prefix="consumer"} 0');
  });

  describe('installed without prom-client or @opentelemetry/api', () => {
    let dir: string;
    beforeAll(() => {
      dir = mkdtempSync(join(tmpdir(), 'sluice-metrics-'));
      const pkg = join(dir, 'node_modules', '@sluice', 'metrics');
      mkdirSync(pkg, { recursive: true });
      cpSync(join(metricsDir, 'package.json'), join(pkg, 'package.json'));
      cpSync(join(metricsDir, 'dist'), join(pkg, 'dist'), { recursive: true });
      symlinkSync(join(root, 'packages', 'core'), join(dir, 'node_modules', '@sluice', 'core'), 'dir');
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    const probe = (load: string) => `${load}
const out = {};
for (const [name, call] of [['prometheusMetrics', () => m.prometheusMetrics()], ['openTelemetryMetrics', () => m.openTelemetryMetrics()]]) {
  try { call(); out[name] = 'ran'; } catch (e) { out[name] = [e.code, e.message, e.cause?.code]; }
}
process.stdout.write(JSON.stringify(out));`;
    const expected = {
      prometheusMetrics: [
        'ERR_SLUICE_PEER',
        "prometheusMetrics() needs the prom-client package (npm install prom-client): Cannot find module 'prom-client'",
        'MODULE_NOT_FOUND',
      ],
      openTelemetryMetrics: [
        'ERR_SLUICE_PEER',
        "openTelemetryMetrics() without a meter needs the @opentelemetry/api package (npm install @opentelemetry/api): Cannot find module '@opentelemetry/api'",
        'MODULE_NOT_FOUND',
      ],
    };
    it('loads from CommonJS, and the functions name the missing peer', () => {
      expect(JSON.parse(node(dir, 'commonjs', probe("const m = require('@sluice/metrics');")))).toEqual(expected);
    });
    it('loads from an ES module, and the functions name the missing peer', () => {
      expect(JSON.parse(node(dir, 'module', probe("import * as m from '@sluice/metrics';")))).toEqual(expected);
    });
  });
});
