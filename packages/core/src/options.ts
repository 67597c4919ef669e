// Options tables: each layer (the limiter, the adapter kit, each adapter's extras) lists its options
// once, each with its check and, when it has one, its default. The known names, the defaults and the
// error messages all come from the table; what an option means is its doc comment on the options
// interface, which ends with the same default (options.test.ts holds the two together).
import { badOption } from './errors.js';

/** One option: how a given value is checked, and the value it takes when absent. */
export interface OptionSpec<T> {
  /** The value to use when the option is absent (undefined). */
  default?: T;
  /** Validates a given value (never undefined) and returns it resolved; throws naming the option (badOption). */
  check: (value: unknown, name: string) => T;
}

/**
 * A table entry: `check` for a given value, `fallback` when the option is absent (none: undefined).
 * @example const TABLE = { statusCode: spec(isStatus, 429), key: spec<KeyFn>(isFunction) };
 */
export function spec<T>(check: (value: unknown, name: string) => T): OptionSpec<T | undefined>;
export function spec<T>(check: (value: unknown, name: string) => T, fallback: T): OptionSpec<T>;
export function spec<T>(check: (value: unknown, name: string) => T, fallback?: T): OptionSpec<T | undefined> {
  return { check, default: fallback };
}

export type OptionTable = Record<string, OptionSpec<unknown>>;

/** The resolved options of a table: each check's result, or the default. */
export type Resolved<T extends OptionTable> = { [K in keyof T]: T[K] extends OptionSpec<infer V> ? V : never };

/** Throws for a name that is not an option, with a suggestion when one is close ("did you mean"). */
export function checkNames(given: object, known: readonly string[], what: string, option = ''): void {
  for (const name of Object.keys(given)) {
    if ((given as Record<string, unknown>)[name] === undefined || known.includes(name)) continue;
    const close = nearest(name, known);
    const hint = close === undefined ? `known: ${known.join(', ')}` : `did you mean ${close}?`;
    badOption(`${option}${name}`, `absent: not ${what} (${hint})`, name);
  }
}

/** `o`'s own property `name`: never one inherited (from a polluted Object.prototype, or a JSON `"__proto__"` merged in). */
export const own = (o: object, name: string): unknown => (Object.hasOwn(o, name) ? (o as Record<string, unknown>)[name] : undefined);

/** `o`'s own enumerable properties, on no prototype: reading one never finds an inherited value, and a `"__proto__"` key stays a key. */
export const ownCopy = (o: object): Record<string, unknown> => Object.assign(Object.create(null), o);

/** Resolves `input` against `table` (own properties only): absent options get their default, given ones their check. */
export function resolve<T extends OptionTable>(table: T, input: object): Resolved<T> {
  const out: Record<string, unknown> = {};
  for (const name of Object.keys(table)) {
    const entry = table[name] as OptionSpec<unknown>;
    const value = own(input, name);
    out[name] = value === undefined ? entry.default : entry.check(value, name);
  }
  return out as Resolved<T>;
}

/** The known name closest to `name` by edit distance, when it is close enough to be a typo. */
export function nearest(name: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.floor(name.length / 3)) + 1;
  for (const k of known) {
    const d = distance(name.toLowerCase(), k.toLowerCase());
    if (d < bestDistance) {
      best = k;
      bestDistance = d;
    }
  }
  return best;
}

function distance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      const change = (row[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1);
      next.push(Math.min(change, (row[j] as number) + 1, (next[j - 1] as number) + 1));
    }
    row = next;
  }
  return row[b.length] as number;
}

// Checks the tables share.
export const isFunction = <F>(value: unknown, name: string): F => {
  if (typeof value !== 'function') badOption(name, 'a function', value);
  return value as F;
};
/** A store's or a limiter's `clock`: a function of no arguments that returns epoch ms (a test's). */
export const isClock = (value: unknown, name: string): (() => number) => {
  if (typeof value !== 'function') badOption(name, 'a function returning epoch ms, such as testClock() of @sluice/core/testing', value);
  return value as () => number;
};
export const isBoolean = (value: unknown, name: string): boolean => {
  if (typeof value !== 'boolean') badOption(name, 'a boolean', value);
  return value;
};
export const isPositiveInteger = (value: unknown, name: string): number => {
  if (!Number.isSafeInteger(value) || (value as number) < 1) badOption(name, 'a positive integer', value);
  return value as number;
};
