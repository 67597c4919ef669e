// The default counters' names are store keys, and docs/frameworks.md and the CLI's --scope spell them: pinned here.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { routeScope } from './scope.js';

describe('routeScope', () => {
  it.each([
    ['a route: its method and pattern', routeScope('POST', '/login'), 'POST /login'],
    ['a route with a parameter', routeScope('GET', '/items/:id'), 'GET /items/:id'],
    ['Express at the root of an app: as Koa', routeScope(undefined, ''), '*'],
    ['Express under a mount', routeScope(undefined, '/api'), '* /api'],
    ['Koa without a route', routeScope(), '*'],
  ])('%s', (_case, scope, expected) => {
    expect(scope).toBe(expected);
  });

  it.each(['docs/frameworks.md', 'docs/cli.md'])('%s names the app-level scopes of Express and Koa as they are built', (page) => {
    const text = readFileSync(join(__dirname, '../../../..', page), 'utf8');
    const row = (middleware: string) => text.split('\n').find((line) => line.startsWith(`| ${middleware} `)) ?? '';
    expect(row('Express `app.use(rateLimit())`')).toContain(`\`'${routeScope(undefined, '')}'\` at the root`);
    expect(row('Express `app.use(rateLimit())`')).toContain(`\`'${routeScope(undefined, '/api')}'\` under \`app.use('/api', ...)\``);
    expect(row('Koa `app.use(rateLimit())`')).toContain(`\`'${routeScope()}'\``);
  });
});
