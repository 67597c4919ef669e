// Draws the benchmarks' JSON results (bench/results/*.json, written at the end of each benchmark by
// bench/results.mjs) as SVG charts in bench/charts/, which bench/RESULTS.md shows. Hand-written SVG with
// no dependency, so that any checkout can redraw them and GitHub shows them inline:
//   http.svg     ratio to the bare app per framework and contender        (from bench/http.mjs)
//   core.svg     decisions/s at 1, 64 and 512 calls in flight per contender (from bench/core.mjs)
//   outage.svg   latency with Redis up, killed and paused per contender    (from bench/outage.mjs)
//   hotkey.svg   decisions sent to Redis per request, per tier and flood   (from bench/hotkey.mjs)
//   overload.svg goodput against offered load per framework and contender (from bench/overload.mjs)
// A chart whose results file is missing is skipped (and said so); the others are still drawn.
// Usage: node bench/charts.mjs [--results bench/results] [--out bench/charts]
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { arg } from './args.mjs';
import { RESULTS_DIR } from './results.mjs';

const RESULTS = resolve(arg('results', RESULTS_DIR));
const OUT = resolve(arg('out', fileURLToPath(new URL('./charts/', import.meta.url))));

// ---------------------------------------------------------------- SVG primitives

const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const attrs = (a) =>
  Object.entries(a)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => ` ${k}="${typeof v === 'number' ? round(v) : esc(v)}"`)
    .join('');
const round = (n) => Math.round(n * 10) / 10;
const el = (tag, a, body) => (body === undefined ? `<${tag}${attrs(a)}/>` : `<${tag}${attrs(a)}>${body}</${tag}>`);
const text = (x, y, s, a = {}) => el('text', { x, y, ...a }, esc(s));
const line = (x1, y1, x2, y2, a = {}) => el('line', { x1, y1, x2, y2, stroke: '#333', ...a });
// Wide enough for layout at 12 px in a sans-serif font; SVG text cannot be measured without a renderer.
const textWidth = (s, size = 12) => String(s).length * size * 0.56;

const INK = '#222';
const MUTED = '#666';
const GRID = '#e4e4e4';

/** A whole chart: white background (GitHub's dark mode would show black text on its own dark page), title, notes. */
function page(width, height, title, notes, body) {
  const head = [
    text(16, 26, title, { 'font-size': 16, 'font-weight': 'bold', fill: INK }),
    ...notes.map((n, i) => text(16, 44 + i * 15, n, { 'font-size': 11, fill: MUTED })),
  ];
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}"`,
    ` font-family="-apple-system, 'Segoe UI', Helvetica, Arial, sans-serif" font-size="12">\n`,
    el('title', {}, esc(title)),
    '\n',
    el('rect', { width, height, fill: '#fff' }),
    '\n',
    [...head, ...body].join('\n'),
    '\n</svg>\n',
  ].join('');
}

/** Round tick values from 0 to at least `max`, about `count` of them, at steps of 1, 2 or 5 x 10^n. */
function linearTicks(max, count = 5) {
  const raw = max / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * power).find((s) => s >= raw);
  const ticks = [];
  for (let t = 0; t < max + step / 2; t += step) ticks.push(Number(t.toPrecision(12)));
  if (ticks.at(-1) < max) ticks.push(Number((ticks.at(-1) + step).toPrecision(12)));
  return ticks;
}

/** Powers of ten from `min` up to `max`, and `max` itself when it is not one. */
function logTicks(min, max) {
  const ticks = [];
  for (let t = 10 ** Math.floor(Math.log10(min)); t <= max * 1.0001; t *= 10) ticks.push(t);
  if (ticks.at(-1) < max * 0.9999) ticks.push(max);
  return ticks;
}

/** Horizontal grid lines with their labels left of the plot; `y` maps a value to a pixel row. */
function yAxis({ left, right, ticks, y, format, label }) {
  const out = [];
  for (const t of ticks) {
    out.push(line(left, y(t), right, y(t), { stroke: GRID }));
    out.push(text(left - 6, y(t) + 4, format(t), { 'text-anchor': 'end', 'font-size': 11, fill: MUTED }));
  }
  out.push(line(left, y(ticks[0]), right, y(ticks[0]), { stroke: '#999' }));
  if (label) {
    const mid = (y(ticks[0]) + y(ticks.at(-1))) / 2;
    out.push(text(14, mid, label, { transform: `rotate(-90 14 ${round(mid)})`, 'text-anchor': 'middle', 'font-size': 11, fill: MUTED }));
  }
  return out;
}

