// Where a benchmark server's CPU time goes, from a V8 .cpuprofile (node --cpu-prof; bench/http.mjs --profile DIR).
// Per profile: the share of busy time by part (sluice adapter, core http layer, core limiter, redis-store,
// ioredis, framework, Node's net/http, GC...), self (the leaf's part; a native leaf counts for the JS that
// called it) and inclusive (any frame of the stack in that part), then the functions with most self time.
// Usage: node bench/lab/profile-summary.mjs FILE.cpuprofile|DIR [...] [--top 25]
// (a DIR stands for its largest profile: a server's main thread, not its module hooks thread)
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';

// The sluice packages' dist, in packages/ or in the run's snapshot (bench/http.mjs copies it to a temp dir).
const SLUICE = String.raw`(?:packages|sluice-bench-http-[^/]+)\/`;
const sluice = (path) => new RegExp(SLUICE + path);
const PARTS = [
  [sluice(String.raw`(express|fastify|koa)\/dist\/`), (m) => `sluice adapter (@sluice/${m[1]})`],
  [sluice(String.raw`core\/dist\/esm\/http\.js`), () => 'sluice core http layer (http.js)'],
  [sluice(String.raw`core\/dist\/esm\/headers\.js`), () => 'sluice headers (headers.js)'],
  [sluice(String.raw`core\/dist\/esm\/redis-store\.js`), () => 'sluice redis-store (batching, args, reply)'],
  [sluice(String.raw`core\/dist\/esm\/(memory-store\.js|algorithms\/)`), () => 'sluice memory store'],
  [sluice(String.raw`core\/dist\/esm\/`), () => 'sluice core limiter (limiter, decision, keys, tiers)'],
  [
    /node_modules\/(\.pnpm\/[^/]+\/node_modules\/)?(ioredis|redis-parser|denque|standard-as-callback|redis-errors|cluster-key-slot)\//,
    () => 'ioredis',
  ],
  [
    /node_modules\/(\.pnpm\/[^/]+\/node_modules\/)?(rate-limiter-flexible|express-rate-limit|rate-limit-redis|@fastify\/rate-limit|koa-ratelimit|async-ratelimiter)\//,
    (m) => `peer limiter (${m[2]})`,
  ],
  [/node_modules\//, () => 'framework and its deps'],
  [/bench\/http-servers\//, () => 'benchmark app (server.mjs)'],
  [/^node:internal\/(streams|stream_base_commons|net|child_process)/, () => 'node net/streams'],
  [/^node:(internal\/)?(_http|http)/, () => 'node http'],
  [/^node:internal\/(timers|process\/task_queues|async_hooks|process\/promises)/, () => 'node timers/ticks/promises'],
  [/^node:/, () => 'node other'],
];
function partOf(frame) {
  const { url, functionName } = frame;
  if (!url) {
    if (functionName === '(garbage collector)') return 'GC';
    if (functionName === '(idle)') return 'idle';
    if (functionName === '(program)') return 'V8/native (program)';
    return undefined; // a native or builtin: counts for its JS caller
  }
  for (const [re, name] of PARTS) {
    const m = re.exec(url);
    if (m) return name(m);
  }
  return 'other JS';
}

const args = process.argv.slice(2);
const topAt = args.indexOf('--top');
const TOP = topAt >= 0 ? Number(args.splice(topAt, 2)[1]) : 25;
const pct = (x, total) => `${((100 * x) / total).toFixed(1).padStart(5)}%`;

const largest = (dir) =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => join(dir, f))
    .sort((a, b) => statSync(b).size - statSync(a).size)[0];

for (const arg of args) {
  const file = statSync(arg).isDirectory() ? largest(arg) : arg;
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfTime = new Map(); // node id -> µs
  profile.samples.forEach((id, i) => {
    selfTime.set(id, (selfTime.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });

  const self = new Map();
  const inclusive = new Map();
  const fnSelf = new Map();
  let busy = 0;
  let idle = 0;
  for (const [id, us] of selfTime) {
    const leaf = byId.get(id);
    let part = partOf(leaf.callFrame);
    if (part === 'idle') {
      idle += us;
      continue;
    }
    busy += us;
    const seen = new Set();
    for (let at = id; at !== undefined; at = parent.get(at)) {
      const p = partOf(byId.get(at).callFrame);
      if (part === undefined && p !== undefined) part = p;
      if (p !== undefined && p !== 'idle') seen.add(p);
    }
    part ??= 'V8/native (program)';
    self.set(part, (self.get(part) ?? 0) + us);
    for (const p of seen) inclusive.set(p, (inclusive.get(p) ?? 0) + us);
    const { functionName, url, lineNumber } = leaf.callFrame;
    const name = `${functionName || '(anonymous)'} ${url ? `${url.replace(/^.*\/(node_modules|packages|sluice-bench-http-[^/]+)\//, '$1/')}:${lineNumber + 1}` : '(native)'}`;
    fnSelf.set(name, (fnSelf.get(name) ?? 0) + us);
  }
  const wall = idle + busy;
  console.log(
    `\n## ${basename(file)}: busy ${(busy / 1e6).toFixed(2)} s of ${(wall / 1e6).toFixed(2)} s profiled (${pct(busy, wall).trim()})`,
  );
  console.log('\n| part | self, % of busy | inclusive, % of busy |\n| --- | ---: | ---: |');
  for (const [part, us] of [...self].sort((a, b) => b[1] - a[1]))
    console.log(`| ${part} | ${pct(us, busy)} | ${pct(inclusive.get(part) ?? 0, busy)} |`);
  for (const [part, us] of inclusive) if (!self.has(part)) console.log(`| ${part} | | ${pct(us, busy)} |`);
  console.log(`\nTop ${TOP} functions by self time (% of busy):`);
  for (const [name, us] of [...fnSelf].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`  ${pct(us, busy)}  ${name}`);
}
