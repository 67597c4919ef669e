// Packs every package as npm would publish it, into dist-packages/ (or --into DIR), and prints the
// `npm install` lines that install the tarballs in an app: the packages are not on the npm registry yet.
// Run through `pnpm pack:all`, which builds first; the packages are packed as built (no `prepack`).
// test/packages.test.ts packs with it, and installs the Express line into a new app.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = fileURLToPath(new URL('..', import.meta.url));
const PACKAGES = ['core', 'express', 'fastify', 'koa', 'hono', 'nestjs', 'graphql', 'metrics', 'cli'];
/** What an app installs beside @sluice/core, for each use. */
const USES = [
  ['Express', 'express', ['express']],
  ['Fastify', 'fastify', ['fastify']],
  ['Koa', 'koa', ['koa', '@koa/router']],
  ['Hono', 'hono', ['hono', '@hono/node-server']],
  ['NestJS', 'nestjs', ['@nestjs/common', '@nestjs/core', '@nestjs/platform-express', 'reflect-metadata', 'rxjs']],
  ['GraphQL cost budgets (Yoga, Apollo Server, Mercurius)', 'graphql', ['graphql']],
  ['Prometheus metrics (beside an adapter)', 'metrics', ['prom-client']],
  ['the sluice command', 'cli', []],
];

for (const pkg of PACKAGES) {
  if (!existsSync(join(root, 'packages', pkg, 'dist', 'esm', 'index.js'))) {
    console.error(`packages/${pkg} is not built: run pnpm pack:all (it builds first), or pnpm build`);
    process.exit(1);
  }
}
const { values } = parseArgs({ options: { into: { type: 'string', default: join(root, 'dist-packages') } } });
const into = resolve(values.into);
mkdirSync(into, { recursive: true });
for (const file of readdirSync(into)) if (/^sluice-.*\.tgz$/.test(file)) rmSync(join(into, file));

// pnpm passes its settings to scripts as npm_config_* variables; pnpm pack must not take the caller's.
const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)));
const pack = (pkg) =>
  new Promise((done, fail) => {
    const args = ['pack', '--config.ignore-scripts=true', '--json', '--pack-destination', into];
    execFile('pnpm', args, { cwd: join(root, 'packages', pkg), env, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error) fail(new Error(`pnpm pack in packages/${pkg} failed: ${stderr || error.message}`));
      else done([pkg, JSON.parse(stdout).filename]);
    });
  });
const tarballs = new Map(await Promise.all(PACKAGES.map(pack)));

/** A path as a shell word: quoted when it holds anything but the usual path characters. */
const word = (text) => (/^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", "'\\''")}'`);
const lines = [`Packed ${tarballs.size} packages into ${into}. In your app, run the line for what you use:`];
for (const [use, pkg, peers] of USES) {
  lines.push(`# ${use}`, ['npm install', word(tarballs.get('core')), word(tarballs.get(pkg)), ...peers].join(' '));
}
console.log(lines.join('\n'));
