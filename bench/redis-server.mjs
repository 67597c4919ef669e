// Starts a throwaway redis-server on a free port for a benchmark, and stops it.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import Redis from 'ioredis';

export const freePort = () =>
  new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

export async function startRedis() {
  const port = await freePort();
  const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  });
  const client = new Redis({ port, lazyConnect: true, retryStrategy: () => 50 });
  // Refused connections are expected until the server listens; say nothing about them.
  const starting = () => {};
  client.on('error', starting);
  for (let i = 0; i < 100; i++) {
    try {
      await client.connect();
      break;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  client.off('error', starting);
  const stop = () => {
    client.disconnect();
    proc.kill('SIGKILL');
  };
  return { port, client, stop };
}
