// A request that carries X-Forwarded-For while the framework does not trust proxies is
// keyed on the proxy's address. Each middleware reports it once (an event and a console warning naming the
// framework's fix and a docs page), never when proxies are trusted or when `key` is the user's. Real servers.
import type { AddressInfo } from 'node:net';
import type { LimiterEvent } from '@sluice/core';
import fastifyRateLimit from '@sluice/fastify';
import Fastify from 'fastify';
import { harnesses, type Running } from './support/http';

const open: Running[] = [];
let warn: jest.SpyInstance;
beforeEach(() => {
  warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
});
afterEach(async () => {
  warn.mockRestore();
  await Promise.all(open.splice(0).map((r) => r.close()));
});

const FIX = {
  express: /app\.set\('trust proxy', 1\)/,
  fastify: /Fastify\(\{ trustProxy: '10\.0\.0\.0\/8' \}\) \(the proxies' addresses or CIDR ranges, not a hop count\)/,
  koa: /app\.proxy = true/,
  hono: /rateLimit\(\{ getIP: \(c\) => \.\.\. \}\)/,
};

describe.each(harnesses.map((h) => [h.name, h] as const))('%s: the X-Forwarded-For warning', (name, harness) => {
  async function start(options: { trustProxy?: boolean; key?: boolean } = {}) {
    const events: LimiterEvent[] = [];
    const app: Record<string, unknown> = { policy: '100/1m', onEvent: (e: LimiterEvent) => events.push(e) };
    if (options.key) app.key = () => 'k';
    const running = await harness.start({ app, routes: [{ method: 'GET', path: '/r' }], trustProxy: options.trustProxy });
    open.push(running);
    return { running, events: () => events.filter((e) => e.type === 'forwarded-untrusted') };
  }

  it('reports once per middleware, an event and a warning naming the fix and the docs', async () => {
    const { running, events } = await start();
    expect((await running.request.get('/r')).status).toBe(200);
    expect(events()).toHaveLength(0);
    for (let i = 0; i < 3; i++) expect((await running.request.get('/r').set('X-Forwarded-For', `203.0.113.${i}`)).status).toBe(200);
    expect(events()).toHaveLength(1);
    const message = events()[0]?.error?.message ?? '';
    expect(message).toMatch(FIX[name]);
    expect(message).toMatch(/X-Forwarded-For/);
    expect(message).toMatch(/docs\/(migrating\/.+|hono\.md)#behind-a-proxy/);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0]?.[0]).toBe(message);
  });

  it('is silent when the framework trusts proxies', async () => {
    const { running, events } = await start({ trustProxy: true });
    expect((await running.request.get('/r').set('X-Forwarded-For', '203.0.113.9')).status).toBe(200);
    expect(events()).toHaveLength(0);
    expect(warn).not.toHaveBeenCalled();
  });

  it("is silent when the key is the app's own", async () => {
    const { running, events } = await start({ key: true });
    expect((await running.request.get('/r').set('X-Forwarded-For', '203.0.113.9')).status).toBe(200);
    expect(events()).toHaveLength(0);
    expect(warn).not.toHaveBeenCalled();
  });
});

describe('fastify: trustProxy as a hop count', () => {
  it('warns when trustProxy is a hop count, which Fastify 5 reads as trusting no proxy', async () => {
    const events: LimiterEvent[] = [];
    // Fastify 5.12.1 and later trust no hop for a number (a hop count cannot check the peer); its types refuse one.
    const app = Fastify({ trustProxy: 1 as unknown as boolean });
    await app.register(fastifyRateLimit, { policy: '100/1m', onEvent: (e) => events.push(e) });
    app.get('/r', async (request) => request.ip);
    await app.listen({ port: 0, host: '127.0.0.1' });
    open.push({ close: () => app.close() } as Running);
    const { port } = app.server.address() as AddressInfo;
    const res = await fetch(`http://127.0.0.1:${port}/r`, { headers: { 'x-forwarded-for': '203.0.113.9' } });
    expect(await res.text()).toBe('127.0.0.1'); // keyed on the proxy's address
    const warnings = events.filter((e) => e.type === 'forwarded-untrusted');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.error?.message).toMatch(FIX.fastify);
    expect(warn).toHaveBeenCalledTimes(1);
  });
});
