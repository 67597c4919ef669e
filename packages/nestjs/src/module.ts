// SluiceModule: registers the module's options (resolved at registration), the limits of every handler, and
// the guard, global (APP_GUARD) unless `global: false`. The module is global: @UseGuards(SluiceGuard) works in
// any module of the app.
import { type DynamicModule, Module, type Provider } from '@nestjs/common';
import { APP_GUARD, DiscoveryModule } from '@nestjs/core';
import { SluiceGuard } from './guard.js';
import { SluiceLimits } from './limits.js';
import { isGlobal, SLUICE_SETTINGS, type SluiceModuleOptions, settingsOf } from './options.js';

/** Options of SluiceModule.forRootAsync: the module's options from a factory, with its imports and injections. */
export interface SluiceModuleAsyncOptions {
  /** Modules whose providers the factory injects (a ConfigModule). Default none. */
  imports?: DynamicModule['imports'];
  /** The providers to inject into useFactory, in order. Default none. */
  inject?: NonNullable<Extract<Provider, { useFactory: unknown }>['inject']>;
  /** Returns the module's options (SluiceModule.forRoot's but `global`); may be async. */
  useFactory: (...args: never[]) => Omit<SluiceModuleOptions, 'global'> | Promise<Omit<SluiceModuleOptions, 'global'>>;
  /** As forRoot's: registers SluiceGuard as a global guard. Default true. */
  global?: boolean;
}

/**
 * The sluice module. forRoot resolves its options at once (a bad one throws here, naming it); forRootAsync when the
 * factory has run. With a `policy`, every handler without a @RateLimit of its own counts on one counter per client.
 * @example @Module({ imports: [SluiceModule.forRoot({ policy: '100/1m', store: redisStore({ client }) })] })
 */
// biome-ignore lint/complexity/noStaticOnlyClass: a Nest module is a class, its forRoot and forRootAsync static (Nest's convention)
export class SluiceModule {
  /**
   * The module with `options`: createLimiter's, the adapter options (their functions take the ExecutionContext),
   * and `global` (default true).
   * @example SluiceModule.forRoot({ policy: '100/1m', store })
   */
  static forRoot(options: SluiceModuleOptions = {}): DynamicModule {
    const settings = settingsOf(options);
    return moduleOf(isGlobal(options), { provide: SLUICE_SETTINGS, useValue: settings });
  }

  /**
   * The module with options made by `useFactory`, which can inject providers (a ConfigService, a Redis client).
   * @example SluiceModule.forRootAsync({ imports: [ConfigModule], inject: [ConfigService], useFactory: (config: ConfigService) => ({ policy: config.get('RATE') }) })
   */
  static forRootAsync(options: SluiceModuleAsyncOptions): DynamicModule {
    const global = isGlobal(options);
    const { useFactory, inject = [], imports = [] } = options;
    if (typeof useFactory !== 'function') throw new TypeError('SluiceModule.forRootAsync: useFactory must be a function');
    const provider: Provider = {
      provide: SLUICE_SETTINGS,
      useFactory: async (...args: never[]) => settingsOf({ ...(await useFactory(...args)) }),
      inject,
    };
    return moduleOf(global, provider, imports);
  }
}

Module({})(SluiceModule);

function moduleOf(global: boolean, settings: Provider, imports: NonNullable<DynamicModule['imports']> = []): DynamicModule {
  const providers: Provider[] = [settings, SluiceLimits, SluiceGuard];
  if (global) providers.push({ provide: APP_GUARD, useExisting: SluiceGuard });
  return {
    module: SluiceModule,
    global: true,
    imports: [DiscoveryModule, ...imports],
    providers,
    exports: [SLUICE_SETTINGS, SluiceLimits, SluiceGuard],
  };
}
