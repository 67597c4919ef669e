import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { sharedBreaker } from './breaker.js';
import type { LimiterEvent } from './events.js';

test('each limiter on a shared breaker hears breaker-open and breaker-close under its own prefix', () => {
  const store = {};
  const heard: Record<string, LimiterEvent[]> = { a: [], b: [], shared: [] };
  const onShared = (e: LimiterEvent) => heard.shared?.push(e);
  const members = [
    { prefix: 'a', onEvent: (e: LimiterEvent) => heard.a?.push(e) },
    { prefix: 'b', onEvent: (e: LimiterEvent) => heard.b?.push(e) },
    { prefix: 'c', onEvent: onShared },
    { prefix: 'd', onEvent: onShared },
    { prefix: 'e', onEvent: undefined },
  ];
  const onChannel: LimiterEvent[] = [];
  const listener = (m: unknown) => onChannel.push(m as LimiterEvent);
  subscribe('sluice:event', listener);
  try {
    const [first] = members.map((m) => sharedBreaker(store, 2, 1000, m));
    const breaker = first?.breaker;
    if (breaker === undefined) throw new Error('no breaker');
    breaker.failure(0, new Error('down'));
    breaker.failure(1, new Error('down'));
    expect(breaker.allow(2)).toBe(false);
    expect(breaker.allow(2000)).toBe(true); // the probe
    breaker.success(() => 2005);
  } finally {
    unsubscribe('sluice:event', listener);
  }
  const all = ['a', 'b', 'c', 'd', 'e'];
  expect(heard.a?.map((e) => [e.type, e.prefix])).toEqual([
    ['breaker-open', 'a'],
    ['breaker-close', 'a'],
  ]);
  expect(heard.b?.map((e) => [e.type, e.prefix])).toEqual([
    ['breaker-open', 'b'],
    ['breaker-close', 'b'],
  ]);
  // One onEvent given to two limiters hears each change once, under the first one's prefix.
  expect(heard.shared?.map((e) => [e.type, e.prefix])).toEqual([
    ['breaker-open', 'c'],
    ['breaker-close', 'c'],
  ]);
  for (const e of [...(heard.a ?? []), ...(heard.b ?? []), ...(heard.shared ?? [])]) expect(e.prefixes).toEqual(all);
  // The channel gets each change once, naming every prefix.
  expect(onChannel.map((e) => [e.type, e.prefix, e.prefixes])).toEqual([
    ['breaker-open', 'a', all],
    ['breaker-close', 'a', all],
  ]);
  expect(heard.b?.[1]?.latencyMs).toBe(2004); // open from the failure at 1 to the success at 2005
});
