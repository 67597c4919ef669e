import { createLimiter, type Decision, type Limiter, type Rule, type Rules, redisStore, SluiceError } from '@sluice/core';
import { Cluster, Redis } from 'ioredis';
import { type Command, parseCommand, USAGE, UsageError } from './args.js';
import { inspectRegions } from './regions-command.js';
import { openRules, runRules } from './rules-command.js';
import { cliVersion } from './version.cjs';

/** Where main() writes. */
export interface Output {
  out(text: string): void;
  err(text: string): void;
}

class StoreFailure extends Error {
  override name = 'StoreFailure';
}

/**
 * ms that a disconnect waits for the server to close its side before it drops the socket: a server that never
 * answers may never close it either, and the process must not wait on it.
 */
const DISCONNECT_MS = 100;

/** An ioredis client that connects once, when asked, and never queues a command while it is down. */
function connect(url: string, cluster: boolean, timeoutMs: number): Redis | Cluster {
  const once = {
    connectTimeout: timeoutMs,
    disconnectTimeout: DISCONNECT_MS,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  };
  if (!cluster) return new Redis(url, { ...once, lazyConnect: true });
  const u = new URL(url);
  return new Cluster([{ host: u.hostname, port: Number(u.port || 6379) }], {
    lazyConnect: true,
    enableOfflineQueue: false,
    clusterRetryStrategy: () => null,
    slotsRefreshTimeout: timeoutMs,
    redisOptions: {
      ...once,
      username: decodeURIComponent(u.username) || undefined,
      password: decodeURIComponent(u.password) || undefined,
      tls: u.protocol === 'rediss:' ? {} : undefined,
    },
  });
}

/** Where --redis points, for messages: scheme, host and port, never the user or password. */
function where(command: { redisUrl: string; cluster: boolean }): string {
  const { protocol, hostname, port } = new URL(command.redisUrl);
  return `${command.cluster ? 'the cluster node ' : ''}${protocol}//${hostname}:${port || 6379}`;
}

/** A command that goes to the store. */
type StoreCommand = Extract<Command, { command: 'inspect' | 'reset' | 'rules' }>;
type LimiterCommand = Extract<Command, { command: 'inspect' | 'reset' }>;

/** What the client and the limiter told while the command ran, for its message. */
interface Seen {
  /** The limiter never rejects on a store failure (it answers by its fail mode): keep the store's error to report. */
  storeError?: Error;
  /** ioredis rejects a failed connect with 'Connection is closed.'; the cause (ECONNREFUSED, WRONGPASS) comes here. */
  connectionError?: Error;
}

/**
 * Runs the sluice command; resolves to its exit status: 0 done, 1 the store failed, 2 a bad argument
 * (with a one-line message on `err`).
 * @example process.exitCode = await main(process.argv.slice(2), process.env)
 */
export async function main(
  argv: readonly string[],
  env: Record<string, string | undefined>,
  output: Output = { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) },
): Promise<number> {
  let command: Command;
  try {
    command = parseCommand(argv, env);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    output.err(`sluice: ${error.message} (see sluice --help)\n`);
    return 2;
  }
  if (command.command === 'help') {
    output.out(`${USAGE}\n`);
    return 0;
  }
  if (command.command === 'version') {
    output.out(`${cliVersion()}\n`);
    return 0;
  }
  return onStore(command, output);
}

/** Connects, runs the command and disconnects, all within --timeout. */
async function onStore(command: StoreCommand, output: Output): Promise<number> {
  const { timeoutMs } = command;
  const seen: Seen = {};
  const client = connect(command.redisUrl, command.cluster, timeoutMs);
  client.on('error', (error: Error) => {
    seen.connectionError ??= error;
  });
  let limiter: Limiter | undefined;
  try {
    if (command.command !== 'rules') limiter = openLimiter(command, client, seen);
  } catch (error) {
    client.disconnect();
    // A bad --policy or --prefix: the core's message names the option and what is allowed.
    if (!(error instanceof SluiceError)) throw error;
    output.err(`sluice: ${error.message.split('\n')[0]} (see sluice --help)\n`);
    return 2;
  }
  // Past the deadline the command's own ending (an error once the client is disconnected) prints nothing.
  let expired = false;
  const write = (to: 'out' | 'err', text: string) => {
    if (!expired) output[to](text);
  };
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<'expired'>((resolve) => {
    timer = setTimeout(() => resolve('expired'), timeoutMs);
  });
  try {
    // One deadline for connecting and the command together: a server that accepts the connection and never
    // answers (a wedged process, a proxy with nothing behind it) holds up a connect as well as a command.
    // race() also takes care of run()'s ending after the deadline: nothing is left unhandled.
    const status = await Promise.race([run(command, client, limiter, seen, write), deadline]);
    if (status !== 'expired') return status;
    expired = true;
    output.err(`sluice: no answer from ${where(command)} within ${timeoutMs} ms\n`);
    return 1;
  } finally {
    clearTimeout(timer);
    // Disconnecting fails whatever is still waiting on the client (the connect, a command), so that nothing
    // holds the process open: the deadline is the command's whole run.
    client.disconnect();
    await limiter?.close();
  }
}

