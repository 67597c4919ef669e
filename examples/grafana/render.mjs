// Renders dashboard.json's panels as an SVG (dashboard.svg) from real data: it starts a redis-server on a free
// port and examples/express/server.mjs on it with SLUICE_METRICS=1, sends it traffic, kills Redis for a while
// and restarts it, scrapes GET /metrics every second, and draws each panel from the scrapes. Grafana does not
// run here: each panel's PromQL (in dashboard.json) is evaluated by the small functions below, over the same
// rate window. Needs redis-server on PATH and `pnpm build`. Usage: node examples/grafana/render.mjs [seconds]
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

const SECONDS = Number(process.argv[2] ?? 60);
const KILL_AT = Math.round(SECONDS * 0.35); // Redis is killed here ...
const RESTART_AT = Math.round(SECONDS * 0.6); // ... and started again, empty, here
const RATE_WINDOW = 5; // s, the panels' $__rate_interval
const WORKERS = 6;
const PAUSE_MS = 40; // per worker between requests: about 150 requests/s in all, light on a shared machine
const here = (path) => fileURLToPath(new URL(path, import.meta.url));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function freePort() {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function untilPing(port) {
  for (let i = 0; i < 200; i++) {
    const ok = await new Promise((resolve) => {
      const c = createConnection({ port, host: '127.0.0.1' }, () => c.write('PING\r\n'));
      c.on('data', (d) => resolve(d.toString().startsWith('+PONG')) || c.destroy());
      c.on('error', () => resolve(false));
    });
    if (ok) return;
    await sleep(25);
  }
  throw new Error(`redis-server on ${port} did not answer`);
}

const children = new Set();
function start(command, args, options) {
  const child = spawn(command, args, options);
  children.add(child);
  child.on('exit', () => children.delete(child));
  return child;
}
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});

