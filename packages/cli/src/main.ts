import { createLimiter, type Limiter, redisStore, SluiceError } from '@sluice/core';
import { Cluster, Redis } from 'ioredis';
import { type Command, parseCommand, USAGE, UsageError } from './args.js';

/** Where main() writes. */
export interface Output {
  out(text: string): void;
  err(text: string): void;
}

/** ms for connecting and for each store call: a person waits on this, not a request. */
const TIMEOUT_MS = 5000;

class StoreFailure extends Error {
  override name = 'StoreFailure';
}

/** An ioredis client that connects once, when asked, and never queues a command while it is down. */
function connect(url: string, cluster: boolean): Redis | Cluster {
  const once = { connectTimeout: TIMEOUT_MS, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null };
  if (!cluster) return new Redis(url, { ...once, lazyConnect: true });
  const u = new URL(url);
  return new Cluster([{ host: u.hostname, port: Number(u.port || 6379) }], {
    lazyConnect: true,
    enableOfflineQueue: false,
    clusterRetryStrategy: () => null,
    slotsRefreshTimeout: TIMEOUT_MS,
    redisOptions: {
      ...once,
      username: decodeURIComponent(u.username) || undefined,
      password: decodeURIComponent(u.password) || undefined,
      tls: u.protocol === 'rediss:' ? {} : undefined,
    },
  });
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
  let limiter: Limiter;
  // The limiter never rejects on a store failure (it answers by its fail mode): keep the store's error to report.
  let storeError: Error | undefined;
  const client = connect(command.redisUrl, command.cluster);
  // ioredis rejects a failed connect with 'Connection is closed.'; the cause (ECONNREFUSED, WRONGPASS) comes here.
  let connectionError: Error | undefined;
  client.on('error', (error: Error) => {
    connectionError ??= error;
  });
  try {
    try {
      limiter = createLimiter({
        policy: command.policies,
        prefix: command.prefix,
        shards: command.shards,
        store: redisStore({ client }),
        timeout: TIMEOUT_MS,
        breaker: false,
        denyCache: false,
        onEvent: (event) => {
          if (event.type === 'store-error') storeError = event.error;
        },
      });
    } catch (error) {
      // A bad --policy or --prefix: the core's message names the option and what is allowed.
      if (!(error instanceof SluiceError)) throw error;
      output.err(`sluice: ${error.message.split('\n')[0]} (see sluice --help)\n`);
      return 2;
    }
    try {
      await client.connect();
      if (command.command === 'reset') {
        await limiter.reset(command.key);
        const scope = command.scope === undefined ? '' : `, scope ${JSON.stringify(command.scope)}`;
        output.out(`reset ${JSON.stringify(command.client)} (prefix ${JSON.stringify(command.prefix)}${scope})\n`);
      } else {
        const decision = await limiter.peek(command.key);
        if (decision.source !== 'store') throw storeError ?? new StoreFailure(`no answer from the store (source ${decision.source})`);
        output.out(`${JSON.stringify(decision, null, 2)}\n`);
      }
      return 0;
    } catch (error) {
      // ioredis' messages name the host and port, never the URL's password.
      let cause = (error as Error).message;
      if (client.status !== 'ready') {
        // A Cluster says 'None of startup nodes is available' and no more: name the node it was given.
        const { hostname, port } = new URL(command.redisUrl);
        cause = command.cluster
          ? `no answer from the cluster node ${hostname}:${port || 6379}: ${cause}`
          : (connectionError?.message ?? cause);
      }
      output.err(`sluice: the store failed: ${cause.split('\n')[0]}\n`);
      return 1;
    } finally {
      await limiter.close();
    }
  } finally {
    client.disconnect();
  }
}
