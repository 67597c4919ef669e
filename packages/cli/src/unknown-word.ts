import { nearest } from '@sluice/core/adapter';

/**
 * The message for a word the CLI does not know: the nearest it knows when it is close enough to be a typo
 * (the same measure as the core's "did you mean" for options), else `otherwise`.
 * @example unknownWord('command', 'inpsect', ['inspect', 'reset']) // 'unknown command "inpsect": did you mean inspect?'
 */
export function unknownWord(what: string, given: string, known: readonly string[], otherwise = known.join(', ')): string {
  const close = nearest(given, known);
  const hint = close === undefined ? otherwise : `did you mean ${close}?`;
  return `unknown ${what} ${JSON.stringify(given)}${hint === '' ? '' : `: ${hint}`}`;
}
