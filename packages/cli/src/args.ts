// The command line, parsed and checked in one place: a bad argument becomes a UsageError (exit 2) whose
// message is one line and never echoes the Redis URL (it may hold a password).
import { isIP } from 'node:net';
import { parseArgs } from 'node:util';
import { ipKey, type PolicyInput } from '@sluice/core';
import { parseRulesCommand, RULE_COMMANDS, RULE_VERBS, RULES_USAGE, type RulesCommand } from './rules-command.js';
import { unknownWord } from './unknown-word.js';

/** A bad argument: the CLI prints its message on one line and exits 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** What to do, resolved. */
export type Command =
  | RulesCommand
  | { command: 'help' }
  | { command: 'version' }
  | {
      command: 'inspect' | 'reset';
      /** KEY as given (grouped with --ip), and --scope: the limiter counts KEY in that scope. */
      client: string;
      scope: string | undefined;
      redisUrl: string;
      prefix: string;
      policies: PolicyInput[];
      /** The limiter's `shards`, when it splits keys. */
      shards: number | undefined;
      /** --redis names a node of a Redis Cluster. */
      cluster: boolean;
      /** --timeout in ms: the deadline of connecting and the command together. */
      timeoutMs: number;
      /** inspect --home: the home store of a limit across regions (--redis is then the region's). */
      homeUrl?: string;
    };

/** The default --timeout: a person waits on this, not a request. */
export const DEFAULT_TIMEOUT_MS = 5000;

/** setTimeout's longest delay: a longer one fires at once. */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

export const USAGE = `Usage: sluice <inspect|reset> KEY --policy POLICY [--policy POLICY ...] [options]
       sluice <override|deny|allow|rules> ... [options]

  inspect KEY   print the Decision of a peek at KEY (charges nothing), as JSON, with the rule in force
  reset KEY     forget KEY's counters in Redis
${RULES_USAGE}

Options:
  --redis URL       redis:// or rediss:// URL of the store (default: $REDIS_URL)
  --cluster         the URL is one node of a Redis Cluster (ioredis finds the others)
  --prefix NAME     the limiter's prefix (default 'sluice')
  --policy POLICY   the limiter's policy, repeated for several, exactly as the app gives them:
                    '100/1m', or JSON such as '{"limit":5,"window":"15m","algorithm":"sliding-window"}'
  --scope SCOPE     an adapter's counter: the route ('POST /login'; Fastify 'METHOD url'), a \`scope\`
                    option's name, '*' for app-level Express and Koa, '* ' + mount path
                    under an Express mount ('* /api')
  --shards N        the limiter's shards, when it splits hot keys (default 1)
  --home URL        inspect a limit across regions: the key's global bucket at this home store and each
                    region's lease (--redis is then a region's store, whose own lease is shown too)
  --ip              KEY is a client IP: group it as the adapters' default key does (IPv6 by /56)
  --timeout TIME    give up after TIME, connecting and the command together: '5s', '500ms', or ms
                    (default 5s); then exit 1
  -h, --help        this text
  -v, --version     the version of sluice

Exit status: 0 done, 1 the store failed or gave no answer within --timeout, 2 a bad argument.`;

function policyOf(text: string): PolicyInput {
  if (!text.trimStart().startsWith('{')) return text as PolicyInput;
  try {
    return JSON.parse(text) as PolicyInput;
  } catch (error) {
    throw new UsageError(`--policy is not valid JSON: ${(error as Error).message}`);
  }
}

/** The same durations as the limiter's options: ms, or '500ms', '5s', '1m', '1h', '1d' (a bare unit is one of it). */
const DURATION = /^(\d+(?:\.\d+)?)?(ms|s|m|h|d)$/;
const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

function timeoutOf(text: string | undefined): number {
  if (text === undefined) return DEFAULT_TIMEOUT_MS;
  const trimmed = text.trim();
  const m = DURATION.exec(trimmed);
  const ms = /^\d+(?:\.\d+)?$/.test(trimmed)
    ? Number(trimmed)
    : m
      ? (m[1] === undefined ? 1 : Number(m[1])) * UNIT_MS[m[2] as keyof typeof UNIT_MS]
      : Number.NaN;
  if (!(ms > 0 && ms <= MAX_TIMEOUT_MS)) {
    throw new UsageError(
      `--timeout must be a duration such as '5s', '500ms' or a number of ms, more than 0 and below 25 days, got ${JSON.stringify(text)}`,
    );
  }
  // Whole ms: setTimeout rounds anyway, and the message names the deadline in ms.
  return Math.max(1, Math.round(ms));
}

