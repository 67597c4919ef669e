// The Redis clients redisStore() takes, told apart by shape and wrapped (ioredis.ts, node-redis.ts) into the
// store's view of a client (script-client.ts). Nothing here imports a client, at run time or in the emitted
// types: an app with no client installed type-checks, and one with any of them passes its own instance.
import { describe, SluiceError } from '../../errors.js';
import { type IoredisClient, ioredis } from './ioredis.js';
import { type NodeRedisClient, nodeRedis } from './node-redis.js';
import type { Loose, ScriptClient } from './script-client.js';

/** Every client redisStore() takes. */
export type RedisClient = IoredisClient | NodeRedisClient;

export const CLIENTS_TAKEN = 'an ioredis 5/6 or iovalkey Redis or Cluster, or a node-redis 4/5 createClient() or createCluster()';

const isIoredis = (c: Loose) => typeof c.evalsha === 'function' && typeof c.status === 'string';
const isNodeRedis = (c: Loose) => typeof c.evalSha === 'function' && typeof c.sendCommand === 'function' && typeof c.isOpen === 'boolean';

/** True when `value` has the shape of a client redisStore() takes. */
export function looksLikeClient(value: unknown): boolean {
  return value !== null && typeof value === 'object' && (isIoredis(value as Loose) || isNodeRedis(value as Loose));
}

/**
 * Wraps `client` for the store; refuses one it cannot use. `isOwnCall(first)` says whether a command
 * whose first argument is `first` is one of the store's script calls.
 */
export function scriptClient(client: unknown, isOwnCall: (first: unknown) => boolean): ScriptClient {
  if (client !== null && typeof client === 'object') {
    const c = client as Loose;
    if (isIoredis(c)) return ioredis(c as unknown as IoredisClient, isOwnCall);
    if (isNodeRedis(c)) return nodeRedis(c as unknown as NodeRedisClient);
  }
  throw new SluiceError('ERR_SLUICE_OPTION', `client must be ${CLIENTS_TAKEN}, got ${describe(client)}`);
}
