// docs/login.md's three servers, started from the page's own blocks (built packages, real HTTP), each held
// to the page's table "What a client sees": a login without a username is a 400 (never the 500 of a key that
// cannot be made), a username's 6th attempt a 429 however the name is written, an address's 21st a 429.
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BUILT, extractBlocks, PACKAGES, ROOT, runDir, type ServerBlock, startServerBlock } from './support/doc-blocks';

jest.setTimeout(60_000);

const PAGE = 'docs/login.md';
const blocks = extractBlocks(PAGE, readFileSync(join(ROOT, PAGE), 'utf8'));

describe.each(['express', 'fastify', 'koa'])(`${PAGE}: the %s block`, (name) => {
  let dir: string;
  let server: ServerBlock;
  let attempts = 0;

  /** POST /login from this test's one address; counts every attempt, which the per-IP limit counts too. */
  async function login(body: unknown, contentType = 'application/json'): Promise<Response> {
    attempts++;
    const init: RequestInit = { method: 'POST' };
    if (body !== undefined) {
      init.headers = { 'content-type': contentType };
      init.body = typeof body === 'string' ? body : JSON.stringify(body);
    }
    const res = await fetch(`${server.url}/login`, init);
    await res.arrayBuffer();
    return res;
  }

  beforeAll(async () => {
    for (const pkg of PACKAGES) if (!existsSync(join(BUILT, pkg, 'dist'))) throw new Error(`run pnpm build first: ${pkg}`);
    const block = blocks.find((b) => b.name === name);
    if (block === undefined) throw new Error(`${PAGE} has no block named ${name}`);
    dir = runDir();
    const file = join(dir, `login-${name}.mjs`);
    writeFileSync(file, block.code);
    server = await startServerBlock(file, { ...process.env, NODE_ENV: 'test' }, dir);
    if (server.status !== 200) throw new Error(server.error ?? `GET / answered ${server.status}`);
  });
  afterAll(async () => {
    await server?.stop();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('answers a login without a username 400, not 500', async () => {
    const statuses = [
      await login(undefined), // no body
      await login('alice', 'text/plain'), // not JSON
      await login({ password: 'x' }),
      await login({ username: '', password: 'x' }),
      await login({ username: '   ', password: 'x' }),
    ].map((r) => r.status);
    expect(statuses).toEqual([400, 400, 400, 400, 400]);
  });

  it("refuses a username's 6th attempt within 15 minutes, however the name is written, with Retry-After", async () => {
    const spellings = ['bob', 'Bob', ' bob', 'BOB ', 'bob'];
    for (const username of spellings) expect((await login({ username, password: 'wrong' })).status).toBe(401);
    const sixth = await login({ username: 'bob', password: 'wrong' });
    expect(sixth.status).toBe(429);
    expect(Number(sixth.headers.get('retry-after'))).toBeGreaterThan(0);
    // Another account from the same address is not refused.
    expect((await login({ username: 'alice', password: 'correct horse battery staple' })).status).toBe(200);
  });

  it("refuses an address's 21st attempt within 15 minutes, whatever the usernames", async () => {
    let first429: number | undefined;
    for (let i = 0; first429 === undefined && attempts < 30; i++) {
      const res = await login({ username: `user${i}`, password: 'wrong' });
      if (res.status === 429) first429 = attempts;
      else expect(res.status).toBe(401);
    }
    expect(first429).toBe(21);
  });
});
