import type { Config } from 'jest';
import base from './jest.config';

// `pnpm test:unit`: the tests that need no Redis, no server and no build, in seconds. The unit tests beside
// the code (packages/*/src) and the few of test/ that read files or drive the code in memory; every other
// file of test/ starts a Redis, a server or a child process (`pnpm test` runs them all).
const config: Config = {
  ...base,
  displayName: { name: 'unit', color: 'green' },
  testMatch: ['<rootDir>/packages/*/src/**/*.test.ts', '<rootDir>/test/@(api-reference|history-free|lua-static|metrics).test.ts'],
};

export default config;
