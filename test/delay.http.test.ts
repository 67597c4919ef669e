// The adapters' `delay` on real servers, in all three frameworks: a limited request is held
// until its turn and answered as an allowed one, when its turn comes within maxWait and fewer than maxQueued
// are held; else 429 at once. A client that leaves while held gives its place back. Timing margins are
// wide: a turn is never early, and may be late on a busy machine.
import { harnesses, type Running } from './support/http';

const open: Running[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((r) => r.close()));
});

describe.each(harnesses.map((h) => [h.name, h] as const))('%s: delay', (_name, harness) => {
  async function start(policy: unknown, delay: unknown): Promise<Running> {
    const running = await harness.start({ app: { policy, key: () => 'client', delay }, routes: [{ method: 'GET', path: '/r' }] });
    open.push(running);
    return running;
  }
  const get = (running: Running, signal?: AbortSignal) => fetch(`${running.url}/r`, { signal });

  it('holds a limited request until its turn, then answers it as an allowed one', async () => {
    const running = await start({ limit: 2, window: '1s' }, { maxWait: '2s' });
    const t0 = performance.now();
    expect((await get(running)).status).toBe(200);
    expect((await get(running)).status).toBe(200);
    const held = await get(running);
    const waited = performance.now() - t0;
    expect(held.status).toBe(200);
    expect(held.headers.get('retry-after')).toBeNull();
    expect(held.headers.get('ratelimit')).toMatch(/r=0/);
    // The third's turn is half a second after the first (2 per second).
    expect(waited).toBeGreaterThanOrEqual(450);
    expect(waited).toBeLessThan(2000);
  });

  it('answers 429 at once when the turn is past maxWait', async () => {
    const running = await start({ limit: 1, window: '1s' }, { maxWait: '200ms' });
    expect((await get(running)).status).toBe(200);
    const t0 = performance.now();
    const refused = await get(running);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(performance.now() - t0).toBeLessThan(900);
  });

  it('answers 429 when maxQueued requests are already held', async () => {
    const running = await start({ limit: 1, window: '1s' }, { maxWait: '5s', maxQueued: 1 });
    expect((await get(running)).status).toBe(200);
    const first = get(running);
    await new Promise((r) => setTimeout(r, 100));
    // One held already: the next is answered at once.
    expect((await get(running)).status).toBe(429);
    expect((await first).status).toBe(200);
  });

  it('a client that leaves while held gives its place back', async () => {
    // One every 2 s: a place given back or not is 2 s apart, wider than a busy machine's delays.
    const running = await start({ limit: 1, window: '2s' }, { maxWait: '10s' });
    const t0 = performance.now();
    expect((await get(running)).status).toBe(200);
    const controller = new AbortController();
    const leaving = get(running, controller.signal).catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 150));
    controller.abort();
    expect(await leaving).toMatchObject({ name: 'AbortError' });
    await new Promise((r) => setTimeout(r, 100));
    // Its place (2 s after the first) is free again: this one's turn is 2 s after t0, not 4 s.
    const next = await get(running);
    expect(next.status).toBe(200);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(1950);
    expect(performance.now() - t0).toBeLessThan(3800);
  });

  it('refuses a bad delay at construction, naming the option', async () => {
    await expect(harness.create({ policy: '1/s', delay: { maxWait: -1 } })).rejects.toMatchObject({
      code: 'ERR_SLUICE_OPTION',
      message: expect.stringContaining('delay.maxWait'),
    });
    await expect(harness.create({ policy: '1/s', delay: { maxWait: '1s', maxQueued: 0 } })).rejects.toMatchObject({
      message: expect.stringContaining('delay.maxQueued'),
    });
    await expect(harness.create({ policy: '1/s', delay: { wait: '1s' } })).rejects.toMatchObject({ code: 'ERR_SLUICE_OPTION' });
  });
});