/**
 * Bars side by side in groups. A bar is { value, min?, max?, color, label?, inside?, marks? }: min–max
 * draws a whisker, `label` is written above it all, `inside` at the bar's top (above it when the bar is
 * too short), `marks` are extra values drawn on the bar ('dot' or 'dash').
 */
function groupedBars({ left, right, groups, y, base, labelSize = 10 }) {
  const out = [];
  const groupWidth = (right - left) / groups.length;
  groups.forEach((group, g) => {
    const inner = groupWidth * 0.8;
    const barWidth = Math.min(50, inner / Math.max(1, group.bars.length));
    const start = left + g * groupWidth + (groupWidth - barWidth * group.bars.length) / 2;
    group.bars.forEach((bar, b) => {
      const x = start + b * barWidth;
      const top = y(bar.value);
      out.push(el('rect', { x: x + 1, y: Math.min(top, base), width: barWidth - 2, height: Math.abs(base - top), fill: bar.color }));
      let above = top;
      if (bar.min !== undefined && bar.max !== undefined) {
        const cx = x + barWidth / 2;
        out.push(line(cx, y(bar.min), cx, y(bar.max), { stroke: INK, 'stroke-width': 1 }));
        out.push(line(cx - 4, y(bar.min), cx + 4, y(bar.min), { stroke: INK }));
        out.push(line(cx - 4, y(bar.max), cx + 4, y(bar.max), { stroke: INK }));
        above = Math.min(above, y(bar.max));
      }
      for (const mark of bar.marks ?? []) {
        const my = y(mark.value);
        const cx = x + barWidth / 2;
        if (mark.kind === 'dot') out.push(el('circle', { cx, cy: my, r: 3.5, fill: '#fff', stroke: INK, 'stroke-width': 1.5 }));
        else out.push(line(x + 3, my, x + barWidth - 3, my, { stroke: INK, 'stroke-width': 2.5 }));
        above = Math.min(above, my);
      }
      if (bar.inside !== undefined && base - top > 20) {
        out.push(text(x + barWidth / 2, top + 14, bar.inside, { 'text-anchor': 'middle', 'font-size': labelSize, fill: '#fff' }));
      } else if (bar.inside !== undefined) {
        out.push(text(x + barWidth / 2, above - 5, bar.inside, { 'text-anchor': 'middle', 'font-size': labelSize, fill: INK }));
      }
      if (bar.label !== undefined) {
        out.push(text(x + barWidth / 2, above - 5, bar.label, { 'text-anchor': 'middle', 'font-size': labelSize, fill: INK }));
      }
    });
    const cx = left + g * groupWidth + groupWidth / 2;
    const lines = Array.isArray(group.label) ? group.label : [group.label];
    lines.forEach((l, i) => {
      out.push(text(cx, base + 18 + i * 14, l, { 'text-anchor': 'middle', 'font-size': i === 0 ? 12 : 11, fill: i === 0 ? INK : MUTED }));
    });
  });
  return out;
}

/** Swatches and names, in rows that wrap at `width`; returns the drawing and the height it took. */
function legend(x, y, width, items) {
  const out = [];
  let cx = x;
  let cy = y;
  for (const item of items) {
    const w = 18 + textWidth(item.label) + 18;
    if (cx > x && cx + w > x + width) {
      cx = x;
      cy += 18;
    }
    if (item.kind === 'line')
      out.push(line(cx, cy - 4, cx + 14, cy - 4, { stroke: item.color, 'stroke-width': 2, 'stroke-dasharray': item.dash }));
    else if (item.kind === 'dot')
      out.push(el('circle', { cx: cx + 7, cy: cy - 4, r: 3.5, fill: '#fff', stroke: INK, 'stroke-width': 1.5 }));
    else if (item.kind === 'dash') out.push(line(cx + 1, cy - 4, cx + 13, cy - 4, { stroke: INK, 'stroke-width': 2.5 }));
    else if (item.kind === 'whisker') {
      out.push(line(cx + 7, cy - 10, cx + 7, cy + 2, { stroke: INK }));
      out.push(line(cx + 3, cy - 10, cx + 11, cy - 10, { stroke: INK }));
      out.push(line(cx + 3, cy + 2, cx + 11, cy + 2, { stroke: INK }));
    } else out.push(el('rect', { x: cx, y: cy - 10, width: 14, height: 12, fill: item.color }));
    out.push(text(cx + 18, cy, item.label, { fill: INK }));
    cx += w;
  }
  return { out, height: cy - y + 18 };
}

