// The server the Redis-backed suites run on (the harness' SERVER: SLUICE_SERVER, redis by default; .ci/run
// runs them on Redis and on Valkey): that it is the one named, and the one reply of its the store reads,
// a missing script's NOSCRIPT.
import Redis from 'ioredis';
import { type RedisServer, SERVER, startServer } from './support/redis';

let server: RedisServer;
let client: Redis;
beforeAll(async () => {
  server = await startServer();
  client = new Redis({ port: server.port });
});
afterAll(async () => {
  client.disconnect();
  await server.stop();
});

it(`the server under test is ${SERVER.name}, as SLUICE_SERVER says`, async () => {
  // Valkey names itself (server_name:valkey); Redis 7.0 does not.
  const name = /^server_name:(\w+)/m.exec(await client.info('server'))?.[1] ?? 'redis';
  expect(name).toBe(SERVER.name);
});

it('a script the server does not hold is answered by an error that starts with NOSCRIPT', async () => {
  await expect(client.evalsha('0'.repeat(40), 0)).rejects.toThrow(/^NOSCRIPT /);
});
