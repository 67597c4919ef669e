// The scripts as the Redis store runs them (lua/, generated into lua.generated.ts): each loaded by SHA once
// and sent again only on NOSCRIPT; the decide script's errors name the lua/ file and line they come from.
import { createHash } from 'node:crypto';
import calculateSlot from 'cluster-key-slot';
import { describe } from '../../errors.js';
import { DECIDE_SCRIPT, HOME_SCRIPT, LUA_LINES, REGION_SCRIPT, RULES_SCRIPT } from '../../lua.generated.js';
import type { ScriptClient } from './script-client.js';

/** A script's text, and its SHA, which EVALSHA runs it by. */
interface Script {
  readonly text: string;
  readonly sha: string;
}

const script = (text: string): Script => ({ text, sha: createHash('sha1').update(text).digest('hex') });
const DECIDE = script(DECIDE_SCRIPT);
/** The rules' script (store/redis/rules.ts). */
export const RULES = script(RULES_SCRIPT);
/** The two sides of a limit across regions (store/redis/leases.ts). */
export const REGION = script(REGION_SCRIPT);
export const HOME = script(HOME_SCRIPT);

/** Whether a command's first argument is the decide script's (its SHA or its text). */
export const isDecideScript = (first: unknown): boolean => first === DECIDE.sha || first === DECIDE.text;

/**
 * Runs `script` by its SHA. NOSCRIPT (restart, fail-over, SCRIPT FLUSH) is the one error retried: after
 * `again()` (which may change `args`), EVAL sends the script itself. A client that throws or answers no
 * promise fails the call like a rejection does.
 */
export function runScript(
  client: ScriptClient,
  { sha, text }: Script,
  keys: string[],
  args: string[],
  again?: () => void,
): Promise<unknown> {
  return clientCall(() => client.evalsha(sha, keys, args)).catch((error: unknown) => {
    if (!(error instanceof Error && error.message.startsWith('NOSCRIPT'))) throw error;
    again?.();
    return client.eval(text, keys, args);
  });
}

/**
 * Runs `script` off the decision path (rules, leases): a connection that is down fails the call now rather
 * than in the client's offline queue; one being made (the app's first connect, a reconnect) is waited for,
 * and its caller bounds the wait.
 */
export function runWhenUp(client: ScriptClient, script: Script, keys: string[], args: string[]): Promise<unknown> {
  const slot = client.cluster && keys.length > 0 ? calculateSlot(keys[0] as string) : undefined;
  const down = client.down(slot);
  if (down === undefined) return runScript(client, script, keys, args);
  if (!client.connecting()) return Promise.reject(new Error(down));
  return new Promise<void>((settled) => client.whenSettled(settled)).then(() => {
    const still = client.down(slot);
    if (still !== undefined) throw new Error(still);
    return runScript(client, script, keys, args);
  });
}

/**
 * Runs the decide script (runScript), its NOSCRIPT retry under the call number `renumber` gives; a script
 * error names its lua/ line (sourceLines).
 */
export function runDecide(client: ScriptClient, keys: string[], args: string[], renumber: () => string): Promise<unknown> {
  // The script did not run. A later call of this store may have run meanwhile, and the guard refuses a
  // call numbered below one it ran (lua/decide.lua): the retry goes under a number of its own (ARGV[1]).
  const renumbered = () => {
    args[0] = renumber();
  };
  return runScript(client, DECIDE, keys, args, renumbered).catch((error: unknown) => {
    throw sourceLines(error);
  });
}

/** A client's call as a promise, whatever the client does: a throw or a value that is no promise rejects. */
export function clientCall(call: () => unknown): Promise<unknown> {
  try {
    const result = call() as Promise<unknown> | undefined;
    if (typeof result?.then === 'function') return result;
    return Promise.reject(new Error(`the Redis client answered a command with ${describe(result)}, not a promise`));
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * The lua/ file and line that line `line` of the generated script comes from, or undefined for a line
 * scripts/gen-lua.mjs wrote itself (the algorithm dispatch, a file's marker).
 * @example luaSource(1) // undefined: the prelude's marker; luaSource(2) // 'lua/prelude.lua:1'
 */
export function luaSource(line: number): string | undefined {
  for (const [first, file, fileLine, lines] of LUA_LINES) {
    if (line >= first && line < first + lines) return `${file}:${fileLine + line - first}`;
  }
  return undefined;
}

/**
 * A script error with each `user_script:<line>` Redis names rewritten as the lua/ file and line it comes
 * from (`lua/token-bucket.lua:42 (user_script:180)`). The error is the same object, its message changed
 * (or, when it cannot be, a new Error with it as the cause); anything else passes unchanged.
 * @example sourceLines(new Error('ERR user_script:180: WRONGTYPE ...')).message // 'ERR lua/token-bucket.lua:42 ...'
 */
export function sourceLines(error: unknown): unknown {
  if (!(error instanceof Error) || !error.message.includes('user_script:')) return error;
  const message = error.message.replace(/user_script:(\d+)/g, (found, line: string) => {
    const source = luaSource(Number(line));
    return source === undefined ? found : `${source} (${found})`;
  });
  try {
    error.message = message;
    return error;
  } catch {
    // A client's error whose message cannot be set: a plain one in its place, the client's as its cause.
    return new Error(message, { cause: error });
  }
}
