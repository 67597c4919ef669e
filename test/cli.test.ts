// The sluice command without a store: how it is run from the repository, what its docs list, and its
// answers to a mistyped command or option. (Against Redis: cli.redis.test.ts, rules.cli.redis.test.ts.)
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { COMMANDS, OPTION_NAMES, parseCommand, USAGE } from '../packages/cli/src/args';

const root = join(__dirname, '..');

describe('sluice', () => {
  it('docs/cli.md and --help show every command and every option the parser knows', () => {
    const docs = readFileSync(join(root, 'docs', 'cli.md'), 'utf8');
    const missing = [
      ...COMMANDS.filter((command) => !docs.includes(`sluice ${command}`)).map((command) => `docs: sluice ${command}`),
      ...OPTION_NAMES.filter((option) => !docs.includes(`\`${option}`)).map((option) => `docs: ${option}`),
      ...COMMANDS.filter((command) => !USAGE.includes(command)).map((command) => `--help: ${command}`),
      ...OPTION_NAMES.filter((option) => !USAGE.includes(option)).map((option) => `--help: ${option}`),
    ];
    expect(missing).toEqual([]);
  });

  it.each([
    [['inpsect', 'k', '--policy', '1/s'], 'unknown command "inpsect": did you mean inspect?'],
    [['inspect', 'k', '--polcy', '1/s'], 'unknown option "--polcy": did you mean --policy?'],
    [['override', 'st', 'k', '1/s'], 'unknown override command "st": did you mean set?'],
    [['rules', 'lst'], 'unknown rules command "lst": did you mean list?'],
    [['rules', 'remove', 'dney', 'k'], 'unknown rules remove KIND "dney": did you mean deny?'],
    [['frob', 'k'], 'unknown command "frob": inspect, reset, override, deny, allow, rules'],
  ])('a mistyped command or option, %j, is answered with the nearest one', (argv, message) => {
    expect(() => parseCommand(argv, { REDIS_URL: 'redis://127.0.0.1:6379' })).toThrow(message);
  });

  it('runs from the repository root with `pnpm exec sluice` (after pnpm build)', async () => {
    const { code, stdout } = await new Promise<{ code: number; stdout: string }>((done) => {
      execFile('pnpm', ['exec', 'sluice', '--help'], { cwd: root, timeout: 60_000 }, (error, out) =>
        done({ code: error ? Number(error.code ?? 1) : 0, stdout: out }),
      );
    });
    expect(code).toBe(0);
    expect(stdout).toMatch(/^Usage: sluice <inspect\|reset> KEY/);
  }, 90_000);
});
