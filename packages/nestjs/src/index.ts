// @sluice/nestjs: SluiceModule, SluiceGuard, @RateLimit and @SkipRateLimit for NestJS 10 and 11 (controllers on
// platform-express and platform-fastify, WebSocket gateways, GraphQL resolvers), and sluiceThrottlerStorage for
// apps that keep @nestjs/throttler.
export type { Decision } from '@sluice/core';
export { RateLimit, SkipRateLimit } from './decorators.js';
export { RateLimitedException } from './exception.js';
export { SluiceGuard } from './guard.js';
export { SluiceModule, type SluiceModuleAsyncOptions } from './module.js';
export type { PolicyArgument, RateLimitOptions, SluiceModuleOptions } from './options.js';
export { type SluiceThrottlerStorageOptions, sluiceThrottlerStorage, type ThrottlerStorageRecord } from './throttler-storage.js';
