import type { Config } from 'jest';

const config: Config = {
  testEnvironment: 'node',
  roots: ['<rootDir>/packages', '<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  moduleFileExtensions: ['ts', 'cts', 'js', 'cjs', 'mjs', 'json'],
  transform: {
    // NestJS apps in tests are written with decorators: legacy ones with their parameter types, as Nest reads them.
    '/test/(support/)?[^/]*nestjs[^/]*\\.ts$': [
      '@swc/jest',
      {
        jsc: {
          target: 'es2022',
          parser: { syntax: 'typescript', decorators: true },
          transform: { legacyDecorator: true, decoratorMetadata: true },
        },
        module: { type: 'commonjs' },
      },
    ],
    '^.+\\.c?ts$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } }],
    // The Redis harness is plain ESM shared with bench/ (test/support/redis-harness.mjs): compiled to CommonJS like the tests.
    '^.+\\.mjs$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'ecmascript' } }, module: { type: 'commonjs' } }],
    // Mercurius requires @fastify/static, which requires content-disposition 3, an ES module: Node 20.19+
    // requires it natively, Jest's module system does not, so it is compiled to CommonJS too.
    '/content-disposition/.+\\.js$': [
      '@swc/jest',
      { jsc: { target: 'es2022', parser: { syntax: 'ecmascript' } }, module: { type: 'commonjs' } },
    ],
  },
  transformIgnorePatterns: ['/node_modules/(?!(\\.pnpm/content-disposition@[^/]+/node_modules/)?content-disposition/)'],
  moduleNameMapper: {
    '^@sluice/core/adapter$': '<rootDir>/packages/core/src/adapter.ts',
    '^@sluice/core/testing$': '<rootDir>/packages/core/src/testing.ts',
    '^@sluice/(core|express|fastify|hono|koa|metrics|cli|graphql|nestjs)$': '<rootDir>/packages/$1/src/index.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
    // @sluice/metrics imports its .cts source (src/peer.cts) by the name of its output, './peer.cjs'.
    '^\\./peer\\.cjs$': './peer.cts',
  },
  testTimeout: 30_000,
  maxWorkers: 2,
};

export default config;
