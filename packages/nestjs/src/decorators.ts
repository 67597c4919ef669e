// @RateLimit and @SkipRateLimit: metadata on a handler or a class, read by SluiceLimits (limits.ts).
import { SetMetadata } from '@nestjs/common';
import type { PolicyArgument, RateLimitOptions } from './options.js';

/** The metadata key of @RateLimit: `{ policy, ...options }`. */
export const RATE_LIMIT = 'sluice:rate-limit';
/** The metadata key of @SkipRateLimit. */
export const SKIP_RATE_LIMIT = 'sluice:skip-rate-limit';

/**
 * A limit of its own for a handler, or for each handler of a class (each counting on its own, under its route):
 * `policy`, and the module's options to replace (failMode, key, cost, ...). The handler's wins over its class's.
 * Bad options throw when the app initializes, naming the option.
 * @example @Post('login') @RateLimit('5/15m', { failMode: 'closed' }) login() {}
 */
export function RateLimit(policy: PolicyArgument, options: RateLimitOptions = {}): ClassDecorator & MethodDecorator {
  return SetMetadata(RATE_LIMIT, { ...options, policy });
}

/**
 * No limit for this handler, or for each handler of this class (unless a handler has a @RateLimit of its own):
 * the guard makes no decision, sets no header.
 * @example @Get('health') @SkipRateLimit() health() {}
 */
export function SkipRateLimit(): ClassDecorator & MethodDecorator {
  return SetMetadata(SKIP_RATE_LIMIT, true);
}
