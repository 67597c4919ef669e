// bench/RESULTS.md's generated tables, from the benchmarks' JSON (bench/results/*.json, bench/results.mjs).
// In RESULTS.md each sits between `<!-- report:NAME -->` and `<!-- /report:NAME -->`; a table opens with its
// run's stamp, a line that starts with "Run of " (date, commit, load average, command): the one line of
// the page that may carry a date (test/history-free.test.ts). `--write` replaces the blocks whose JSON is
// there and leaves the others as they are (figures copied from a run's printout, or measured on another
// machine: bench/results/ is not committed). Without it, the tables are printed.
// Usage: node bench/report.mjs [--results bench/results] [--write]
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { arg } from './args.mjs';
import { RESULTS_DIR } from './results.mjs';
import { stats } from './stats.mjs';

const RESULTS = resolve(arg('results', RESULTS_DIR));
const PAGE = fileURLToPath(new URL('./RESULTS.md', import.meta.url));

const read = (name) => {
  const file = join(RESULTS, `${name}.json`);
  return existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : undefined;
};
const num = (x, digits = 0) =>
  x === undefined || x === null ? '' : x.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const spread = (s, digits = 0) => (s ? `${num(s.median, digits)} (${num(s.min, digits)}–${num(s.max, digits)})` : '');
const pct = (x) => `${num(x * 100, 1)}%`;
const table = (head, rows) => [
  `| ${head.join(' | ')} |`,
  `| ${head.map(() => '---').join(' | ')} |`,
  ...rows.map((r) => `| ${r.join(' | ')} |`),
];

function stamp(r) {
  const changed = r.uncommittedChanges ? ` (+${r.uncommittedChanges} files changed under packages/ and lua/)` : '';
  const load = r.machine?.loadavg ? `, load average ${r.machine.loadavg[0]} on ${r.machine.cpus} CPUs` : '';
  return `Run of ${String(r.date).slice(0, 16).replace('T', ' ')} UTC, commit ${r.commit}${changed}${load}: \`${r.command}\``;
}

