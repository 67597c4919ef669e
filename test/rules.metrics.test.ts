// Rules in the metrics: decisions a deny or allow rule made count in sluice_decisions_total under
// source="rule" (policy "deny" or "allow"); a process' rule changes are 'rule-change' events on sluice:event.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createLimiter, createRules, type LimiterEvent, memoryStore } from '@sluice/core';
import { prometheusMetrics } from '@sluice/metrics';
import { Registry } from 'prom-client';
import { uniquePrefix } from './support/redis';

type Labels = Record<string, string | number>;

async function count(register: Registry, match: Labels): Promise<number> {
  const metric = (await register.getMetricsAsJSON()).find((m) => m.name === 'sluice_decisions_total');
  const values = (metric?.values ?? []) as Array<{ value: number; labels: Labels }>;
  return values.filter((v) => Object.entries(match).every(([k, want]) => v.labels[k] === want)).reduce((sum, v) => sum + v.value, 0);
}

it('counts decisions by rule under source="rule", and publishes rule-change on sluice:event', async () => {
  const register = new Registry();
  const metrics = prometheusMetrics({ register });
  const events: LimiterEvent[] = [];
  const hear = (event: unknown) => events.push(event as LimiterEvent);
  subscribe('sluice:event', hear);
  const prefix = uniquePrefix();
  const store = memoryStore();
  const rules = createRules({ store, prefix });
  const limiter = createLimiter({ policy: '5/1m', store, prefix, rules });
  try {
    await rules.deny('bad');
    await rules.allow('good');
    for (let i = 0; i < 3; i++) await limiter.consume('bad');
    for (let i = 0; i < 2; i++) await limiter.consume('good');
    await limiter.consume('other');
    expect(await count(register, { prefix, source: 'rule', outcome: 'denied', policy: 'deny' })).toBe(3);
    expect(await count(register, { prefix, source: 'rule', outcome: 'allowed', policy: 'allow' })).toBe(2);
    expect(await count(register, { prefix, source: 'store' })).toBe(1);
    const changes = events.filter((e) => e.type === 'rule-change' && e.prefix === prefix);
    expect(changes.at(-1)).toMatchObject({ type: 'rule-change', prefix, rules: 2 });
  } finally {
    unsubscribe('sluice:event', hear);
    metrics.stop();
    await limiter.close();
    await rules.close();
  }
});
