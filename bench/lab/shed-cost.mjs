// What a shed request costs the server: CPU per request when every request is answered 503 by
// shed() (a shedder whose one slot is held), against the bare app's 200, per framework; with V=raw (Express),
// a 503 written by the first middleware with writeHead/end; with V=front (Express, Koa), shedGuard() mounted in
// front of the app on node:http; with V=pre, node:http alone. Closed loop,
// 16 connections (autocannon, this process); the server's CPU is read in its own process.
// Usage: pnpm build && [FW=express,fastify,koa] [V=bare,shed,raw,front,pre] node bench/lab/shed-cost.mjs
import { fork } from 'node:child_process';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const [mode, fw, variant] = process.argv.slice(2);
if (mode === 'serve') {
  const core = await import('@sluice/core');
  const shedder = core.createShedder({ limit: { initial: 1, min: 1, max: 1 } });
  shedder.acquire('critical'); // held forever: every request is shed
  let server;
  if (fw === 'express') {
    const app = (await import('express')).default();
    if (variant === 'shed') app.use((await import('@sluice/express')).shed({ shedder }));
    const body = Buffer.from(JSON.stringify({ type: 'about:blank', title: 'Service Unavailable', status: 503 }));
    const headers = {
      'Retry-After': '1',
      'Content-Type': 'application/problem+json; charset=utf-8',
      'Content-Length': String(body.length),
    };
    if (variant === 'raw')
      app.use((_q, res) => {
        res.writeHead(503, headers);
        res.end(body);
      });
    if (variant === 'front') {
      const guard = (await import('@sluice/express')).shedGuard({ shedder });
      server = (await import('node:http')).createServer((q, s) => guard(q, s, () => app(q, s))).listen(0, '127.0.0.1');
    }
    if (variant === 'pre')
      server = (await import('node:http'))
        .createServer((_q, res) => {
          res.writeHead(503, headers);
          res.end(body);
        })
        .listen(0, '127.0.0.1');
    else app.get('/', (_q, res) => res.json({ ok: true }));
    if (variant !== 'pre' && variant !== 'front') server = app.listen(0, '127.0.0.1');
  } else if (fw === 'fastify') {
    const app = (await import('fastify')).default();
    if (variant === 'shed') await app.register((await import('@sluice/fastify')).shed, { shedder });
    app.get('/', async () => ({ ok: true }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    server = app.server;
  } else {
    const app = new (await import('koa')).default();
    if (variant === 'shed') app.use((await import('@sluice/koa')).shed({ shedder }));
    app.use((ctx) => {
      ctx.body = { ok: true };
    });
    if (variant === 'front') {
      const guard = (await import('@sluice/koa')).shedGuard({ shedder });
      const handle = app.callback();
      server = (await import('node:http')).createServer((q, s) => guard(q, s, () => handle(q, s))).listen(0, '127.0.0.1');
    } else server = app.listen(0, '127.0.0.1');
  }
  await new Promise((r) => (server.listening ? r() : server.once('listening', r)));
  let cpu;
  process.on('message', (m) => {
    if (m === 'mark') cpu = process.cpuUsage();
    else {
      const u = process.cpuUsage(cpu);
      process.send({ cpuMs: (u.user + u.system) / 1000 });
    }
  });
  process.send({ port: server.address().port });
} else {
  const autocannon = require('autocannon');
  for (const f of (process.env.FW ?? 'express,fastify,koa').split(','))
    for (const v of (process.env.V ?? 'bare,shed').split(',')) {
      const child = fork(new URL(import.meta.url), ['serve', f, v], {});
      const { port } = await new Promise((r) => child.once('message', r));
      await autocannon({ url: `http://127.0.0.1:${port}/`, connections: 16, duration: 1 });
      child.send('mark');
      const r = await autocannon({ url: `http://127.0.0.1:${port}/`, connections: 16, duration: 3 });
      const { cpuMs } = await new Promise((res) => {
        child.once('message', res);
        child.send('stats');
      });
      const n = r.requests.total;
      console.log(
        f,
        v,
        `${Math.round(n / 3)} req/s`,
        `server CPU ${((cpuMs * 1000) / n).toFixed(1)} µs/req`,
        `status ${JSON.stringify(r.statusCodeStats ?? {})}`.slice(0, 60),
      );
      child.kill();
    }
}
