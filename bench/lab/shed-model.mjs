// A model of a Node server under an open-loop load, driven through the real createShedder on a simulated clock:
// what the shedder's rule does, apart from what a shared machine does to a benchmark's timings.
// Requests arrive on a fixed schedule (rate x capacity); the server runs turns of its event loop: each turn reads
// every request that arrived before it began and runs them one after another, an admitted one for `service` ms
// (the handler plus its framework), a shed one for `shedCost` ms (the framework's cost of reading and answering
// it). Slots come back at the end of the turn, as the adapters give them back; the event loop's delay read by the shedder is the
// longest turn since its last read. Latency counts from arrival to the end of the request's run. Each load
// starts a new shedder after a warm-up below capacity, as bench/overload.mjs does. Deterministic (--arrivals
// poisson: random gaps, from a fixed seed).
// Usage: node bench/lab/shed-model.mjs [--seconds 3] [--service 2.2] [--shed-cost 0.05] [--shed '{"reserve":{"critical":0.2}}']
//        [--arrivals even|poisson] [--steal 0.1]
import { createShedder } from '@sluice/core';
import { arg } from '../args.mjs';

const SECONDS = Number(arg('seconds', 3));
const SERVICE = Number(arg('service', 2.2));
// --steal 0.1: the server gets 90% of a core during the runs, against the capacity the loads are reckoned from
// (on a shared machine, what bench/overload.mjs's servers got); default 0.
const SLOW = 1 / (1 - Number(arg('steal', 0)));
const SHED_COST = arg('shed-cost', '0.05,0.15').split(',').map(Number);
const SHED = JSON.parse(arg('shed', '{}'));
const POISSON = arg('arrivals', 'even') === 'poisson';
const GOOD_MS = 250;
const WARM_MS = 500;
const turn = () => new Promise((resolve) => setImmediate(resolve));
const percentile = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s[Math.min(s.length - 1, Math.floor(s.length * p))];
};