function openLimiter(command: LimiterCommand, client: Redis | Cluster, seen: Seen, rules?: Rules): Limiter {
  return createLimiter({
    ...(rules === undefined ? {} : { rules }),
    policy: command.policies,
    prefix: command.prefix,
    shards: command.shards,
    store: redisStore({ client }),
    timeout: command.timeoutMs,
    breaker: false,
    denyCache: false,
    onEvent: (event) => {
      if (event.type === 'store-error') seen.storeError = event.error;
    },
  });
}

/** Connects and runs `reset` or `inspect`; resolves to the exit status. */
async function run(
  command: StoreCommand,
  client: Redis | Cluster,
  limiter: Limiter | undefined,
  seen: Seen,
  write: (to: 'out' | 'err', text: string) => void,
): Promise<number> {
  try {
    await client.connect();
    if (command.command === 'rules') {
      await runRules(command, client, write);
    } else if (limiter === undefined) {
      throw new Error('no limiter');
    } else if (command.command === 'inspect' && command.homeUrl !== undefined) {
      write(
        'out',
        `${JSON.stringify(await inspectRegions(command, client, command.homeUrl, (url) => connect(url, false, command.timeoutMs)), null, 2)}\n`,
      );
    } else if (command.command === 'reset') {
      await limiter.reset(command.client, { scope: command.scope });
      const scope = command.scope === undefined ? '' : `, scope ${JSON.stringify(command.scope)}`;
      write('out', `reset ${JSON.stringify(command.client)} (prefix ${JSON.stringify(command.prefix)}${scope})\n`);
    } else {
      // The rules in force, as the app's limiters hold them: a deny or allow answers the peek, an override
      // names its policy (and is shown as the decision's `rule`).
      let loaded: () => void = () => {};
      const ready = new Promise<void>((resolve) => {
        loaded = resolve;
      });
      const rules = openRules(redisStore({ client }), command.prefix, (event) => {
        if (event.type === 'rule-change' || event.type === 'rule-error') loaded();
      });
      try {
        await ready;
        const ruled = openLimiter(command, client, seen, rules);
        const decision = await ruled.peek(command.client, { scope: command.scope });
        await ruled.close();
        if (decision.source !== 'store' && decision.source !== 'rule')
          throw seen.storeError ?? new StoreFailure(`no answer from the store (source ${decision.source})`);
        const override = decision.source === 'store' ? await overrideOf(rules, command.client, command.scope) : undefined;
        write('out', `${JSON.stringify(override === undefined ? decision : { ...decision, rule: override }, null, 2)}\n`);
        if (decision.source === 'store' && override === undefined && untouched(decision)) write('err', `sluice: ${noCounter(command)}\n`);
      } finally {
        await rules.close();
      }
    }
    return 0;
  } catch (error) {
    // A bad pattern, policy or --ttl of a rules command: the core's message names it.
    if (error instanceof SluiceError && error.code === 'ERR_SLUICE_OPTION') {
      write('err', `sluice: ${error.message.split('\n')[0]} (see sluice --help)\n`);
      return 2;
    }
    // ioredis' messages name the host and port, never the URL's password.
    let cause = (error as Error).message;
    if (client.status !== 'ready') {
      // A Cluster says 'None of startup nodes is available' and no more: name the node it was given.
      const { hostname, port } = new URL(command.redisUrl);
      cause = command.cluster
        ? `no answer from the cluster node ${hostname}:${port || 6379}: ${cause}`
        : (seen.connectionError?.message ?? cause);
    }
    write('err', `sluice: the store failed: ${cause.split('\n')[0]}\n`);
    return 1;
  }
}

/** The override rule for KEY in SCOPE, exactly as written (an override by address range is not looked up). */
async function overrideOf(rules: Rules, key: string, scope: string | undefined): Promise<Rule | undefined> {
  let found: Rule | undefined;
  for await (const rule of rules.list({ kind: 'override' })) {
    if (rule.pattern === key && (rule.scope === scope || (found === undefined && rule.scope === undefined))) found = rule;
  }
  return found;
}

/**
 * True when a peek found no counter: every policy full, as a key never charged (or long idle) is. A mistyped
 * key, --scope, --prefix or --policy finds none, and the JSON alone would read as a client with all its quota.
 */
function untouched(decision: Decision): boolean {
  // A calendar quota resets at the period's end whether or not it counted: its remaining says it all.
  return decision.policies.every((p) => p.remaining >= p.limit && (p.resetMs === 0 || p.remaining === p.limit));
}

function noCounter(command: LimiterCommand): string {
  const scope = command.scope === undefined ? '' : `, scope ${JSON.stringify(command.scope)}`;
  return (
    `no counter found for ${JSON.stringify(command.client)} (prefix ${JSON.stringify(command.prefix)}${scope}): showing a full bucket. ` +
    'If the app has limited this client, check the key, --scope, --prefix and --policy against it'
  );
}
