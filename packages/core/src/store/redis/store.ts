import calculateSlot from 'cluster-key-slot';
import { badOption, SluiceError } from '../../errors.js';
import { checkNames, isClock } from '../../options.js';
import type { Store, StoreReply } from '../contract.js';
import { CLIENTS_TAKEN, looksLikeClient, type RedisClient, scriptClient } from './clients.js';
import { Dispatcher } from './dispatch.js';
import { redisLeases } from './leases.js';
import { redisRules } from './rules.js';
import type { ScriptClient } from './script-client.js';
import { clientCall, isDecideScript } from './scripts.js';

export type { RedisClient } from './clients.js';
export type { IoredisClient } from './ioredis.js';
export type { NodeRedisClient } from './node-redis.js';

/** Options of redisStore(). */
export interface RedisStoreOptions {
  /**
   * The client, told apart by shape: ioredis 5 or 6 or iovalkey (`Redis`, also one that follows
   * Sentinel, or `Cluster`), or node-redis 4 or 5 (`createClient()`, `createCluster()`). The store never
   * closes it, and sends nothing while its connection is down: a call then fails at once (to the fail
   * mode) instead of waiting in the client's offline queue.
   */
  client: RedisClient;
  /** Most decisions carried by one script call. Default 512. */
  maxBatch?: number;
  /**
   * A fake ms clock for tests (epoch ms): the scripts decide on it instead of the server's TIME, exactly, and
   * the limiters on the store keep time on it (docs/testing.md); keys live an hour past the TTLs computed
   * on it. Default: absent (production).
   * @example redisStore({ client, clock: testClock() })
   */
  clock?: () => number;
}

/**
 * The Redis store: every decision is the one script of lua/, run atomically on the server's clock.
 * Decisions asked for in one event-loop turn travel together, many to a script call (one call per
 * slot on a Cluster), so throughput is bounded by Redis rather than by round trips. On a standalone
 * server, while two calls are in flight, later decisions wait for one of them and go together.
 * @example createLimiter({ policy: '100/1m', store: redisStore({ client: new Redis() }) })
 * @example createLimiter({ policy: '100/1m', store: redisStore({ client: await createClient().connect() }) })
 */
export function redisStore(options: RedisStoreOptions): Store {
  if (looksLikeClient(options)) {
    throw new SluiceError('ERR_SLUICE_OPTION', 'redisStore takes options: pass redisStore({ client }), not the client itself');
  }
  if (options === null || typeof options !== 'object') {
    throw new SluiceError('ERR_SLUICE_OPTION', `redisStore takes options { client }, where client is ${CLIENTS_TAKEN}`);
  }
  checkNames(options, ['client', 'maxBatch', 'clock'], 'a redisStore option');
  const client = scriptClient(options.client, isDecideScript);
  const maxBatch = options.maxBatch ?? 512;
  if (!Number.isSafeInteger(maxBatch) || maxBatch < 1) badOption('maxBatch', 'a positive integer', maxBatch);
  const clock = options.clock === undefined ? undefined : isClock(options.clock, 'clock');
  const dispatcher = new Dispatcher(client, maxBatch, clock);
  const { decideWith } = dispatcher;
  return {
    local: false,
    decide: (request) =>
      new Promise<StoreReply>((resolve, reject) =>
        decideWith(request, (error, reply) => (reply === undefined ? reject(error) : resolve(reply))),
      ),
    decideWith,
    connecting: () => client.connecting(),
    rules: redisRules(client),
    leases: redisLeases(client),
    reset: (keys) => resetKeys(client, keys),
    clock,
    resetPrefix: (prefix) => resetPrefix(client, prefix),
    async close() {
      client.detach();
      dispatcher.drain();
    },
  };
}

/** Deletes `keys` for reset(): one DEL, or one per slot on a Cluster. */
async function resetKeys(client: ScriptClient, keys: readonly string[]): Promise<void> {
  if (keys.length === 0) return;
  if (!client.cluster) {
    await clientCall(() => client.del(keys));
    return;
  }
  // One DEL per slot: a Cluster refuses one whose keys span slots (CROSSSLOT), as shards' keys do.
  const bySlot = new Map<number, string[]>();
  for (const key of keys) {
    const slot = calculateSlot(key);
    bySlot.set(slot, [...(bySlot.get(slot) ?? []), key]);
  }
  await Promise.all([...bySlot.values()].map((group) => clientCall(() => client.del(group))));
}

/** Keys a SCAN step asks each master to look at. */
const SCAN_COUNT = '1000';

/**
 * Deletes every key of `prefix` on every master: each starts `prefix:{` (keys.ts), which no other
 * prefix's key and no store's guard key (`sluice:call:...`) does. SCAN with MATCH, then one DEL per slot.
 */
async function resetPrefix(client: ScriptClient, prefix: string): Promise<void> {
  const match = `${prefix.replace(/[*?[\]\\]/g, '\\$&')}:{*`;
  const masters = await client.masters();
  await Promise.all(
    masters.map(async (send) => {
      let cursor = '0';
      do {
        const [next, keys] = (await clientCall(() => send(['SCAN', cursor, 'MATCH', match, 'COUNT', SCAN_COUNT]))) as [unknown, unknown[]];
        cursor = String(next);
        const bySlot = new Map<number, string[]>();
        for (const key of keys.map(String)) bySlot.set(calculateSlot(key), [...(bySlot.get(calculateSlot(key)) ?? []), key]);
        await Promise.all([...bySlot.values()].map((group) => clientCall(() => send(['DEL', ...group]))));
      } while (cursor !== '0');
    }),
  );
}
