// A benchmark's figures, also as JSON: bench/results/<bench>.json, stamped with when, on which commit, on
// what machine and by which command line they were taken, so that bench/charts.mjs can draw them and a
// reader can tell one run from another. Each run replaces the file of the last: history is git's.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const RESULTS_DIR = fileURLToPath(new URL('./results/', import.meta.url));

const quiet = (file, args, cwd) => {
  try {
    return execFileSync(file, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
};

/** Where and when: the fields every results file opens with. */
function stamp() {
  // A figure taken on uncommitted code is not the commit's: say how much differs where the code lives.
  const changes = quiet('git', ['status', '--short', '--', 'packages', 'lua'], ROOT);
  return {
    date: new Date().toISOString(),
    commit: quiet('git', ['rev-parse', '--short', 'HEAD'], ROOT) ?? 'unknown',
    uncommittedChanges: changes === undefined ? undefined : changes.split('\n').filter(Boolean).length,
    machine: {
      cpus: cpus().length,
      cpu: cpus()[0]?.model,
      memoryGiB: Math.round(totalmem() / 2 ** 30),
      node: process.version,
      redis: /v=([\d.]+)/.exec(quiet('redis-server', ['--version']) ?? '')?.[1],
      platform: `${process.platform} ${process.arch}`,
      // At the end of the run, so the benchmark's own load is in it; a high figure before a run shows in the next.
      loadavg: loadavg().map((l) => Number(l.toFixed(2))),
    },
    command: ['node', relative(ROOT, process.argv[1]), ...process.argv.slice(2)].join(' '),
  };
}

/**
 * Writes bench/results/<bench>.json: the stamp, then `figures` (the benchmark's own shape; bench/charts.mjs
 * reads it). Returns the file's path.
 */
export function writeResults(bench, figures) {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = join(RESULTS_DIR, `${bench}.json`);
  writeFileSync(file, `${JSON.stringify({ bench, ...stamp(), ...figures }, null, 2)}\n`);
  console.log(`\nFigures also in ${relative(process.cwd(), file)}`);
  return file;
}