const redisPort = await freePort();
const startRedis = async () => {
  const r = start('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  });
  await untilPing(redisPort);
  return r;
};
let redis = await startRedis();

const app = start(process.execPath, [here('../express/server.mjs')], {
  env: { ...process.env, REDIS_URL: `redis://127.0.0.1:${redisPort}`, SLUICE_METRICS: '1', TRUST_PROXY: '1', PORT: '0' },
  stdio: ['ignore', 'pipe', 'inherit'],
});
const base = await new Promise((resolve, reject) => {
  let out = '';
  app.stdout.on('data', (d) => {
    out += d;
    const m = /listening on (http:\/\/localhost:\d+)/.exec(out);
    if (m) resolve(m[1].replace('localhost', '127.0.0.1'));
  });
  app.on('exit', (code) => reject(new Error(`the example exited (${code})`)));
});

// Traffic: many light clients on GET / (allowed), a few heavy ones (denied, then by the deny cache), and
// logins from a small pool (5 per 15 minutes each: soon denied).
const ip = (n) => `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
function nextRequest() {
  const r = Math.random();
  if (r < 0.65) return { method: 'GET', path: '/', from: ip(1000 + Math.floor(Math.random() * 3000)) };
  if (r < 0.85) return { method: 'GET', path: '/', from: ip(1 + Math.floor(Math.random() * 4)) };
  return { method: 'POST', path: '/login', from: ip(500 + Math.floor(Math.random() * 30)) };
}
let running = true;
const statuses = new Map();
const worker = async () => {
  while (running) {
    const { method, path, from } = nextRequest();
    try {
      const res = await fetch(`${base}${path}`, { method, headers: { 'x-forwarded-for': from } });
      await res.arrayBuffer();
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    } catch {
      statuses.set('error', (statuses.get('error') ?? 0) + 1);
    }
    await sleep(PAUSE_MS);
  }
};
const workers = Array.from({ length: WORKERS }, worker);

/** One scrape: series (name and sorted labels) to value. */
function parseExposition(text) {
  const samples = new Map();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels = {};
    for (const [, k, v] of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[k] = v;
    samples.set(JSON.stringify([m[1], labels]), Number(m[3]));
  }
  return samples;
}

const scrapes = [];
const t0 = Date.now();
for (let s = 0; s <= SECONDS; s++) {
  await sleep(Math.max(0, t0 + s * 1000 - Date.now()));
  if (s === KILL_AT) redis.kill('SIGKILL');
  if (s === RESTART_AT) redis = await startRedis();
  const text = await (await fetch(`${base}/metrics`)).text();
  scrapes.push({ t: (Date.now() - t0) / 1000, samples: parseExposition(text) });
}
running = false;
await Promise.all(workers);
app.kill('SIGTERM');
redis.kill('SIGKILL');

// --- The panels' queries, over the scrapes ---------------------------------------------------------------

/** Every sample of `name` in a scrape whose labels pass `where`, as [labels, value]. */
function select(scrape, name, where = () => true) {
  const out = [];
  for (const [key, value] of scrape.samples) {
    const [n, labels] = JSON.parse(key);
    if (n === name && where(labels)) out.push([labels, value]);
  }
  return out;
}

/** sum by (by) (rate(name{where}[RATE_WINDOW])) at each scrape from the window on: Map legend -> points. */
function sumRate(name, by, where) {
  const series = new Map();
  for (let i = RATE_WINDOW; i < scrapes.length; i++) {
    const [a, b] = [scrapes[i - RATE_WINDOW], scrapes[i]];
    const before = new Map(select(a, name, where).map(([l, v]) => [JSON.stringify(l), v]));
    const sums = new Map();
    for (const [labels, v] of select(b, name, where)) {
      const group = by.map((k) => labels[k]).join(' ');
      sums.set(group, (sums.get(group) ?? 0) + (v - (before.get(JSON.stringify(labels)) ?? 0)) / (b.t - a.t));
    }
    for (const [group, v] of sums) {
      if (!series.has(group)) series.set(group, []);
      series.get(group).push([b.t, v]);
    }
  }
  return series;
}

/** histogram_quantile(q, sum by (le) (rate(name_bucket[RATE_WINDOW]))), linear within a bucket as Prometheus does. */
function quantile(q, name) {
  const points = [];
  for (let i = RATE_WINDOW; i < scrapes.length; i++) {
    const [a, b] = [scrapes[i - RATE_WINDOW], scrapes[i]];
    const byLe = new Map();
    for (const [scrape, sign] of [
      [b, 1],
      [a, -1],
    ]) {
      for (const [labels, v] of select(scrape, `${name}_bucket`)) byLe.set(labels.le, (byLe.get(labels.le) ?? 0) + sign * v);
    }
    const buckets = [...byLe].map(([le, c]) => [le === '+Inf' ? Infinity : Number(le), c]).sort((x, y) => x[0] - y[0]);
    const total = buckets.at(-1)?.[1] ?? 0;
    if (total <= 0) continue; // no store decisions in the window (Redis down): no point, as in Prometheus
    const rank = q * total;
    let [lower, below] = [0, 0];
    for (const [le, count] of buckets) {
      if (count >= rank) {
        const v = le === Infinity ? lower : lower + ((le - lower) * (rank - below)) / Math.max(count - below, 1e-12);
        points.push([b.t, v]);
        break;
      }
      [lower, below] = [le, count];
    }
  }
  return points;
}

const all = () => true;
const outcome = sumRate('sluice_decisions_total', ['outcome'], all);
const source = sumRate('sluice_decisions_total', ['source'], all);
const deniedByPolicy = sumRate('sluice_decisions_total', ['prefix', 'policy'], (l) => l.outcome === 'denied');
const totalByPrefix = sumRate('sluice_decisions_total', ['prefix'], all);
const deniedShare = new Map(
  [...deniedByPolicy].map(([group, points]) => {
    const total = new Map(totalByPrefix.get(group.split(' ')[0]) ?? []);
    return [group, points.map(([t, v]) => [t, (total.get(t) ?? 0) > 0 ? v / total.get(t) : 0])];
  }),
);
const latency = new Map([
  ['p50', quantile(0.5, 'sluice_store_duration_seconds')],
  ['p99', quantile(0.99, 'sluice_store_duration_seconds')],
]);
const breaker = new Map();
for (const s of scrapes) {
  for (const [labels, v] of select(s, 'sluice_breaker_open')) {
    if (!breaker.has(labels.prefix)) breaker.set(labels.prefix, []);
    breaker.get(labels.prefix).push([s.t, v]);
  }
}
const data = { 1: outcome, 2: deniedShare, 3: source, 4: latency, 5: breaker };

// --- SVG ---------------------------------------------------------------------------------------------------

const dashboard = JSON.parse(readFileSync(here('dashboard.json'), 'utf8'));
const COL = 50;
const ROW = 32;
const WIDTH = 24 * COL;
const height = Math.max(...dashboard.panels.map((p) => p.gridPos.y + p.gridPos.h)) * ROW + 84;
const COLORS = ['#73bf69', '#f2495c', '#5794f2', '#ff9830', '#b877d9', '#fade2a', '#8ab8ff'];
const SOURCE_COLORS = { store: '#5794f2', 'deny-cache': '#b877d9', prefilter: '#fade2a', fallback: '#ff9830', 'fail-open': '#f2495c' };
const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;');
const tMax = scrapes.at(-1).t;

function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  return ([1, 2, 2.5, 5, 10].find((m) => m * p >= v) ?? 10) * p;
}
function format(v, unit) {
  if (unit === 'percentunit') return `${Math.round(v * 100)}%`;
  if (unit === 's') return v === 0 ? '0' : v < 0.001 ? `${Math.round(v * 1e6)} µs` : `${+(v * 1000).toFixed(1)} ms`;
  if (unit === 'reqps') return `${+v.toFixed(v < 10 ? 1 : 0)}`;
  return String(v);
}

function panel(p) {
  const { x, y, w, h } = p.gridPos;
  const [px, py, pw, ph] = [x * COL + 6, y * ROW + 6, w * COL - 12, h * ROW - 12];
  const unit = p.fieldConfig?.defaults?.unit;
  const series = [...(data[p.id] ?? new Map())].sort(([a], [b]) => a.localeCompare(b));
  const out = [`<rect x="${px}" y="${py}" width="${pw}" height="${ph}" rx="3" fill="#181b1f" stroke="#2c3235"/>`];
  out.push(`<text x="${px + 10}" y="${py + 20}" fill="#d8d9da" font-size="14" font-weight="600">${esc(p.title)}</text>`);
  const [ax, ay, aw, ah] = [px + 56, py + 34, pw - 70, ph - 78];
  const xAt = (t) => ax + (t / tMax) * aw;
  for (let s = 0; s <= tMax; s += 10) {
    out.push(`<line x1="${xAt(s)}" y1="${ay + ah}" x2="${xAt(s)}" y2="${ay + ah + 4}" stroke="#8e8e8e"/>`);
    out.push(`<text x="${xAt(s)}" y="${ay + ah + 16}" fill="#8e8e8e" font-size="10" text-anchor="middle">${s}s</text>`);
  }
  if (p.type === 'state-timeline') {
    const bandH = Math.min(28, ah / Math.max(series.length, 1));
    series.forEach(([name, points], i) => {
      const by = ay + i * (bandH + 4);
      out.push(`<text x="${ax - 6}" y="${by + bandH / 2 + 4}" fill="#d8d9da" font-size="11" text-anchor="end">${esc(name)}</text>`);
      // One rectangle per state, from the scrape that first saw it to the one that saw the next.
      points.forEach(([t, v], j) => {
        if (j > 0 && points[j - 1][1] === v) return;
        const next = points.slice(j).find(([, w]) => w !== v)?.[0] ?? tMax;
        out.push(
          `<rect x="${xAt(t)}" y="${by}" width="${xAt(next) - xAt(t)}" height="${bandH}" fill="${v >= 1 ? '#f2495c' : '#73bf69'}"/>`,
        );
      });
    });
    out.push(
      `<rect x="${ax}" y="${py + ph - 24}" width="10" height="10" fill="#73bf69"/><text x="${ax + 14}" y="${py + ph - 15}" fill="#d8d9da" font-size="11">closed</text>`,
    );
    out.push(
      `<rect x="${ax + 70}" y="${py + ph - 24}" width="10" height="10" fill="#f2495c"/><text x="${ax + 84}" y="${py + ph - 15}" fill="#d8d9da" font-size="11">open</text>`,
    );
    return out.join('\n');
  }
  // The outage, shaded: when this script killed Redis and started it again.
  const [k, r] = [scrapes[KILL_AT]?.t ?? 0, scrapes[RESTART_AT]?.t ?? 0];
  out.push(`<rect x="${xAt(k)}" y="${ay}" width="${xAt(r) - xAt(k)}" height="${ah}" fill="#f2495c" opacity="0.08"/>`);
  const top = unit === 'percentunit' ? 1 : niceMax(Math.max(0, ...series.flatMap(([, pts]) => pts.map(([, v]) => v))));
  const yAt = (v) => ay + ah - (v / top) * ah;
  for (let i = 0; i <= 4; i++) {
    const v = (top * i) / 4;
    out.push(`<line x1="${ax}" y1="${yAt(v)}" x2="${ax + aw}" y2="${yAt(v)}" stroke="#2c3235"/>`);
    out.push(`<text x="${ax - 6}" y="${yAt(v) + 3}" fill="#8e8e8e" font-size="10" text-anchor="end">${format(v, unit)}</text>`);
  }
  let lx = ax;
  series.forEach(([name, points], i) => {
    const color = SOURCE_COLORS[name] && p.id === 3 ? SOURCE_COLORS[name] : name === 'denied' ? '#f2495c' : COLORS[i % COLORS.length];
    // Gaps (no point in a window) break the line, as Grafana draws them.
    const runs = [];
    let run = [];
    points.forEach(([t, v], j) => {
      if (j > 0 && t - points[j - 1][0] > 1.5) {
        runs.push(run);
        run = [];
      }
      run.push(`${xAt(t).toFixed(1)},${yAt(v).toFixed(1)}`);
    });
    runs.push(run);
    for (const r of runs) out.push(`<polyline fill="none" stroke="${color}" stroke-width="2" points="${r.join(' ')}"/>`);
    out.push(`<rect x="${lx}" y="${py + ph - 24}" width="14" height="4" fill="${color}"/>`);
    out.push(`<text x="${lx + 18}" y="${py + ph - 19}" fill="#d8d9da" font-size="11">${esc(name)}</text>`);
    lx += 30 + name.length * 6.5;
  });
  return out.join('\n');
}

const answered = [...statuses.values()].reduce((a, b) => a + b, 0);
const caption = [
  `Rendered by examples/grafana/render.mjs from ${scrapes.length} real scrapes of GET /metrics (one a second) of examples/express/server.mjs`,
  `on Redis, ${WORKERS} clients sending ${answered} requests (${Math.round(answered / tMax)}/s); Redis killed at ${KILL_AT} s and restarted at ${RESTART_AT} s (shaded). ` +
    `The panels of dashboard.json, their PromQL evaluated by the script: not a Grafana screenshot.`,
];
const svg = [
  `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="Inter, Helvetica, Arial, sans-serif">`,
  `<title>${esc(dashboard.title)}: ${esc(caption.join(' '))}</title>`,
  `<rect width="100%" height="100%" fill="#111217"/>`,
  ...dashboard.panels.map(panel),
  `<text x="12" y="${height - 54}" fill="#d8d9da" font-size="13" font-weight="600">${esc(dashboard.title)}</text>`,
  ...caption.map((line, i) => `<text x="12" y="${height - 34 + i * 16}" fill="#8e8e8e" font-size="11">${esc(line)}</text>`),
  '</svg>',
].join('\n');
writeFileSync(here('dashboard.svg'), `${svg}\n`);

const totals = {};
for (const [labels, v] of select(scrapes.at(-1), 'sluice_decisions_total')) {
  const k = `${labels.outcome}/${labels.source}`;
  totals[k] = (totals[k] ?? 0) + v;
}
console.log(JSON.stringify({ scrapes: scrapes.length, responses: Object.fromEntries(statuses), decisions: totals }));
console.log(`wrote ${here('dashboard.svg')}`);