/** Each report: the JSON files it reads, and the lines of its table. */
const REPORTS = {
  core: () => {
    const r = read('core');
    if (!r) return undefined;
    const rows = r.contenders.map((c) => [
      c.name,
      num(c.nodeCpuUsPerDecision?.median, 2),
      num(c.scriptUsPerDecision, 2),
      ...[1, 64, 512].map((n) => spread(c.decisionsPerSecond[n])),
    ]);
    const ratio = r.tokenBucketOverFasterLibrary?.[512];
    return [
      stamp(r),
      '',
      ...table(['contender', 'Node CPU µs per decision @512', 'script µs', 'decisions/s @1', '@64', '@512'], rows),
      '',
      `Token bucket over the faster library at 512 in flight, per round: ${spread(ratio, 2)} (target ≥ 3).`,
    ];
  },
  'core-builds': () => {
    const r = read('core-builds');
    if (!r) return undefined;
    const k = (s) => s && { median: s.median / 1000, min: s.min / 1000, max: s.max / 1000 };
    const rows = r.builds.map((b) => {
      const tb = stats(b.runs.map((run) => run['sluice token-bucket'].rate));
      const cpu = stats(b.runs.map((run) => run['sluice token-bucket'].cpuUs + run['sluice token-bucket'].serverCpuUs));
      return [
        b.commit,
        spread(k(tb)),
        spread(b.tokenBucketOverFasterLibrary, 2),
        spread(cpu, 2),
        spread(b.leanerLibraryCpuOverTokenBucket, 2),
      ];
    });
    const head = [
      'build',
      'token bucket @512, k decisions/s',
      'over the faster library, per run (target ≥ 3)',
      'CPU µs per decision, Node + Redis',
      'leaner library over it, per run',
    ];
    return [stamp(r), '', ...table(head, rows)];
  },
  limiters: () => {
    const r = read('limiters');
    if (!r) return undefined;
    const rows = r.builds.map((b) => [
      b.commit,
      ...['one', 'tenInTurn', 'tenMixed'].map((k) => spread(b.cpuUsPerDecision[k], 2)),
      ...['tenInTurn', 'tenMixed'].map((k) => spread(b.overOne[k], 2)),
    ]);
    const head = [
      'build',
      'Node CPU µs per decision: 1 limiter',
      '10 in turn',
      '10 mixed',
      '10 in turn / 1 (target ≤ 1.10)',
      '10 mixed / 1',
    ];
    return [stamp(r), '', ...table(head, rows)];
  },
  http: () => {
    const r = read('http');
    if (!r) return undefined;
    const rows = Object.entries(r.frameworks).flatMap(([framework, cs]) =>
      cs
        .filter((c) => c.contender !== 'bare')
        .map((c) => [
          framework,
          c.label,
          spread(c.requestsPerSecond),
          spread(c.ratioToBare, 2),
          spread(c.cpuAddedUsPerRequest, 1),
          num(c.redisCpuUsPerRequest, 1),
          num(c.scriptsPerRequest, 3),
        ]),
    );
    const head = ['framework', 'contender', 'req/s', 'ratio to bare', 'CPU µs added per request', 'Redis CPU µs', 'scripts per request'];
    return [stamp(r), '', ...table(head, rows), '', ...(r.targets ?? []).map((t) => `- ${t}`)];
  },
  outage: () => {
    const r = read('outage');
    if (!r) return undefined;
    const cap = r.settings?.cap ?? Number.POSITIVE_INFINITY;
    const ms = (x) => (x >= cap ? `≥${cap}` : num(x, x < 10 ? 1 : 0));
    const rows = r.phases.map((p) => [p.contender, p.phase, num(p.requests), num(p.rps), ms(p.p50), ms(p.p99), ms(p.max)]);
    return [stamp(r), '', ...table(['contender', 'Redis', 'requests', 'req/s', 'p50 ms', 'p99 ms', 'max ms'], rows)];
  },
  hotkey: () => {
    const r = read('hotkey');
    if (!r) return undefined;
    const rows = r.floods.flatMap((f) =>
      f.modes.map((m) => [f.flood, f.algorithm, m.mode, spread(m.requestsPerSecond), spread(m.decisionsSentPerRequest, 3)]),
    );
    return [stamp(r), '', ...table(['flood', 'algorithm', 'mode', 'requests/s', 'decisions sent to Redis per request'], rows)];
  },
  overload: () => {
    const r = read('overload');
    if (!r) return undefined;
    // Ratios per round (own goodput at 1x, the unprotected server's at the same load), when the run kept them.
    const ratio = (c, load) => c[load].ownRatio ?? { median: c[load].goodput.median / c[1].goodput.median };
    const rows = Object.entries(r.frameworks).flatMap(([framework, f]) =>
      Object.entries(f.contenders).map(([contender, c], i) => {
        const shed = c[4].shed.median || c[4].lost.median ? `${pct(c[4].shed.median)} shed, ${pct(c[4].lost.median)} lost` : '0%';
        return [
          i
            ? ''
            : `${framework} (${f.capacities ? spread({ median: f.capacity, min: Math.min(...f.capacities), max: Math.max(...f.capacities) }) : num(f.capacity)}/s)`,
          // sluice's shedding in front of the app on node:http (bench/overload.mjs --mount front), when the run says so.
          contender === 'sluice' && r.mount === 'front' ? 'sluice (in front of the app)' : contender,
          spread(c[1].goodput),
          spread(c[2].goodput),
          spread(c[4].goodput),
          `${spread(ratio(c, 2), 2)}; ${spread(ratio(c, 4), 2)}`,
          c[4].noneRatio ? spread(c[4].noneRatio, 1) : '',
          `${num(c[2].p99.median)}, ${num(c[4].p99.median)}`,
          shed,
          c.critical
            ? spread(
                { median: c.critical.critical.median * 100, min: c.critical.critical.min * 100, max: c.critical.critical.max * 100 },
                1,
              )
            : '',
          c[4].serverCpu ? `${num(c[4].serverCpu.median, 2)}, ${num(c[4].clientCpu.median, 2)}` : '',
        ];
      }),
    );
    const head = [
      'framework (capacity)',
      'contender',
      'goodput 1x',
      '2x',
      '4x',
      '2x / own 1x; 4x / own 1x',
      '4x / none',
      'p99 ms of 2xx at 2x, 4x',
    ];
    const tail = ['at 4x', `4x, 20% critical: % critical 2xx in ${r.goodMs} ms`, 'cores used at 4x: server, load generator'];
    return [stamp(r), '', ...table([...head, ...tail], rows)];
  },
  regions: () => {
    const r = read('regions');
    if (!r) return undefined;
    const rows = Object.entries(r.summary).map(([name, c]) => [
      name,
      `${spread(c.over1)}; ${spread(c.over5)}; ${spread(c.over10)}`,
      spread(c.use, 2),
      spread(c.p99Ms, 1),
      c.following ? c.following.join(', ') : '',
    ]);
    const p = r.homePaused;
    return [
      stamp(r),
      '',
      ...table(
        [
          'contender',
          'over-admission, 1 s; 5 s; 10 s windows',
          'use',
          'p99 ms of a decision',
          'lease intervals to follow a swap, per round',
        ],
        rows,
      ),
      '',
      `Home paused: ${num(p.decisions)} decisions while it was stopped, the slowest ${num(p.slowestMs, 1)} ms (p99 ${num(p.p99Ms, 1)}), ` +
        `${num(p.admittedPerSecond, 1)} admitted/s (the rate: ${num(r.policyRate ?? 20, 1)}/s), over-admission ${p.over1}; ${p.over5}; ${p.over10}.`,
    ];
  },
  'lua-instructions': () => {
    const files = existsSync(RESULTS) ? readdirSync(RESULTS).filter((f) => /^lua-instructions-.*\.json$/.test(f)) : [];
    if (!files.length) return undefined;
    const rs = files.sort().map((f) => JSON.parse(readFileSync(join(RESULTS, f), 'utf8')));
    const per = (r) => (/-(pair|settle)$/.test(r.bench) ? 'pair' : 'decision');
    // One stamp for the runs (their dates and commits), then a row per run.
    const dates = rs.map((r) => String(r.date).slice(0, 16).replace('T', ' ')).sort();
    const [first, last] = [dates[0], dates.at(-1)];
    const span = first === last ? first : `${first} to ${last.slice(0, 10) === first.slice(0, 10) ? last.slice(11) : last}`;
    const commits = [...new Set(rs.map((r) => `${r.commit}${r.uncommittedChanges ? ` (+${r.uncommittedChanges})` : ''}`))];
    const rows = rs.map((r) => [
      r.bench.replace('lua-instructions-', ''),
      num(r.settings.batch),
      `${num(r.instructionsPerDecision)} per ${per(r)}`,
      `\`${r.command}\``,
    ]);
    return [
      `Run of ${span} UTC, commit ${commits.join(', ')}: the commands below`,
      '',
      ...table(['run', 'per call', 'instructions', 'command'], rows),
    ];
  },
};

const made = Object.entries(REPORTS).map(([name, make]) => [name, make()]);
if (!process.argv.includes('--write')) {
  for (const [name, lines] of made)
    console.log(`<!-- report:${name} -->\n${lines ? lines.join('\n') : `(no ${name} JSON in ${RESULTS})`}\n`);
} else {
  let page = readFileSync(PAGE, 'utf8');
  for (const [name, lines] of made) {
    const block = new RegExp(`(<!-- report:${name} -->\\n)[\\s\\S]*?(<!-- /report:${name} -->)`);
    if (!block.test(page)) console.log(`${name}: no block in RESULTS.md`);
    else if (!lines) console.log(`${name}: no JSON, the block is left as it is`);
    else {
      page = page.replace(block, (_, open, close) => `${open}${lines.join('\n')}\n${close}`);
      console.log(`${name}: written`);
    }
  }
  writeFileSync(PAGE, page);
}