// ---------------------------------------------------------------- formats and colours

const rounds = (n) => (n === 1 ? '1 round' : `${n ?? '?'} rounds`);
const thousands = (n) => Math.round(n).toLocaleString('en-US');
const short = (n) => {
  if (n >= 1e6) return `${Number((n / 1e6).toPrecision(3))}M`;
  if (n >= 1e3) return `${Number((n / 1e3).toPrecision(3))}k`;
  return String(Number(n.toPrecision(3)));
};
const ms = (n) => (n >= 1000 ? `${Number((n / 1000).toPrecision(3))} s` : `${n < 10 ? Number(n.toFixed(1)) : Math.round(n)} ms`);

/** Where, when and how: two lines under every chart's title. */
function provenance(r) {
  const m = r.machine ?? {};
  const uncommitted = r.uncommittedChanges ? ` + ${r.uncommittedChanges} uncommitted change(s)` : '';
  const machine = [m.cpus && `${m.cpus} CPUs`, m.node && `Node ${m.node.replace(/^v/, '')}`, m.redis && `Redis ${m.redis}`]
    .filter(Boolean)
    .join(', ');
  return [`${String(r.date).slice(0, 16).replace('T', ' ')} UTC · commit ${r.commit}${uncommitted} · ${machine}`, `$ ${r.command}`];
}

const BLUE = '#1f5fbf';
const BENCH = '#555';

/** Colours by name, stable within a chart: sluice's in blues, every other contender a warm colour of its own. */
function palette(fixed = {}) {
  // A colour given to a name is not handed out again.
  const taken = new Set(Object.values(fixed));
  const blues = [BLUE, '#3d8fd9', '#7ab6ea', '#b9d7f3'].filter((c) => !taken.has(c));
  const warm = ['#e07b39', '#b8321c', '#d9a21b', '#8e5ea2'];
  const given = new Map(Object.entries(fixed));
  let b = 0;
  let w = 0;
  return (name) => {
    if (!given.has(name)) given.set(name, name.startsWith('sluice') ? blues[b++ % blues.length] : warm[w++ % warm.length]);
    return given.get(name);
  };
}

// ---------------------------------------------------------------- the charts

const TARGET = 0.85; // the target: sluice on Redis at least this share of the bare app's requests/s

