// The module's and the decorators' options: their types, and the module's resolved once, at registration.
import type { ExecutionContext } from '@nestjs/common';
import { memoryStore, type PolicyInput } from '@sluice/core';
import { badOption, type HttpLimit, type HttpLimitOptions, httpLimit, isBoolean, nearest, resolve, spec } from '@sluice/core/adapter';
import { FORWARDED } from './context.js';

/** What a policy option takes: one policy, several, or a function of the context that returns them (per plan). */
export type PolicyArgument =
  | PolicyInput
  | PolicyInput[]
  | ((ctx: ExecutionContext) => PolicyInput | PolicyInput[] | Promise<PolicyInput | PolicyInput[]>);

/**
 * Options of SluiceModule.forRoot: every createLimiter option or `limiter`, and the common adapter options, their
 * functions taking Nest's ExecutionContext (`key: (ctx) => ctx.switchToHttp().getRequest().user.id`). A `policy`
 * (or `limiter`) here limits every handler without a @RateLimit of its own, one counter per client for the
 * whole app; without one, only handlers with @RateLimit are limited.
 */
export type SluiceModuleOptions = HttpLimitOptions<ExecutionContext> & {
  /** Registers SluiceGuard as a global guard (APP_GUARD); false: apply it with @UseGuards(SluiceGuard). Default true. */
  global?: boolean;
};

/** Options of @RateLimit: the module's options to replace for this handler or class (failMode, key, cost, ...). */
export type RateLimitOptions = Omit<HttpLimitOptions<ExecutionContext>, 'policy'>;

/** One handler's limit. */
export type Limit = HttpLimit<ExecutionContext>;

/** The module's options, resolved: its limit (when it has a policy), and what each @RateLimit is merged over. */
export interface SluiceSettings {
  /** The module's options, with the store every handler's limiter shares. */
  options: HttpLimitOptions<ExecutionContext>;
  /** The app-wide limit, when the module has a policy or a limiter. */
  limit: Limit | undefined;
}

/** The injection token of the module's resolved options. */
export const SLUICE_SETTINGS = Symbol('sluice settings');

const MODULE_OWN = { global: spec(isBoolean, true) };

/** The module's own option, `global`, checked: true unless given false. */
export function isGlobal(given: SluiceModuleOptions | { global?: boolean }): boolean {
  if (given === null || typeof given !== 'object') badOption('options', 'an object', given);
  return resolve(MODULE_OWN, given).global;
}

/** Resolves the module's options (bad ones throw here, naming the option). */
export function settingsOf(given: SluiceModuleOptions): SluiceSettings {
  isGlobal(given);
  const { global: _global, ...options } = given;
  // The kit knows its names, not the module's own: a near miss of `global` is named here.
  for (const name of Object.keys(options)) {
    if (nearest(name, ['global']) !== undefined) badOption(name, 'absent: not a module option (did you mean global?)', name);
  }
  // Every handler's limiter counts in one store: a memory store made once when none is given.
  if (options.store === undefined && options.limiter === undefined) options.store = memoryStore();
  const limited = options.policy !== undefined || options.limiter !== undefined;
  // Checked now even without a policy: a bad option is refused at registration, not at the first @RateLimit.
  const limit = httpLimit<ExecutionContext>(limited ? options : { ...options, policy: '1/1s' }, { forwarded: FORWARDED });
  return { options, limit: limited ? limit : undefined };
}
