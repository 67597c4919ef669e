// The documentation's code blocks, for the tests that run them (test/docs.test.ts describes the convention):
// reading them out of a page, a directory whose node_modules resolve @sluice/* to the built packages, and a
// server block started on a free port.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from './redis';

export const ROOT = join(__dirname, '..', '..');
export const PACKAGES = ['core', 'express', 'fastify', 'koa', 'hono', 'nestjs', 'metrics', 'cli', 'graphql'];
/** The built packages the blocks run against; SLUICE_DOCS_PACKAGES names a copy (a build of another checkout). */
export const BUILT = process.env.SLUICE_DOCS_PACKAGES ?? join(ROOT, 'packages');

export interface Block {
  file: string; // relative to the root
  line: number; // of the opening fence, 1-based
  lang: string;
  code: string;
  name?: string;
  fragmentOf?: string; // 'docs/page.md#name'
  skip?: string;
  /** A test file for this runner (`<!-- run with: jest -->`), run by it rather than by node. */
  runWith?: 'jest' | 'vitest';
}

/** The fenced blocks of one Markdown file, with the HTML comments right above each. */
export function extractBlocks(file: string, text: string): Block[] {
  const lines = text.split('\n');
  const blocks: Block[] = [];
  let comments: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const comment = /^\s*<!--\s*(.*?)\s*-->\s*$/.exec(line);
    if (comment) {
      comments.push(comment[1] as string);
      continue;
    }
    const fence = /^(\s*)(`{3,}|~{3,})\s*([\w-]*)(.*)$/.exec(line);
    if (!fence) {
      if (line.trim() !== '') comments = [];
      continue;
    }
    const [, indent = '', marks = '```', lang = ''] = fence;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length; i++) {
      const l = lines[i] as string;
      if (l.trim().startsWith(marks) && l.trim().replace(/[`~]/g, '') === '') break;
      body.push(l.startsWith(indent) ? l.slice(indent.length) : l.trimStart());
    }
    const block: Block = { file, line: start + 1, lang: lang.toLowerCase(), code: `${body.join('\n')}\n` };
    for (const c of comments) {
      const m = /^(name|fragment of|not run|run with):\s*(.+)$/.exec(c);
      if (m?.[1] === 'name') block.name = m[2];
      if (m?.[1] === 'fragment of') block.fragmentOf = m[2];
      if (m?.[1] === 'not run') block.skip = m[2];
      if (m?.[1] === 'run with' && (m[2] === 'jest' || m[2] === 'vitest')) block.runWith = m[2];
    }
    blocks.push(block);
    comments = [];
  }
  return blocks;
}

/** A run dir whose node_modules resolve @sluice/* to the built packages and the metrics peers; the rest from the root. */
export function runDir(): string {
  const base = join(ROOT, '.docs-test');
  mkdirSync(base, { recursive: true });
  const dir = mkdtempSync(join(base, 'run-'));
  mkdirSync(join(dir, 'node_modules', '@sluice'), { recursive: true });
  for (const pkg of PACKAGES) symlinkSync(join(BUILT, pkg), join(dir, 'node_modules', '@sluice', pkg), 'dir');
  const peers = join(BUILT, 'metrics', 'node_modules');
  for (const peer of readdirSync(peers)) if (peer !== '@sluice') symlinkSync(join(peers, peer), join(dir, 'node_modules', peer), 'dir');
  writeFileSync(join(dir, 'package.json'), '{ "type": "module", "private": true }\n');
  return dir;
}

/** A server block running on a free port, and its answer to `GET /`: its `status`, or why there is none. */
export interface ServerBlock {
  url: string;
  status?: number;
  error?: string;
  /** The end of what it printed. */
  output(): string;
  stop(): Promise<void>;
}

/** Starts a server block with PORT set, and waits (up to 20 s) for it to answer `GET /`. */
export async function startServerBlock(file: string, env: NodeJS.ProcessEnv, cwd: string): Promise<ServerBlock> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(process.execPath, [file], {
    cwd,
    env: { ...env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d) => (out += d));
  child.stderr?.on('data', (d) => (out += d));
  let exited: number | null | undefined;
  child.on('exit', (code) => (exited = code));
  const output = () => out.slice(-2000);
  const stop = async () => {
    if (exited !== undefined) return;
    const gone = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await gone;
  };
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (exited !== undefined) return { url, error: `exited (${exited}) before answering on PORT ${port}:\n${output()}`, output, stop };
    try {
      const res = await fetch(`${url}/`, { signal: AbortSignal.timeout(2000) });
      await res.arrayBuffer();
      return { url, status: res.status, output, stop };
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return { url, error: `no answer on PORT ${port} within 20 s:\n${output()}`, output, stop };
}
