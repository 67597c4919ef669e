import { createLimiter, type Limiter, redisStore, SluiceError } from '@sluice/core';
import { Redis } from 'ioredis';
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
  const client = new Redis(command.redisUrl, {
    lazyConnect: true,
    connectTimeout: TIMEOUT_MS,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null, // one attempt: a person retries
  });
  // ioredis rejects a failed connect with 'Connection is closed.'; the cause (ECONNREFUSED, WRONGPASS) comes here.
  let connectionError: Error | undefined;
  client.on('error', (error: Error) => {
    connectionError = error;
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
      const cause = client.status === 'ready' ? (error as Error) : (connectionError ?? (error as Error));
      output.err(`sluice: the store failed: ${cause.message.split('\n')[0]}\n`);
      return 1;
    } finally {
      await limiter.close();
    }
  } finally {
    client.disconnect();
  }
}
