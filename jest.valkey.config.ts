import type { Config } from 'jest';
import base from './jest.config';

// `pnpm test:valkey`: the Redis-backed suites again, on Valkey (the harness' SLUICE_SERVER; .ci/run runs
// them after `pnpm test`, docs/redis.md's Servers). They are the files whose names say which servers they
// start: standalone (*.redis), Cluster (*.cluster), Sentinel and the clients' contract (clients.*), the
// faults among them (faults.*.redis). The jest workers inherit the variable set here.
process.env.SLUICE_SERVER = 'valkey';

const config: Config = {
  ...base,
  displayName: { name: 'valkey', color: 'magenta' },
  testMatch: ['**/*.@(redis|cluster|sentinel|standalone).test.ts'],
};

export default config;
