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
  '@sluice/nestjs',
];
const resolved = Object.fromEntries(names.map((name) => [name, require.resolve(name)]));
const [core, express, fastify, koa, hono, graphql, nestjs] = [
  '@sluice/core',
  '@sluice/express',
  '@sluice/fastify',
  '@sluice/koa',
  '@sluice/hono',
  '@sluice/graphql',
  '@sluice/nestjs',
].map((name) => require(name));
exercise({ core, express, fastify, koa, hono, graphql, nestjs, resolved }).then((out) => console.log(JSON.stringify(out)));
