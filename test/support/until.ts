// Waiting on a condition instead of a fixed sleep: polls a reading until it is what the test waits for.
//
//   await until(() => shedder.inFlight, 0);
//   await until(() => limiter.peek('k'), (d) => d.source === 'store', { withinMs: 5000, what: 'the store decides' });
//   const ms = await msUntil(written, () => other.peek('k'), (d) => d.source === 'rule'); // how long it took
import { setTimeout as sleep } from 'node:timers/promises';

export interface UntilOptions {
  /** How long to wait before giving up, in ms. Default 10,000. */
  withinMs?: number;
  /** The pause between readings, in ms. Default 10. */
  everyMs?: number;
  /** What is waited for, for the error when it does not come. Default 'the condition'. */
  what?: string;
}

/** What is waited for: a value (compared with Object.is) or a test of the value read. */
export type Want<T> = T | ((value: T) => boolean);

const holds = <T>(want: Want<T>, value: T): boolean =>
  typeof want === 'function' ? (want as (value: T) => boolean)(value) : Object.is(value, want);

function shown(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

async function poll<T>(read: () => T | Promise<T>, want: Want<T>, deadline: number, o: UntilOptions): Promise<T> {
  for (;;) {
    const value = await read();
    if (holds(want, value)) return value;
    if (Date.now() > deadline) {
      throw new Error(`${o.what ?? 'the condition'}: not within ${o.withinMs ?? 10_000} ms (last read: ${shown(value)})`);
    }
    await sleep(o.everyMs ?? 10);
  }
}

/** Reads `read` every `everyMs` until it gives `want`; resolves the value read. Throws past `withinMs`. */
export function until<T>(read: () => T | Promise<T>, want: Want<T>, options: UntilOptions = {}): Promise<T> {
  return poll(read, want, Date.now() + (options.withinMs ?? 10_000), options);
}

/**
 * The ms from `since` (a Date.now() reading, such as when a write was answered) until `read` gives `want`;
 * `withinMs` counts from `since` too. For tests that pin how soon something is in force.
 */
export async function msUntil<T>(since: number, read: () => T | Promise<T>, want: Want<T>, options: UntilOptions = {}): Promise<number> {
  await poll(read, want, since + (options.withinMs ?? 10_000), options);
  return Date.now() - since;
}
