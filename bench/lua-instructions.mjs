// Redis instructions per decision of the shipped script, counted by valgrind's callgrind: a count,
// not a time, so it repeats to within about 1% whatever else the machine does, and compares script
// variants that wall-clock benchmarks on a shared 2-core VM cannot tell apart. redis-server runs under
// callgrind on a free port; after a warm-up (every key written) the counters are zeroed, BATCHES script
// calls of BATCH consume decisions each go over 10,000 keys, and the instructions redis-server executed
// in that span (the whole server: networking, the script, the commands) are divided by the decisions.
// Usage: pnpm --filter @sluice/core build && node bench/lua-instructions.mjs
//   [--algorithm tb|fw|sw|sl] [--limit 1000] [--window 3600000] [--batch 512] [--batches 200]
// Needs valgrind (callgrind_control, callgrind_annotate) on PATH.
import { execFileSync, spawn } from 'node:child_process';
import { readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { DECIDE_SCRIPT } from '../packages/core/dist/esm/lua.generated.js';
import { freePort } from '../test/support/redis-harness.mjs';
import { arg } from './args.mjs';

const ALGORITHM = arg('algorithm', 'tb');
const LIMIT = arg('limit', '1000');
const WINDOW = arg('window', '3600000');
const BATCH = Number(arg('batch', 512));
const BATCHES = Number(arg('batches', 200));
const KEYS = 10_000;

const port = await freePort();
const out = join(tmpdir(), `sluice-callgrind-${port}`);
const proc = spawn(
  'valgrind',
  ['--tool=callgrind', `--callgrind-out-file=${out}`, 'redis-server', '--port', String(port), '--save', '', '--appendonly', 'no'],
  { stdio: 'ignore' },
);
const client = new Redis({ port, lazyConnect: true, retryStrategy: () => null });
client.on('error', () => {});
try {
  for (let i = 0; ; i++) {
    try {
      await client.connect();
      break;
    } catch (error) {
      if (i === 100) throw error;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  const sha = await client.script('LOAD', DECIDE_SCRIPT);
  let n = 0;
  // One run of BATCH alike decisions (see lua/decide.lua): count, op, cost, one policy, spec 1.
  const call = () => {
    const keys = Array.from({ length: BATCH }, () => `b:{k${n++ % KEYS}}:p`);
    return client.evalsha(sha, BATCH, ...keys, '', '1', ALGORITHM, LIMIT, WINDOW, LIMIT, String(BATCH), 'c', '1', '1', '1');
  };
  while (n < KEYS) await call();
  execFileSync('callgrind_control', ['-z', String(proc.pid)], { stdio: 'ignore' });
  for (let i = 0; i < BATCHES; i++) await call();
  execFileSync('callgrind_control', ['-d', String(proc.pid)], { stdio: 'ignore' });
  const dump = readdirSync(tmpdir())
    .filter((f) => f.startsWith(`sluice-callgrind-${port}.`))
    .sort()
    .at(-1);
  const annotated = execFileSync('callgrind_annotate', [join(tmpdir(), dump)], { encoding: 'utf8', maxBuffer: 1e8 });
  const total = Number(/([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS/.exec(annotated)[1].replace(/,/g, ''));
  console.log(
    `${ALGORITHM} ${LIMIT}/${WINDOW}ms, ${BATCHES} calls of ${BATCH}: ${Math.round(total / (BATCHES * BATCH)).toLocaleString('en-US')} instructions per decision`,
  );
  // One file per algorithm: each is its own run (--algorithm picks one).
  const { writeResults } = await import('./results.mjs');
  writeResults(`lua-instructions-${ALGORITHM}`, {
    settings: { algorithm: ALGORITHM, limit: Number(LIMIT), windowMs: Number(WINDOW), batch: BATCH, batches: BATCHES, keys: KEYS },
    instructions: total,
    instructionsPerDecision: total / (BATCHES * BATCH),
  });
} finally {
  client.disconnect();
  proc.kill('SIGKILL');
  for (const f of readdirSync(tmpdir())) if (f.startsWith(`sluice-callgrind-${port}`)) rmSync(join(tmpdir(), f), { force: true });
}