/** Runs `load` x capacity for SECONDS; every `criticalEvery`-th request critical. */
async function run(load, shedCost, criticalEvery = 0, options = SHED) {
  const state = { now: 0, longest: 0 };
  const shedder = createShedder({
    ...options,
    clock: () => state.now,
    eventLoopDelay: () => {
      const d = state.longest;
      state.longest = 0;
      return d;
    },
  });
  // A warm-up at a quarter of capacity for WARM_MS (the benchmark's is 0.3 s at 100/s), then the load.
  const warmRate = 0.25 / SERVICE;
  const warm = Math.round(warmRate * WARM_MS);
  const rate = load / SERVICE; // per ms
  const total = warm + Math.round(rate * SECONDS * 1000);
  // Evenly spaced, or (--arrivals poisson) with exponential gaps from a seeded generator: the same run each time,
  // with the bursts a real network delivers (a turn then reads more or fewer requests than the mean).
  let seed = 29;
  const uniform = () => {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    return (seed + 0.5) / 2 ** 32;
  };
  const times = [];
  for (let i = 0, t = WARM_MS; i < total; i++) {
    if (i < warm) times.push(i / warmRate);
    else {
      times.push(t);
      t += POISSON ? -Math.log(uniform()) / rate : 1 / rate;
    }
  }
  const arrival = (i) => times[i];
  const done = [];
  const limits = [];
  const record = (i, critical, ok) => i >= warm && done.push({ critical, ok, ms: state.now - arrival(i) });
  // maxWait: the adapters' waiting room as the kit keeps it (at most twice `limit` requests, critical ones first,
  // a critical one arriving at a full room displacing the last normal one); served when slots come back, at the
  // end of a turn, before the next turn's arrivals; shed past its class's maxWait (one for all, or per class).
  const ms = (v) => Number.parseFloat(String(v ?? 0)); // 20 or '20ms'
  const perClass = typeof options.maxWait === 'object';
  const waitOf = (critical) => (perClass ? ms(options.maxWait[critical ? 'critical' : 'normal']) : ms(options.maxWait));
  const room = [];
  const ended = [];
  const admit = (i, critical, permit) => {
    state.now += SERVICE * SLOW;
    record(i, critical, true);
    ended.push(permit);
  };
  let next = 0;
  while (next < total) {
    let start = state.now;
    for (let w = room.shift(); w !== undefined; w = room.shift()) {
      if (state.now - arrival(w.i) > waitOf(w.critical)) {
        record(w.i, w.critical, false);
        continue;
      }
      const permit = shedder.acquire(w.critical ? 'critical' : 'normal');
      if (permit === undefined) {
        room.unshift(w);
        break;
      }
      admit(w.i, w.critical, permit);
    }
    if (state.now === start && arrival(next) > state.now) start = state.now = arrival(next); // idle until the next request
    const batch = [];
    const poll = state.now;
    while (next < total && arrival(next) <= poll) batch.push(next++);
    for (const i of batch) {
      const critical = criticalEvery > 0 && i % criticalEvery === 0;
      const permit = shedder.acquire(critical ? 'critical' : 'normal');
      if (permit !== undefined) {
        admit(i, critical, permit);
        continue;
      }
      state.now += shedCost * SLOW;
      if (waitOf(critical) > 0 && (room.length < 2 * shedder.limit || (critical && !room.at(-1).critical))) {
        if (room.length >= 2 * shedder.limit) record(room.pop().i, false, false);
        const at = critical ? room.findIndex((w) => !w.critical) : -1;
        room.splice(at < 0 ? room.length : at, 0, { i, critical });
      } else record(i, critical, false);
    }
    state.longest = Math.max(state.longest, state.now - start);
    for (const permit of ended.splice(0)) permit.release(); // the turn ends: its slots come back
    await turn(); // the shedder adapts
    if (next > warm) limits.push(shedder.limit);
  }
  for (const w of room) record(w.i, w.critical, false);
  shedder.close();
  const ok = done.filter((r) => r.ok);
  const good = ok.filter((r) => r.ms <= GOOD_MS);
  const critical = done.filter((r) => r.critical);
  return {
    goodput: good.length / SECONDS,
    p50: percentile(
      ok.map((r) => r.ms),
      0.5,
    ),
    p99: percentile(
      ok.map((r) => r.ms),
      0.99,
    ),
    shed: 1 - ok.length / done.length,
    critical: critical.length === 0 ? undefined : critical.filter((r) => r.ok && r.ms <= GOOD_MS).length / critical.length,
    limit: percentile(limits, 0.5),
  };
}

const f = (x, d = 0) => (x === undefined ? '' : x.toFixed(d));
console.log(
  `service ${SERVICE} ms (capacity ${f(1000 / SERVICE)}/s), ${SECONDS} s per load, ${POISSON ? 'Poisson' : 'even'} arrivals, ${f((1 - 1 / SLOW) * 100)}% of the core taken by others, shed() options ${JSON.stringify(SHED)}`,
);
for (const shedCost of SHED_COST) {
  console.log(`\nshed cost ${shedCost} ms per request`);
  console.log('| load | goodput/s | / 1x | p50 ms | p99 ms | shed | median limit | critical 2xx in 250 ms |');
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
  const at1 = (await run(1, shedCost)).goodput;
  for (const [label, load, every] of [
    ['0.5x', 0.5, 0],
    ['1x', 1, 0],
    ['2x', 2, 0],
    ['4x', 4, 0],
    ['4x, 20% critical', 4, 5],
  ]) {
    const r = await run(load, shedCost, every);
    console.log(
      `| ${label} | ${f(r.goodput)} | ${f(r.goodput / at1, 2)} | ${f(r.p50, 1)} | ${f(r.p99, 1)} | ${f(r.shed * 100, 1)}% | ${r.limit} | ${r.critical === undefined ? '' : `${f(r.critical * 100, 1)}%`} |`,
    );
  }
}
