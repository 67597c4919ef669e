// shed() in Express, Fastify, Koa and Hono over real HTTP on 127.0.0.1: 503 + Retry-After + problem+json when no
// slot is left, priorities, maxWait, and a slot given back when the client leaves mid-request; each one's
// shedGuard() in front of the app, on node:http's request and response, and both on one shedder.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { createAdaptorServer, getRequestListener } from '@hono/node-server';
import { createShedder, type Priority, type Shedder } from '@sluice/core';
import { shed as expressShed, shedGuard as expressShedGuard } from '@sluice/express';
import { shed as fastifyShed, shedGuard as fastifyShedGuard } from '@sluice/fastify';
import { shed as honoShed, shedGuard as honoShedGuard } from '@sluice/hono';
import { shed as koaShed, shedGuard as koaShedGuard } from '@sluice/koa';
import { prometheusMetrics } from '@sluice/metrics';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import Koa from 'koa';
import { Registry } from 'prom-client';
import { until } from './support/until';

type Framework = 'express' | 'fastify' | 'koa' | 'hono' | 'express in front' | 'koa in front' | 'fastify in front' | 'hono in front';
/** How shed() is mounted: as the app's middleware, shedGuard() in front of the app on node:http, or both (one shedder). */
type Mount = 'app' | 'front' | 'both';

/** GET /slow answers once the test calls `open()`; GET /fast at once. `entered` resolves when /slow's handler runs. */
interface App {
  url: string;
  entered: Promise<void>;
  open(): void;
  close(): Promise<void>;
}

const priorityOf = (header: unknown): Priority => {
  if (header === 'throw') throw new Error('a priority function that throws');
  return header === 'critical' ? 'critical' : 'normal';
};

