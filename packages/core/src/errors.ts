/** Error thrown for a bad option or argument. `code` is stable; `message` names the option and what is allowed. */
export class SluiceError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = 'SluiceError';
    this.code = code;
  }
}

/** Throws a SluiceError('ERR_SLUICE_OPTION') naming `option`, what is `allowed`, and what it got. */
export function badOption(option: string, allowed: string, got: unknown): never {
  throw new SluiceError('ERR_SLUICE_OPTION', `${option} must be ${allowed}, got ${show(got)}`);
}

function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean' || value == null) return String(value);
  if (typeof value === 'function') return 'a function';
  try {
    return JSON.stringify(value) ?? typeof value;
  } catch {
    return typeof value;
  }
}
