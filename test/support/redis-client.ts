// A Redis of a test's own with a ready ioredis client on it: the store refuses calls made before a
// client's first connect, so a test waits for 'ready' before its first decision.
import Redis from 'ioredis';
import { type RedisServer, startRedis } from './redis';

export interface RedisWithClient {
  server: RedisServer;
  client: Redis;
}

/** Starts a redis-server on a free port and connects a client to it. */
export async function startRedisWithClient(): Promise<RedisWithClient> {
  const server = await startRedis();
  const client = new Redis(server.url);
  await new Promise((r) => client.once('ready', r));
  return { server, client };
}

/** Disconnects the client and stops the server. */
export async function stopRedisWithClient({ server, client }: RedisWithClient): Promise<void> {
  client.disconnect();
  await server.stop();
}