async function start(framework: Framework, shedder: Shedder, both = false): Promise<App> {
  const mount: Mount = both ? 'both' : framework.endsWith(' in front') ? 'front' : 'app';
  let open = () => {};
  let enter = () => {};
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const entered = new Promise<void>((resolve) => {
    enter = resolve;
  });
  const slow = async () => {
    enter();
    await gate;
    return 'ok';
  };
  let server: Server;
  if (framework.startsWith('express')) {
    const app = express();
    if (mount !== 'front') app.use(expressShed({ shedder, priority: (req) => priorityOf(req.headers['x-priority']) }));
    const guard = expressShedGuard({ shedder, priority: (req) => priorityOf(req.headers['x-priority']) });
    app.get('/slow', (_req, res) => void slow().then((b) => res.send(b)));
    app.get('/fast', (_req, res) => void res.send('ok'));
    server =
      mount === 'app'
        ? app.listen(0, '127.0.0.1')
        : createServer((req, res) => guard(req, res, (error) => (error ? res.writeHead(500).end() : app(req, res)))).listen(0, '127.0.0.1');
  } else if (framework.startsWith('koa')) {
    const app = new Koa();
    if (mount !== 'front') app.use(koaShed({ shedder, priority: (ctx) => priorityOf(ctx.get('x-priority')) }));
    const guard = koaShedGuard({ shedder, priority: (req) => priorityOf(req.headers['x-priority']) });
    app.use(async (ctx) => {
      ctx.body = ctx.path === '/slow' ? await slow() : 'ok';
    });
    const handle = app.callback();
    server =
      mount === 'app'
        ? app.listen(0, '127.0.0.1')
        : createServer((req, res) => guard(req, res, (error) => (error ? res.writeHead(500).end() : handle(req, res)))).listen(
            0,
            '127.0.0.1',
          );
  } else if (framework.startsWith('hono')) {
    const app = new Hono();
    if (mount !== 'front') app.use(honoShed({ shedder, priority: (c) => priorityOf(c.req.header('x-priority')) }));
    const guard = honoShedGuard({ shedder, priority: (req) => priorityOf(req.headers['x-priority']) });
    app.get('/slow', async (c) => c.text(await slow()));
    app.get('/fast', (c) => c.text('ok'));
    const listener = getRequestListener(app.fetch);
    server = (
      mount === 'app'
        ? createAdaptorServer({ fetch: app.fetch })
        : createServer((req, res) => guard(req, res, (error) => (error ? res.writeHead(500).end() : listener(req, res))))
    ).listen(0, '127.0.0.1') as Server;
  } else {
    // In front: Fastify's shedGuard on node:http, through its serverFactory.
    const guard = fastifyShedGuard({ shedder, priority: (req) => priorityOf(req.headers['x-priority']) });
    const app =
      mount === 'app'
        ? Fastify()
        : Fastify({
            serverFactory: (handler) =>
              createServer((req, res) => guard(req, res, (error) => (error ? res.writeHead(500).end() : handler(req, res)))),
          });
    if (mount !== 'front') await app.register(fastifyShed, { shedder, priority: (request) => priorityOf(request.headers['x-priority']) });
    app.get('/slow', slow);
    app.get('/fast', async () => 'ok');
    await app.listen({ port: 0, host: '127.0.0.1' });
    server = app.server;
  }
  if (!server.listening) await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    entered,
    open: () => open(),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe.each<Framework>(['express', 'fastify', 'koa', 'hono', 'express in front', 'koa in front', 'fastify in front', 'hono in front'])(
  'shed() in %s',
  (framework) => {
    let app: App | undefined;
    afterEach(async () => {
      app?.open();
      await app?.close();
      app = undefined;
    });

    test('a priority(req) that throws answers 500 and holds no slot (in front: the documented next)', async () => {
      // Koa's and Hono's default error handlers log what reached them; the others' (test mode, no logger) log nothing.
      const logged = jest.spyOn(console, 'error').mockImplementation(() => undefined);
      try {
        const shedder = createShedder({ limit: { initial: 1, min: 1, max: 1 } });
        app = await start(framework, shedder);
        const thrown = await fetch(`${app.url}/fast`, { headers: { 'x-priority': 'throw' } });
        expect(thrown.status).toBe(500);
        expect(shedder.inFlight).toBe(0);
        expect((await fetch(`${app.url}/fast`)).status).toBe(200);
        const logs = logged.mock.calls.map((args) => args.join(' '));
        if (framework === 'koa' || framework === 'hono')
          expect(logs).toEqual([expect.stringContaining('SluiceError: priority(req) threw')]);
        else expect(logs).toEqual([]);
      } finally {
        logged.mockRestore();
      }
    });

    test('answers 503 with Retry-After and problem+json when no slot is left, and takes the slot back when the response ends', async () => {
      const shedder = createShedder({ limit: { initial: 1, min: 1, max: 1 } });
      app = await start(framework, shedder);
      const first = fetch(`${app.url}/slow`);
      await app.entered;
      expect(shedder.inFlight).toBe(1);
      const refused = await fetch(`${app.url}/fast`);
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(await refused.json()).toMatchObject({ status: 503, title: 'Service Unavailable' });
      app.open();
      expect((await first).status).toBe(200);
      await until(() => shedder.inFlight, 0);
      expect((await fetch(`${app.url}/fast`)).status).toBe(200);
      shedder.close();
    });

    test('keeps the critical reserve for critical requests', async () => {
      const shedder = createShedder({ limit: { initial: 2, min: 2, max: 2 }, reserve: { critical: 0.5, normal: 0 } });
      app = await start(framework, shedder);
      const first = fetch(`${app.url}/slow`);
      await app.entered;
      expect((await fetch(`${app.url}/fast`)).status).toBe(503);
      expect((await fetch(`${app.url}/fast`, { headers: { 'x-priority': 'critical' } })).status).toBe(200);
      app.open();
      await first;
      shedder.close();
    });

    test('with maxWait, a request waits for a slot instead of being shed; past maxWait it is shed', async () => {
      const shedder = createShedder({ limit: { initial: 1, min: 1, max: 1 }, maxWait: '5s' });
      app = await start(framework, shedder);
      const first = fetch(`${app.url}/slow`);
      await app.entered;
      const waiting = fetch(`${app.url}/fast`);
      await new Promise((resolve) => setTimeout(resolve, 50));
      app.open();
      expect((await first).status).toBe(200);
      expect((await waiting).status).toBe(200);
      shedder.close();

      const brief = createShedder({ limit: { initial: 1, min: 1, max: 1 }, maxWait: '50ms' });
      await app.close();
      app = await start(framework, brief);
      const held = fetch(`${app.url}/slow`);
      await app.entered;
      expect((await fetch(`${app.url}/fast`)).status).toBe(503);
      app.open();
      await held;
      brief.close();
    });

    test('with maxWait, a critical request arriving at a full waiting room takes the place of the last normal one', async () => {
      // The room holds twice `limit` (1) requests; without the swap the critical one would be shed at once.
      const shedder = createShedder({ limit: { initial: 1, min: 1, max: 1 }, maxWait: '10s', name: 'room' });
      // Each request refused a slot is published ('shed') as it enters the room: the two normal ones enter in order.
      const refused: unknown[] = [];
      const listener = (event: unknown) => {
        const { type, name } = event as { type: string; name: string };
        if (type === 'shed' && name === 'room') refused.push(event);
      };
      subscribe('sluice:event', listener);
      try {
        app = await start(framework, shedder);
        const first = fetch(`${app.url}/slow`);
        await app.entered;
        const earlier = fetch(`${app.url}/fast`);
        await until(() => refused.length, 1);
        const normal = fetch(`${app.url}/fast?second`);
        await until(() => refused.length, 2);
        const critical = fetch(`${app.url}/fast`, { headers: { 'x-priority': 'critical' } });
        expect((await normal).status).toBe(503); // shed now, not after 10 s
        app.open();
        expect((await first).status).toBe(200);
        expect((await critical).status).toBe(200);
        expect((await earlier).status).toBe(200);
      } finally {
        unsubscribe('sluice:event', listener);
        shedder.close();
      }
    });

    test('with maxWait per class, only the classes it names wait: a normal request is shed at once, a critical one waits', async () => {
      const shedder = createShedder({ limit: { initial: 1, min: 1, max: 1 }, maxWait: { critical: '10s' } });
      expect(shedder.maxWaitMs).toBe(10_000);
      app = await start(framework, shedder);
      const first = fetch(`${app.url}/slow`);
      await app.entered;
      const critical = fetch(`${app.url}/fast`, { headers: { 'x-priority': 'critical' } });
      expect((await fetch(`${app.url}/fast`)).status).toBe(503); // at once: the slow request still holds the slot
      app.open();
      expect((await first).status).toBe(200);
      expect((await critical).status).toBe(200);
      shedder.close();
    });

    test('gives the slot back when the client leaves mid-request (a real socket destroyed)', async () => {
      const shedder = createShedder({ limit: { initial: 1, min: 1, max: 1 } });
      app = await start(framework, shedder);
      const { port } = new URL(app.url);
      const socket = connect(Number(port), '127.0.0.1');
      socket.on('error', () => {});
      socket.write('GET /slow HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      await app.entered;
      expect(shedder.inFlight).toBe(1);
      socket.destroy();
      await until(() => shedder.inFlight, 0); // while the handler still waits
      expect((await fetch(`${app.url}/fast`)).status).toBe(200);
      shedder.close();
    });
  },
);

describe.each<Framework>(['express', 'koa', 'hono', 'fastify'])(
  'shed() in %s and shedGuard() in front of it, on one shedder',
  (framework) => {
    test('one request takes one slot, given back once', async () => {
      const shedder = createShedder({ limit: { initial: 2, min: 2, max: 2 }, reserve: { critical: 0, normal: 0 } });
      const app = await start(framework, shedder, true);
      try {
        const first = fetch(`${app.url}/slow`);
        await app.entered;
        expect(shedder.inFlight).toBe(1); // not 2: the gate inside the app saw the slot taken in front
        expect((await fetch(`${app.url}/fast`)).status).toBe(200);
        app.open();
        expect((await first).status).toBe(200);
        await until(() => shedder.inFlight, 0);
        await new Promise((resolve) => setTimeout(resolve, 20));
        expect(shedder.inFlight).toBe(0); // not -1
      } finally {
        app.open();
        await app.close();
        shedder.close();
      }
    });
  },
);

test('prometheusMetrics counts sheds by priority and reports the limit and slots in flight', async () => {
  const register = new Registry();
  const metrics = prometheusMetrics({ register });
  const shedder = createShedder({ limit: { initial: 1, min: 1, max: 1 } });
  try {
    const app = await start('express', shedder);
    const held = fetch(`${app.url}/slow`);
    await app.entered;
    expect((await fetch(`${app.url}/fast`)).status).toBe(503);
    expect((await fetch(`${app.url}/fast`, { headers: { 'x-priority': 'critical' } })).status).toBe(503);
    const value = async (name: string) => (await register.getSingleMetricAsString(name)).split('\n').filter((l) => !l.startsWith('#'));
    expect(await value('sluice_shed_total')).toEqual([
      'sluice_shed_total{shedder="default",priority="normal"} 1',
      'sluice_shed_total{shedder="default",priority="critical"} 1',
    ]);
    expect(await value('sluice_concurrency_limit')).toEqual(['sluice_concurrency_limit{shedder="default"} 1']);
    expect(await value('sluice_in_flight')).toEqual(['sluice_in_flight{shedder="default"} 1']);
    app.open();
    await held;
    await until(() => shedder.inFlight, 0);
    await new Promise((resolve) => setImmediate(resolve));
    expect(await value('sluice_in_flight')).toEqual(['sluice_in_flight{shedder="default"} 0']);
    await app.close();
  } finally {
    metrics.stop();
    shedder.close();
  }
});

test("several shedders: each one's gauges and sheds under its own name (the shedder label)", async () => {
  const register = new Registry();
  const metrics = prometheusMetrics({ register });
  const api = createShedder({ name: 'api', limit: { initial: 4, min: 4, max: 4 } });
  const admin = createShedder({ name: 'admin', limit: { initial: 1, min: 1, max: 1 } });
  try {
    const a = await start('koa', api);
    const b = await start('fastify', admin);
    const held = fetch(`${b.url}/slow`);
    await b.entered;
    expect((await fetch(`${b.url}/fast`)).status).toBe(503);
    expect((await fetch(`${a.url}/fast`)).status).toBe(200);
    await until(() => api.inFlight, 0);
    await new Promise((resolve) => setImmediate(resolve));
    const value = async (name: string) => (await register.getSingleMetricAsString(name)).split('\n').filter((l) => !l.startsWith('#'));
    expect(await value('sluice_shed_total')).toEqual(['sluice_shed_total{shedder="admin",priority="normal"} 1']);
    expect((await value('sluice_concurrency_limit')).sort()).toEqual([
      'sluice_concurrency_limit{shedder="admin"} 1',
      'sluice_concurrency_limit{shedder="api"} 4',
    ]);
    expect((await value('sluice_in_flight')).sort()).toEqual(['sluice_in_flight{shedder="admin"} 1', 'sluice_in_flight{shedder="api"} 0']);
    b.open();
    await held;
    await a.close();
    await b.close();
  } finally {
    metrics.stop();
    api.close();
    admin.close();
  }
});