/** bench/http.mjs: ratio to the bare app (median of the rounds' ratios, min–max whiskers), per framework. */
function httpChart(r) {
  const frameworks = Object.entries(r.frameworks);
  const colorOf = palette({ control: '#b5b5b5', 'sluice-redis': BLUE, 'sluice-memory': '#8ab8e8' });
  const shown = (rows) => rows.filter((row) => row.contender !== 'bare');
  const top = Math.max(1.2, ...frameworks.flatMap(([, rows]) => shown(rows).map((row) => row.ratioToBare.max)));
  const ticks = linearTicks(top, 6);
  const width = Math.max(760, 120 + frameworks.reduce((n, [, rows]) => n + shown(rows).length * 50 + 40, 0));
  const left = 60;
  const right = width - 20;
  const plotTop = 115;
  const base = plotTop + 280;
  const y = (v) => base - (v / ticks.at(-1)) * (base - plotTop);
  const items = new Map(); // label -> legend item, in order of first appearance
  const groups = frameworks.map(([framework, rows]) => {
    const bare = rows.find((row) => row.contender === 'bare');
    return {
      label: [framework, bare ? `bare app: ${thousands(bare.requestsPerSecond.median)} req/s` : ''],
      bars: shown(rows).map((row) => {
        const color = colorOf(row.contender);
        if (!items.has(row.label)) items.set(row.label, { color, label: row.label });
        const q = row.ratioToBare;
        return { value: q.median, min: q.min, max: q.max, color, label: q.median.toFixed(2) };
      }),
    };
  });
  const body = [
    ...yAxis({ left, right, ticks, y, format: (t) => t.toFixed(2), label: 'requests/s ÷ the bare app’s, same round' }),
    ...groupedBars({ left, right, groups, y, base }),
    // Over the bars, so that a bar's height reads against them.
    line(left, y(1), right, y(1), { stroke: INK, 'stroke-width': 1.5 }),
    line(left, y(TARGET), right, y(TARGET), { stroke: BLUE, 'stroke-dasharray': '5 4' }),
  ];
  const key = legend(left, base + 58, right - left, [
    ...items.values(),
    { kind: 'line', color: INK, label: 'the bare app (1.00)' },
    { kind: 'line', color: BLUE, dash: '5 4', label: `target for sluice on Redis (${TARGET})` },
    { kind: 'whisker', label: `min–max over ${rounds(r.settings?.rounds)}` },
  ]);
  return page(
    width,
    base + 58 + key.height,
    'HTTP: requests/s relative to the bare app (higher is better)',
    [
      ...provenance(r),
      `Median of ${rounds(r.settings?.rounds)} of ${r.settings?.seconds ?? '?'} s; ${r.settings?.connections ?? '?'} connections; each ratio against the bare app of the same round.`,
    ],
    [...body, ...key.out],
  );
}

/** bench/core.mjs: decisions/s per contender, one panel per number of calls in flight (their scales differ 40x). */
function coreChart(r) {
  const inflight = r.inflight ?? [1, 64, 512];
  const colorOf = palette();
  const colors = r.contenders.map((c) => colorOf(c.name));
  const panelWidth = Math.max(240, (r.contenders.length + 1) * 36 + 40);
  const gap = 70;
  const left = 70;
  const width = left + inflight.length * panelWidth + (inflight.length - 1) * gap + 20;
  const plotTop = 115;
  const base = plotTop + 260;
  const rb = r.redisBenchmark;
  const body = [];
  inflight.forEach((n, i) => {
    const x0 = left + i * (panelWidth + gap);
    const x1 = x0 + panelWidth;
    const cells = r.contenders.map((c) => c.decisionsPerSecond[n]);
    const bench = rb && rb.inflight === n ? rb.decisionsPerSecond : undefined;
    const ticks = linearTicks(Math.max(...cells.map((q) => q.max ?? q.median), bench?.median ?? 0), 5);
    const y = (v) => base - (v / ticks.at(-1)) * (base - plotTop);
    body.push(...yAxis({ left: x0, right: x1, ticks, y, format: short, label: i === 0 ? 'decisions/s' : undefined }));
    const bars = cells.map((q, j) => ({ value: q.median, min: q.min, max: q.max, color: colors[j], label: short(q.median) }));
    if (bench) bars.push({ value: bench.median, min: bench.min, max: bench.max, color: BENCH, label: short(bench.median) });
    body.push(...groupedBars({ left: x0, right: x1, groups: [{ label: n === 1 ? '1 call in flight' : `${n} in flight`, bars }], y, base }));
  });
  const items = r.contenders.map((c, j) => ({ color: colors[j], label: c.name }));
  if (rb) items.push({ color: BENCH, label: `${rb.name} (${rb.inflight} in flight only)` });
  items.push({ kind: 'whisker', label: `min–max over ${rounds(r.settings?.rounds)}` });
  const key = legend(left, base + 44, width - left - 20, items);
  const ratio = r.tokenBucketOverFasterLibrary?.[512];
  return page(
    width,
    base + 44 + key.height,
    'Core: decisions per second from one process on one Redis (higher is better)',
    [
      ...provenance(r),
      `Median of ${rounds(r.settings?.rounds)} of ${r.settings?.seconds ?? '?'} s over ${thousands(r.settings?.keys ?? 0)} keys` +
        (ratio
          ? `; token-bucket ÷ the faster library at 512 in flight, within rounds: ${ratio.median.toFixed(2)}x (${ratio.min.toFixed(2)}–${ratio.max.toFixed(2)}x)`
          : ''),
    ],
    [...body, ...key.out],
  );
}

