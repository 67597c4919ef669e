// Which limit each handler has: its @RateLimit merged over the module's options, its class's, the module's
// own, or none (@SkipRateLimit, or a module without a policy). Made once per handler, every one of them when
// the app initializes, so that a bad @RateLimit option throws then, naming the option.
import type { OnModuleInit } from '@nestjs/common';
import { Inject, Injectable } from '@nestjs/common';
import { DiscoveryService, Reflector } from '@nestjs/core';
import { httpLimit, mergeHttpOptions } from '@sluice/core/adapter';
import { FORWARDED } from './context.js';
import { RATE_LIMIT, SKIP_RATE_LIMIT } from './decorators.js';
import { type Limit, SLUICE_SETTINGS, type SluiceSettings } from './options.js';

// biome-ignore lint/complexity/noBannedTypes: handlers and classes are any functions, as Nest's Reflector takes them
type Fn = Function;

/** One handler's limit: its own (counting under its route) or the module's (one counter for the app). */
export interface HandlerLimit {
  limit: Limit;
  /** True for a @RateLimit's: the counter is the handler's route; else the app's. */
  routed: boolean;
}

/** The limit of every handler, by class and handler. */
export class SluiceLimits implements OnModuleInit {
  private readonly byClass = new Map<Fn, Map<Fn, HandlerLimit | null>>();

  constructor(
    private readonly settings: SluiceSettings,
    private readonly reflector: Reflector,
    private readonly discovery: DiscoveryService,
  ) {}

  /** Makes the limit of every handler of every controller, gateway and resolver now: a bad option throws here. */
  onModuleInit(): void {
    for (const wrapper of [...this.discovery.getControllers(), ...this.discovery.getProviders()]) {
      const { instance, metatype } = wrapper;
      if (instance === null || typeof instance !== 'object' || typeof metatype !== 'function') continue;
      for (
        let proto = Object.getPrototypeOf(instance);
        proto !== null && proto !== Object.prototype;
        proto = Object.getPrototypeOf(proto)
      ) {
        for (const name of Object.getOwnPropertyNames(proto)) {
          const handler = Object.getOwnPropertyDescriptor(proto, name)?.value;
          if (name !== 'constructor' && typeof handler === 'function') this.of(metatype, handler);
        }
      }
    }
  }

  /** The limit of `handler` of `classRef`; null when it has none. */
  of(classRef: Fn, handler: Fn): HandlerLimit | null {
    let handlers = this.byClass.get(classRef);
    if (handlers === undefined) {
      handlers = new Map();
      this.byClass.set(classRef, handlers);
    }
    let found = handlers.get(handler);
    if (found === undefined) {
      found = this.make(classRef, handler);
      handlers.set(handler, found);
    }
    return found;
  }

  private make(classRef: Fn, handler: Fn): HandlerLimit | null {
    // The handler's decorators first: its own @RateLimit or @SkipRateLimit wins over its class's.
    for (const target of [handler, classRef]) {
      if (this.reflector.get<boolean | undefined>(SKIP_RATE_LIMIT, target) === true) return null;
      const own = this.reflector.get<Record<string, unknown> | undefined>(RATE_LIMIT, target);
      if (own !== undefined)
        return { limit: httpLimit(mergeHttpOptions(this.settings.options, own), { forwarded: FORWARDED }), routed: true };
    }
    return this.settings.limit === undefined ? null : { limit: this.settings.limit, routed: false };
  }
}

Injectable()(SluiceLimits);
Inject(SLUICE_SETTINGS)(SluiceLimits, undefined, 0);
Inject(Reflector)(SluiceLimits, undefined, 1);
Inject(DiscoveryService)(SluiceLimits, undefined, 2);
