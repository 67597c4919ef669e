import { badOption } from './errors.js';

/** A duration: milliseconds, or a string like '500ms', '1s', '15m', '1h', '1d'. */
export type Duration = number | `${number}${'ms' | 's' | 'm' | 'h' | 'd'}`;

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const DURATION = /^(\d+(?:\.\d+)?)?(ms|s|m|h|d)$/;

/** ms of a duration, or undefined when `input` is not one (a number, or a string like '500ms', '1s', '15m'). */
function toMs(input: unknown): number | undefined {
  if (typeof input === 'number') return Number.isFinite(input) ? input : undefined;
  if (typeof input !== 'string') return undefined;
  const m = DURATION.exec(input.trim());
  return m ? (m[1] === undefined ? 1 : Number(m[1])) * UNIT_MS[m[2] as keyof typeof UNIT_MS] : undefined;
}

/**
 * Parses a duration to milliseconds; throws naming `option` when it is not a positive finite duration.
 * A bare unit means one of it: parseDuration('m') === 60000.
 * @example parseDuration('15m') // 900000
 */
export function parseDuration(input: unknown, option = 'duration'): number {
  const ms = toMs(input);
  if (ms === undefined || ms <= 0) {
    const meant = typeof input === 'string' ? spelledOut(input) : undefined;
    badOption(
      option,
      "a positive number of ms or a string like '500ms', '1s', '15m', '1h', '1d'",
      input,
      meant && `did you mean '${meant}'?`,
    );
  }
  return ms;
}

/**
 * Parses a `maxWait` (wait, throttle, rateLimitedFetch, the adapters' delay, a shedder's): a duration or 0,
 * which means no wait at all (pass now, or be refused at once); throws naming `option` for anything else.
 * @example parseMaxWait('5s', 'maxWait') // 5000
 */
export function parseMaxWait(input: unknown, option: string): number {
  const ms = toMs(input);
  if (ms === undefined || ms < 0) badOption(option, "0 or a duration: a positive number of ms or a string like '500ms', '5s', '1m'", input);
  return ms;
}

/** Units written as words ('min', 'secs', 'hours'), each with the unit a duration spells it as. */
const WORD_UNITS: Array<[RegExp, keyof typeof UNIT_MS]> = [
  [/^(msecs?|millis(econds?)?)$/, 'ms'],
  [/^(secs?|seconds?)$/, 's'],
  [/^(mins?|minutes?)$/, 'm'],
  [/^(hrs?|hours?)$/, 'h'],
  [/^days?$/, 'd'],
];

/** '10min' spelt as a duration ('10m'), when its unit is a word for one; else undefined. */
function spelledOut(input: string): string | undefined {
  const m = /^(\d+(?:\.\d+)?)?\s*([a-z]+)$/i.exec(input.trim());
  const unit = m && WORD_UNITS.find(([word]) => word.test((m[2] as string).toLowerCase()))?.[1];
  return unit ? `${m[1] ?? ''}${unit}` : undefined;
}

/** Formats ms the way policy names show them: whole seconds as '60s', anything else as '500ms'. */
export function formatDuration(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}