const GAVE_UP = '#b8321c';
const OUTAGE_NAMES = { sluice: 'sluice (failMode: open)', erl: 'express-rate-limit + rate-limit-redis', fastify: '@fastify/rate-limit' };
const PHASES = { up: 'Redis up', kill: 'Redis killed (SIGKILL)', pause: 'Redis paused (SIGSTOP)' };

/** bench/outage.mjs: p99 latency (bar), p50 (dot) and max (dash) per phase and contender, on a log scale. */
function outageChart(r) {
  const cap = r.settings?.cap ?? Math.max(...r.phases.map((x) => x.max));
  const contenders = [...new Set(r.phases.map((x) => x.contender))];
  const phases = [...new Set(r.phases.map((x) => x.phase))];
  const colorOf = palette();
  const colors = contenders.map((c) => colorOf(c));
  const floor = Math.max(0.1, 10 ** Math.floor(Math.log10(Math.min(...r.phases.map((x) => x.p50)))));
  const ticks = logTicks(floor, cap);
  const left = 70;
  const width = Math.max(760, left + phases.length * (contenders.length * 44 + 80));
  const right = width - 20;
  const plotTop = 115;
  const base = plotTop + 280;
  const y = (v) => {
    const t = Math.log10(Math.min(Math.max(v, floor), cap) / floor) / Math.log10(cap / floor);
    return base - t * (base - plotTop);
  };
  const given = (v) => (v >= cap ? `≥${ms(cap)}` : ms(v));
  const groups = phases.map((phase) => ({
    label: PHASES[phase] ?? phase,
    bars: contenders.map((c, i) => {
      const x = r.phases.find((row) => row.contender === c && row.phase === phase);
      if (!x) return { value: floor, color: '#fff', label: 'not run' };
      return {
        value: x.p99,
        color: colors[i],
        marks: [
          { kind: 'dot', value: x.p50 },
          { kind: 'dash', value: x.max },
        ],
        inside: given(x.p99),
      };
    }),
  }));
  const body = [
    ...yAxis({ left, right, ticks, y, format: ms, label: 'latency (log scale)' }),
    line(left, y(cap), right, y(cap), { stroke: GAVE_UP, 'stroke-dasharray': '5 4' }),
    ...groupedBars({ left, right, groups, y, base, labelSize: 11 }),
  ];
  const items = [
    ...contenders.map((c, i) => ({ color: colors[i], label: OUTAGE_NAMES[c] ?? c })),
    { kind: 'rect', color: '#999', label: 'bar: p99 (its value written in it)' },
    { kind: 'dot', label: 'p50' },
    { kind: 'dash', label: 'max' },
    { kind: 'line', color: GAVE_UP, dash: '5 4', label: `requests given up at ${ms(cap)}, counted there` },
  ];
  const key = legend(left, base + 44, right - left, items);
  const s = r.settings ?? {};
  return page(
    width,
    base + 44 + key.height,
    'Latency during a Redis outage (lower is better)',
    [
      ...provenance(r),
      `Every limiter set to let requests through when its store fails; ${s.connections ?? '?'} keep-alive connections, ${s.seconds ?? '?'} s per phase, load starting at the fault.`,
    ],
    [...body, ...key.out],
  );
}

