// Fires concurrent HTTP requests at a server of the parent test from another process, so that the
// client's work does not share the server's event loop. argv: base URL, then path:count pairs
// ('POST /login:100'). Every socket is opened first (one GET /warm each), then it tells the parent
// 'ready' and waits for 'go' (the parent breaks Redis in between); then all requests go at once and it
// sends the answers back: per request, path, status, ms and the RateLimit and RateLimit-Policy fields.
const http = require('node:http');
const { performance } = require('node:perf_hooks');

const base = new URL(process.argv[2]);
const plan = process.argv.slice(3).flatMap((spec) => {
  const [route, count] = spec.split(':');
  const [method, path] = route.split(' ');
  return Array.from({ length: Number(count) }, () => ({ method, path }));
});
const agent = new http.Agent({ keepAlive: true, maxSockets: plan.length });
const send = (method, path) =>
  new Promise((resolve) => {
    const start = performance.now();
    const req = http.request({ host: base.hostname, port: base.port, method, path, agent, timeout: 5000 }, (res) => {
      res.resume();
      res.on('end', () =>
        resolve({
          path,
          status: res.statusCode,
          ms: performance.now() - start,
          rateLimit: res.headers.ratelimit ?? null,
          policy: res.headers['ratelimit-policy'] ?? null,
        }),
      );
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (e) => resolve({ path, status: 0, ms: performance.now() - start, error: e.message }));
    req.end();
  });
(async () => {
  await Promise.all(plan.map(() => send('GET', '/warm')));
  process.send('ready');
  await new Promise((resolve) => process.once('message', resolve));
  const answers = await Promise.all(plan.map(({ method, path }) => send(method, path)));
  agent.destroy();
  process.send(answers, () => process.disconnect());
})();
