// costLimit's options: their types, their table (each check and default once), and their resolution at
// construction. A bad option throws ERR_SLUICE_OPTION here, never at request time.
import type { Limiter } from '@sluice/core';
import { badOption, isFunction, resolve, spec } from '@sluice/core/adapter';

/** The costs the schema's directives do not set. */
export interface CostWeights {
  /** What an object costs (a field that returns an object type, interface or union), >= 0. Default 1. */
  object?: number;
  /** What a scalar or an enum costs, >= 0. Default 0. */
  scalar?: number;
  /** How many items a list is taken to hold when no slicing argument nor `@listSize(assumedSize)` says, an integer >= 0. Default 10. */
  defaultListSize?: number;
}

/** The options of costLimit, for a server whose GraphQL context is `Context`. */
export interface CostLimitOptions<Context = Record<string, unknown>> {
  /** The budget: a limiter whose policy is in points (`createLimiter({ policy: '1000/1m' })`). Required. */
  limiter: Limiter;
  /** The budget's owner, from the server's GraphQL context (a user id, an API key, an IP); may be async. Required. */
  key: (context: Context) => string | Promise<string>;
  /** An operation whose requested cost is above it is refused before it runs, charged nothing; > 0. Default: the budget's capacity. */
  maxCost?: number;
  /** The costs of objects, scalars and lists the schema's directives do not set. Default `{ object: 1, scalar: 0, defaultListSize: 10 }`. */
  cost?: CostWeights;
}

/** The weights, resolved. */
export type Weights = Required<CostWeights>;

/** The options, resolved. */
export interface Settings<Context> {
  limiter: Limiter;
  key: (context: Context) => string | Promise<string>;
  maxCost: number | undefined;
  weights: Weights;
}

/** The largest cost sluice charges (its largest limit): a requested cost above it is refused as invalid. */
export const COST_MAX = 1e12;

const isLimiter = (value: unknown, name: string): Limiter => {
  const v = value as Partial<Limiter> | null;
  if (typeof v !== 'object' || v === null || typeof v.consume !== 'function' || typeof v.peek !== 'function') {
    badOption(name, 'a Limiter from createLimiter()', value);
  }
  return value as Limiter;
};

const isWeight = (value: unknown, name: string): number => {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > COST_MAX)
    badOption(name, 'a number from 0 to 1e12', value);
  return value;
};

const isListSize = (value: unknown, name: string): number => {
  if (!Number.isSafeInteger(value) || (value as number) < 0 || (value as number) > COST_MAX)
    badOption(name, 'an integer from 0 to 1e12', value);
  return value as number;
};

const isMaxCost = (value: unknown, name: string): number => {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value > COST_MAX)
    badOption(name, 'a number above 0, at most 1e12', value);
  return value;
};

const WEIGHTS = { object: spec(isWeight, 1), scalar: spec(isWeight, 0), defaultListSize: spec(isListSize, 10) };

const isWeights = (value: unknown, name: string): Weights => {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    badOption(name, 'an object { object, scalar, defaultListSize }', value);
  checkNames(value, Object.keys(WEIGHTS), `${name}.`);
  const given = value as Record<string, unknown>;
  const weights = { ...DEFAULT_WEIGHTS };
  for (const option of Object.keys(WEIGHTS) as Array<keyof Weights>) {
    const v = Object.hasOwn(given, option) ? given[option] : undefined;
    if (v !== undefined) weights[option] = WEIGHTS[option].check(v, `${name}.${option}`);
  }
  return weights;
};

const DEFAULT_WEIGHTS: Weights = resolve(WEIGHTS, {});

const OPTIONS = {
  limiter: spec(isLimiter),
  key: spec<Settings<unknown>['key']>(isFunction),
  maxCost: spec(isMaxCost),
  cost: spec(isWeights, DEFAULT_WEIGHTS),
};

/** Resolves costLimit's options, or throws ERR_SLUICE_OPTION naming the first bad one. */
export function resolveOptions<Context>(options: CostLimitOptions<Context>): Settings<Context> {
  if (typeof options !== 'object' || options === null) badOption('options', 'an object { limiter, key, maxCost?, cost? }', options);
  checkNames(options, Object.keys(OPTIONS), '');
  const { limiter, key, maxCost, cost } = resolve(OPTIONS, options);
  if (limiter === undefined) badOption('limiter', 'a Limiter from createLimiter() (the budget, in points)', limiter);
  if (key === undefined) badOption('key', 'a function of the GraphQL context that returns the budget owner (a user id, an API key)', key);
  return { limiter, key: key as Settings<Context>['key'], maxCost, weights: cost };
}

function checkNames(given: object, known: string[], prefix: string): void {
  for (const [name, value] of Object.entries(given)) {
    if (value !== undefined && !known.includes(name)) badOption(`${prefix}${name}`, `absent (known: ${known.join(', ')})`, name);
  }
}