/** bench/hotkey.mjs: decisions the limiter sent to Redis per request, per mode, one panel per flood. */
function hotkeyChart(r) {
  const floods = [...new Set(r.floods.map((f) => f.flood))];
  const algorithms = [...new Set(r.floods.map((f) => f.algorithm))];
  const modes = [...new Set(r.floods.flatMap((f) => f.modes.map((m) => m.mode)))];
  const colorOf = palette({ 'token-bucket': BLUE, 'fixed-window': '#7ab6ea' });
  const cell = (flood, algorithm, mode) =>
    r.floods.find((f) => f.flood === flood && f.algorithm === algorithm)?.modes.find((m) => m.mode === mode)?.decisionsSentPerRequest;
  const all = r.floods.flatMap((f) => f.modes.map((m) => m.decisionsSentPerRequest.max ?? m.decisionsSentPerRequest.median));
  const ticks = linearTicks(Math.max(1, ...all), 4);
  const s = r.settings ?? {};
  const titles = { paced: `paced at ${s.times ?? '?'}x the limit`, closed: `closed loop, ${s.inflight ?? '?'} in flight` };
  const labelWidth = Math.max(...modes.map((m) => textWidth(m))) + 16;
  const panelWidth = 300;
  const gap = 50;
  const left = 16 + labelWidth;
  const barHeight = 11;
  const rowHeight = algorithms.length * barHeight + 12;
  const plotTop = 135;
  const bottom = plotTop + modes.length * rowHeight;
  const width = left + floods.length * panelWidth + (floods.length - 1) * gap + 50;
  const body = [];
  modes.forEach((mode, i) => {
    const mid = plotTop + i * rowHeight + rowHeight / 2;
    body.push(text(left - 10, mid + 4, mode, { 'text-anchor': 'end', fill: INK }));
  });
  floods.forEach((flood, p) => {
    const x0 = left + p * (panelWidth + gap);
    const x = (v) => x0 + (v / ticks.at(-1)) * panelWidth;
    body.push(
      text(x0 + panelWidth / 2, plotTop - 12, titles[flood] ?? flood, { 'text-anchor': 'middle', 'font-weight': 'bold', fill: INK }),
    );
    for (const t of ticks) {
      body.push(line(x(t), plotTop, x(t), bottom, { stroke: t === 0 ? '#999' : GRID }));
      body.push(text(x(t), bottom + 14, String(Number(t.toFixed(2))), { 'text-anchor': 'middle', 'font-size': 11, fill: MUTED }));
    }
    modes.forEach((mode, i) => {
      algorithms.forEach((algorithm, a) => {
        const q = cell(flood, algorithm, mode);
        if (!q) return;
        const y = plotTop + i * rowHeight + 6 + a * barHeight;
        body.push(el('rect', { x: x(0), y, width: Math.max(1, x(q.median) - x(0)), height: barHeight - 1, fill: colorOf(algorithm) }));
        let end = x(q.median);
        if (q.min !== undefined && q.max !== undefined && q.max > q.min) {
          body.push(line(x(q.min), y + barHeight / 2, x(q.max), y + barHeight / 2, { stroke: INK }));
          end = x(q.max);
        }
        body.push(text(end + 4, y + barHeight - 2, q.median.toFixed(3), { 'font-size': 10, fill: INK }));
      });
    });
  });
  body.push(
    text(left + (width - left - 50) / 2, bottom + 32, 'decisions sent to Redis per request (1.000: every request a store decision)', {
      'text-anchor': 'middle',
      'font-size': 11,
      fill: MUTED,
    }),
  );
  const key = legend(left, bottom + 56, width - left - 50, [
    ...algorithms.map((a) => ({ color: colorOf(a), label: `${a} '${s.limit ?? '?'}/1s'` })),
    { kind: 'whisker', label: `line: min–max over ${rounds(s.rounds)}` },
  ]);
  return page(
    width,
    bottom + 56 + key.height,
    'One hot key under a flood: what reaches Redis (lower is cheaper)',
    [
      ...provenance(r),
      `One process, one key; the deny cache, a local prefilter and shards on a 3-master Cluster, side by side; median of ${rounds(s.rounds)} of ${s.seconds ?? '?'} s.`,
    ],
    [...body, ...key.out],
  );
}

