// A CommonJS app: the packages come in by their "require" conditions.
const exercise = require('./exercise.cjs');

const names = [
  '@sluice/core',
  '@sluice/core/adapter',
  '@sluice/express',
  '@sluice/fastify',
  '@sluice/koa',
  '@sluice/hono',
  '@sluice/graphql',
];
const resolved = Object.fromEntries(names.map((name) => [name, require.resolve(name)]));
const [core, express, fastify, koa, hono, graphql] = [
  '@sluice/core',
  '@sluice/express',
  '@sluice/fastify',
  '@sluice/koa',
  '@sluice/hono',
  '@sluice/graphql',
].map((name) => require(name));
exercise({ core, express, fastify, koa, hono, graphql, resolved }).then((out) => console.log(JSON.stringify(out)));
