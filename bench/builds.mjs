// bench/core.mjs --builds: the core benchmark once per round for each build, each run in a process and
// on a redis-server of its own (a build's JIT and keys never meet another's), rounds interleaved so that
// the machine's load falls on every build alike. Within each run, at 512 in flight: the token bucket's
// decisions/s over the faster of rate-limiter-flexible and rate-limit-redis (target: at least 3x); and
// CPU per decision, this process' and the redis-server's, the token bucket's and the leaner library's,
// and the library's over the token bucket's: the same lead in decisions per CPU second, which a loaded
// machine moves less than decisions/s. Prints each build's median (min–max) over rounds.
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stats } from './stats.mjs';

const CORE = fileURLToPath(new URL('./core.mjs', import.meta.url));
const RIVALS = ['rate-limiter-flexible', 'rate-limit-redis'];

/** A checkout's commit, short. */
export const commitOf = (dir) => execFileSync('git', ['-C', dir, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();

export async function compareBuilds(dirs, { rounds, seconds }) {
  const builds = dirs.map((d) => ({ dir: resolve(d), commit: commitOf(resolve(d)), runs: [] }));
  for (let r = 0; r < rounds; r++) {
    for (const b of builds) {
      const args = [CORE, '--build', b.dir, '--rounds', '1', '--seconds', String(seconds)];
      const out = execFileSync(process.execPath, args, { encoding: 'utf8', maxBuffer: 1 << 24 })
        .trim()
        .split('\n');
      b.runs.push(JSON.parse(out.at(-1)));
    }
  }
  const cell = (xs, digits = 2) => {
    const s = stats(xs);
    return `${s.median.toFixed(digits)} (${s.min.toFixed(digits)}–${s.max.toFixed(digits)})`;
  };
  const k = (n) => n / 1000;
  console.log(
    '\n| build | token bucket @512, k decisions/s | faster library | token bucket / faster library, per run (target ≥ 3) | CPU µs per decision, Node + Redis: token bucket | leaner library | library / token bucket, per run |',
  );
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
  const figures = [];
  const total = (x) => x.cpuUs + x.serverCpuUs;
  for (const b of builds) {
    const tb = b.runs.map((run) => run['sluice token-bucket']);
    const rival = b.runs.map((run) => Math.max(...RIVALS.map((name) => run[name].rate)));
    const over = tb.map((t, i) => t.rate / rival[i]);
    const tbCpu = tb.map(total);
    const rivalCpu = b.runs.map((run) => Math.min(...RIVALS.map((name) => total(run[name]))));
    const cpuOver = rivalCpu.map((x, i) => x / tbCpu[i]);
    const rates = [
      cell(
        tb.map((t) => k(t.rate)),
        0,
      ),
      cell(rival.map(k), 0),
      `${cell(over)}x`,
    ];
    console.log(`| ${b.dir} (${b.commit}) | ${rates.join(' | ')} | ${cell(tbCpu)} | ${cell(rivalCpu)} | ${cell(cpuOver)}x |`);
    figures.push({
      build: b.dir,
      commit: b.commit,
      runs: b.runs,
      tokenBucketOverFasterLibrary: { ...stats(over), rounds: over },
      leanerLibraryCpuOverTokenBucket: { ...stats(cpuOver), rounds: cpuOver },
    });
  }
  const { writeResults } = await import('./results.mjs');
  writeResults('core-builds', { settings: { seconds, rounds, inflight: 512 }, builds: figures });
}