/** Every command, as typed after `sluice`. */
export const COMMANDS: readonly string[] = [
  'inspect',
  'reset',
  ...Object.entries(RULE_VERBS).flatMap(([first, verbs]) => verbs.map((verb) => `${first} ${verb}`)),
];

/** The options, as parseArgs reads them. */
const OPTIONS = {
  redis: { type: 'string' },
  home: { type: 'string' },
  prefix: { type: 'string' },
  policy: { type: 'string', multiple: true },
  scope: { type: 'string' },
  shards: { type: 'string' },
  cluster: { type: 'boolean' },
  ip: { type: 'boolean' },
  timeout: { type: 'string' },
  ttl: { type: 'string' },
  reason: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
} as const;

/** Every option, as typed: '--redis', ... */
export const OPTION_NAMES: readonly string[] = Object.keys(OPTIONS).map((name) => `--${name}`);

/** Parses argv (without node and the script) and the environment. Throws UsageError. */
export function parseCommand(argv: readonly string[], env: Record<string, string | undefined>): Command {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    const { code, message } = error as Error & { code?: string };
    const option = code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? /'(-[^']*)'/.exec(message)?.[1] : undefined;
    throw new UsageError(option === undefined ? (message.split('\n')[0] as string) : unknownWord('option', option, OPTION_NAMES, ''));
  }
  const { values, positionals } = parsed;
  if (values.help) return { command: 'help' };
  if (values.version) return { command: 'version' };
  const [command, key, ...extra] = positionals;
  if ((RULE_COMMANDS as readonly string[]).includes(command as string)) {
    const common = {
      redisUrl: redisUrlOf(values.redis ?? env.REDIS_URL),
      prefix: values.prefix ?? 'sluice',
      cluster: values.cluster === true,
    };
    return parseRulesCommand(
      command as string,
      positionals.slice(1),
      values,
      { ...common, timeoutMs: timeoutOf(values.timeout) },
      policyOf,
      (m) => new UsageError(m),
    );
  }
  const known = ['inspect', 'reset', ...RULE_COMMANDS];
  if (command !== 'inspect' && command !== 'reset') {
    throw new UsageError(command === undefined ? `a command is required: ${known.join(', ')}` : unknownWord('command', command, known));
  }
  if (key === undefined || key === '') throw new UsageError(`${command} needs a KEY`);
  if (extra.length > 0) throw new UsageError(`one KEY only, got ${positionals.length - 1} (quote a key with spaces)`);
  const redisUrl = redisUrlOf(values.redis ?? env.REDIS_URL);
  const timeoutMs = timeoutOf(values.timeout);
  const policies = (values.policy ?? []).map(policyOf);
  if (policies.length === 0) throw new UsageError("--policy is required: the limiter's policy, such as --policy 100/1m");
  const scope = values.scope;
  if (scope === '') throw new UsageError('--scope must be a non-empty string');
  let client = key;
  if (values.ip) {
    if (isIP(key.replace(/%.*$/, '')) === 0)
      throw new UsageError(`--ip needs KEY to be an IPv4 or IPv6 address, got ${JSON.stringify(key)}`);
    client = ipKey(key);
  }
  return {
    command,
    client,
    scope,
    redisUrl,
    prefix: values.prefix ?? 'sluice',
    policies,
    shards: values.shards === undefined ? undefined : Number(values.shards),
    cluster: values.cluster === true,
    timeoutMs,
    ...(values.home === undefined ? {} : { homeUrl: redisUrlOf(values.home, '--home') }),
  };
}

/** --redis (or REDIS_URL): a redis:// or rediss:// URL, never echoed (it may hold a password). */
function redisUrlOf(redisUrl: string | undefined, option = '--redis'): string {
  if (redisUrl === undefined || redisUrl === '')
    throw new UsageError(`${option} URL${option === '--redis' ? ' (or REDIS_URL)' : ''} is required`);
  let protocol: string;
  try {
    protocol = new URL(redisUrl).protocol;
  } catch {
    throw new UsageError(`${option} must be a URL such as redis://127.0.0.1:6379`);
  }
  if (protocol !== 'redis:' && protocol !== 'rediss:')
    throw new UsageError(`${option} must be a redis:// or rediss:// URL, got a ${protocol} URL`);
  return redisUrl;
}

function parse(argv: readonly string[]) {
  return parseArgs({ args: [...argv], allowPositionals: true, strict: true, options: OPTIONS });
}
