// The tests' door to the Redis harness they share with the benchmarks (./redis-harness.mjs, plain ESM so that
// bench/*.mjs run it without a build): `import { startRedis, startCluster, ... } from './support/redis'`.
export * from './redis-harness.mjs';
