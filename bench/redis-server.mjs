// A benchmark's redis-server: one of the shared harness's (test/support/redis-harness.mjs), never the user's
// REDIS_URL (a benchmark flushes it and resets its stats), with an ioredis client on it for the benchmark's
// own reads (INFO, CONFIG RESETSTAT, FLUSHALL). cpuUs() is the server's CPU time so far (user + system,
// from INFO cpu), in µs. stop() disconnects the client and kills the server.
import Redis from 'ioredis';
import { startServer } from '../test/support/redis-harness.mjs';

export async function startRedis() {
  const server = await startServer();
  const client = new Redis({ port: server.port, lazyConnect: true });
  await client.connect();
  return {
    port: server.port,
    client,
    async cpuUs() {
      const info = await client.info('cpu');
      return (Number(/used_cpu_user:([\d.]+)/.exec(info)[1]) + Number(/used_cpu_sys:([\d.]+)/.exec(info)[1])) * 1e6;
    },
    stop() {
      client.disconnect();
      return server.stop();
    },
  };
}
