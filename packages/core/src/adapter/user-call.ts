// Calling a user's function of the request (key, cost, skip, policy): what it throws or rejects with
// reaches the framework as a SluiceError with a stable code, and the original as `cause`.
import { SluiceError } from '../errors.js';

/** What a user's function returns: a value, or a promise of it. */
export type Awaitable<T> = T | Promise<T>;

function userError(error: unknown, code: string, name: string): SluiceError {
  if (error instanceof SluiceError) return error;
  const what = error instanceof Error ? `: ${error.message}` : '';
  return new SluiceError(code, `${name}(req) threw${what}`, { cause: error });
}

/**
 * Calls a user's function of the request (and of the response and key, for a rival's functions of
 * `(req, res)` or `(req, key)`); a throw becomes a SluiceError with `code`.
 */
export function call<T>(
  fn: (req: never, res: never, key: never) => T,
  req: unknown,
  code: string,
  name: string,
  res?: unknown,
  key?: string,
): T {
  try {
    return fn(req as never, res as never, key as never);
  } catch (error) {
    throw userError(error, code, name);
  }
}

/** Awaits a user function's promise; a rejection becomes a SluiceError with `code`. */
export async function caught<T>(value: T | Promise<T>, code: string, name: string): Promise<T> {
  try {
    return await value;
  } catch (error) {
    throw userError(error, code, name);
  }
}
