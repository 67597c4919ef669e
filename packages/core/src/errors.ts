/**
 * Error thrown for a bad option or argument. `code` is stable (see docs/api.md#errors);
 * `message` names the option and what is allowed; `cause` holds the error of a user function that threw.
 */
export class SluiceError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SluiceError';
    this.code = code;
  }
}

/** Throws a SluiceError('ERR_SLUICE_OPTION') naming `option`, what is `allowed`, what it got, and why when it helps. */
export function badOption(option: string, allowed: string, got: unknown, why?: string): never {
  throw new SluiceError('ERR_SLUICE_OPTION', `${option} must be ${allowed}, got ${describe(got)}${why ? ` (${why})` : ''}`);
}

/**
 * A value as a message may show it: its type or constructor, never its contents, which may hold a
 * secret (a client's password, a URL's credentials). Short plain strings and numbers are shown, since
 * options such as '100/1m' are spelt that way; a string that looks like a URL is not.
 */
export function describe(value: unknown): string {
  if (value === null || value === undefined || typeof value === 'boolean') return String(value);
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') {
    if (value.length > 64 || value.includes('@') || /^[a-z][\w+.-]*:\/\//i.test(value)) return `a string of ${value.length} characters`;
    return JSON.stringify(value);
  }
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'bigint') return 'a bigint';
  if (typeof value === 'symbol') return 'a symbol';
  if (Array.isArray(value)) return `an array of ${value.length}`;
  const name = (Object.getPrototypeOf(value) as { constructor?: { name?: unknown } } | null)?.constructor?.name;
  return typeof name === 'string' && name !== '' && name !== 'Object' ? `an instance of ${name}` : 'an object';
}
