// The tree describes the code, not its history: no work-item numbers and no dates in any tracked file
// (file names, test names, comments, docs, scripts, bench output). What changed and when lives in git
// history, the changesets (.changeset/) and the changelogs they write (CHANGELOG.md), which this skips.
// Benchmark figures carry the date they were measured: bench/RESULTS.md holds a date on a run's stamp
// line only, the line that opens with "Run of " in each benchmark's section.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(__dirname, '..');
const MONTH = '(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\\.?';

/** What marks a line as history, and where it is looked for. */
const RULES: ReadonlyArray<{ name: string; pattern: RegExp; applies: (file: string) => boolean }> = [
  // A number right after 'issue' (a space or a '#' between them, or neither), or after 'issues #'; not
  // 'issues' and a number, which the GraphQL docs write for a field and its size.
  { name: 'a work-item number', pattern: /\bissue ?#?\d+|\bissues #\d+/i, applies: () => true },
  { name: 'a date', pattern: new RegExp(`\\b\\d{1,2} ${MONTH} 20\\d\\d\\b|\\b${MONTH} \\d{1,2},? 20\\d\\d\\b`), applies: () => true },
  // ISO dates are data in code (calendar tests, clocks); in prose they date a change.
  { name: 'a date', pattern: /\b20\d\d-[01]\d-[0-3]\d\b/, applies: (file) => file.endsWith('.md') },
];

const skipped = (file: string) => file.startsWith('.changeset/') || file.endsWith('CHANGELOG.md') || file === 'pnpm-lock.yaml';

/** A measurement's stamp in bench/RESULTS.md may carry its date. */
const stamp = (file: string, line: string) => file === 'bench/RESULTS.md' && line.startsWith('Run of ');

function findings(files: readonly string[], read: (file: string) => string): string[] {
  const found: string[] = [];
  for (const file of files) {
    if (skipped(file)) continue;
    for (const rule of RULES) if (rule.applies(file) && rule.pattern.test(file)) found.push(`${file}: ${rule.name} in the file's name`);
    const lines = read(file).split('\n');
    lines.forEach((line, i) => {
      for (const rule of RULES) {
        if (rule.applies(file) && rule.pattern.test(line) && !stamp(file, line))
          found.push(`${file}:${i + 1}: ${rule.name}: ${line.trim()}`);
      }
    });
  }
  return found;
}

const tracked = () =>
  execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
    .split('\0')
    .filter(Boolean);

test('no tracked file carries a work-item number or a date', () => {
  const found = findings(tracked(), (file) => readFileSync(join(ROOT, file), 'utf8'));
  expect(found).toEqual([]);
});

test('the check finds numbers and dates, and lets a benchmark run carry its date', () => {
  // The samples are written with a § that is taken out before the check, so that this file passes it.
  const h = (s: string) => s.replaceAll('§', '');
  const text: Record<string, string> = {
    'docs/a.md': ['figures of 5 Dec §2026', 'as measured on 2026-12§-05', 'December 5, §2026'].join('\n'),
    'lua/a.lua': ['-- see issue §#28', '-- Issues §#24 and #25'].join('\n'),
    [h('test/options.issue§24.test.ts')]: "it('pins a behaviour', () => {});",
    'test/b.test.ts': "const clock = Date.parse('2024-03-10T05:00:00Z');",
    'bench/RESULTS.md': ['Run of 2026-12-04 23:39 UTC, commit 00ab3e3: `node bench/core.mjs`', 'a run of 2026-12-04'].join('\n'),
    'CHANGELOG.md': 'fixed in issue §3 on 5 Dec §2026',
  };
  expect(findings(Object.keys(text), (file) => h(text[file] as string))).toEqual(
    [
      'docs/a.md:1: a date: figures of 5 Dec §2026',
      'docs/a.md:2: a date: as measured on 2026-12§-05',
      'docs/a.md:3: a date: December 5, §2026',
      'lua/a.lua:1: a work-item number: -- see issue §#28',
      'lua/a.lua:2: a work-item number: -- Issues §#24 and #25',
      "test/options.issue§24.test.ts: a work-item number in the file's name",
      'bench/RESULTS.md:2: a date: a run of 2026-12-04',
    ].map(h),
  );
});
