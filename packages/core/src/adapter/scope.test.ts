// The default counters' names are store keys, and docs/frameworks.md and the CLI's --scope spell them: pinned here.
import { routeScope } from './scope.js';

describe('routeScope', () => {
  it.each([
    ['a route: its method and pattern', routeScope('POST', '/login'), 'POST /login'],
    ['a route with a parameter', routeScope('GET', '/items/:id'), 'GET /items/:id'],
    ['Express at the root of an app', routeScope(undefined, ''), '* '],
    ['Express under a mount', routeScope(undefined, '/api'), '* /api'],
    ['Koa without a route', routeScope(), '*'],
  ])('%s', (_case, scope, expected) => {
    expect(scope).toBe(expected);
  });
});