/** bench/overload.mjs: goodput against offered load, a panel per framework, a line per contender. */
function overloadChart(r) {
  const frameworks = Object.entries(r.frameworks);
  const loads = ['0.5', '1', '2', '4'];
  const colorOf = palette({ none: '#b8321c', sluice: BLUE, 'under-pressure': '#d9a21b' });
  // A run whose JSON has no `share`: the median goodput over the median capacity, no whiskers.
  const share = (c, load, f) => c[load]?.share ?? { median: c[load].goodput.median / f.capacity, min: Number.NaN, max: Number.NaN };
  const top = Math.max(
    1.2,
    ...frameworks.flatMap(([, f]) =>
      Object.values(f.contenders).flatMap((c) => loads.map((l) => share(c, l, f).max || share(c, l, f).median)),
    ),
  );
  const ticks = linearTicks(top, 6);
  const panel = 240;
  const gap = 30;
  const left = 60;
  const width = left + frameworks.length * (panel + gap) + 10;
  const plotTop = 120;
  const base = plotTop + 260;
  const y = (v) => base - (Math.min(v, ticks.at(-1)) / ticks.at(-1)) * (base - plotTop);
  const body = [...yAxis({ left, right: width - 10, ticks, y, format: (t) => t.toFixed(1), label: 'goodput ÷ capacity of the round' })];
  const items = new Map();
  frameworks.forEach(([framework, f], i) => {
    const x0 = left + i * (panel + gap) + 20;
    const x = (k) => x0 + (k / (loads.length - 1)) * (panel - 40);
    body.push(
      text(x0 + (panel - 40) / 2, plotTop - 12, `${framework} (capacity ${thousands(f.capacity)}/s)`, {
        'text-anchor': 'middle',
        'font-weight': 'bold',
        fill: INK,
      }),
    );
    // What a perfect shedder would do: all of capacity, and no more, however much is offered.
    const ideal = loads.map((l, k) => `${round(x(k))},${round(y(Math.min(Number(l), 1)))}`).join(' ');
    body.push(el('polyline', { points: ideal, fill: 'none', stroke: '#999', 'stroke-dasharray': '4 4' }));
    loads.forEach((l, k) => {
      body.push(text(x(k), base + 16, `${l}x`, { 'text-anchor': 'middle', 'font-size': 11, fill: MUTED }));
    });
    for (const [contender, c] of Object.entries(f.contenders)) {
      const color = colorOf(contender);
      if (!items.has(contender))
        items.set(contender, {
          kind: 'line',
          color,
          label: contender === 'none' ? 'no protection' : contender === 'under-pressure' ? '@fastify/under-pressure' : 'sluice shed()',
        });
      const points = loads.map((l, k) => [x(k), share(c, l, f)]);
      body.push(
        el('polyline', {
          points: points.map(([px, q]) => `${round(px)},${round(y(q.median))}`).join(' '),
          fill: 'none',
          stroke: color,
          'stroke-width': 2,
        }),
      );
      for (const [px, q] of points) {
        if (Number.isFinite(q.min)) body.push(line(px, y(q.min), px, y(q.max), { stroke: color, 'stroke-width': 1 }));
        body.push(el('circle', { cx: px, cy: y(q.median), r: 3, fill: color }));
      }
    }
  });
  body.push(
    text(left + (width - left) / 2, base + 34, 'offered load (open loop), × the round’s capacity', {
      'text-anchor': 'middle',
      'font-size': 11,
      fill: MUTED,
    }),
  );
  const key = legend(left, base + 58, width - left - 10, [
    ...items.values(),
    { kind: 'line', color: '#999', dash: '4 4', label: 'all of capacity, no more' },
    { kind: 'whisker', label: `min–max over ${rounds(r.rounds)}` },
  ]);
  return page(
    width,
    base + 58 + key.height,
    'Overload: goodput against offered load (2xx within 250 ms per second; higher is better)',
    [
      ...provenance(r),
      `A 2 ms CPU handler; median of ${rounds(r.rounds)} of ${r.seconds} s; capacity measured each round; shed() options ${JSON.stringify(r.shedOptions ?? {})}; load average at the end ${(r.machine?.loadavg ?? []).join(' ')}.`,
    ],
    [...body, ...key.out],
  );
}

// ---------------------------------------------------------------- main

const CHARTS = [
  ['http', httpChart],
  ['core', coreChart],
  ['outage', outageChart],
  ['hotkey', hotkeyChart],
  ['overload', overloadChart],
];
mkdirSync(OUT, { recursive: true });
let drawn = 0;
for (const [bench, draw] of CHARTS) {
  const file = join(RESULTS, `${bench}.json`);
  if (!existsSync(file)) {
    console.log(`${bench}: no ${relative(process.cwd(), file)} (run bench/${bench}.mjs first): chart not drawn`);
    continue;
  }
  const svg = draw(JSON.parse(readFileSync(file, 'utf8')));
  const out = join(OUT, `${bench}.svg`);
  writeFileSync(out, svg);
  console.log(`${bench}: ${relative(process.cwd(), out)}`);
  drawn++;
}
if (drawn === 0) {
  console.error(`no results in ${RESULTS}: run the benchmarks first (see bench/RESULTS.md)`);
  process.exit(1);
}
