// The timers the core schedules its own work on (a batch's flush, a call's deadline, the rules' refresh,
// a Cluster's discovery), as node:timers had them when the core was loaded. A test's fake timers replace
// the globals afterwards (Jest's and Vitest's, node:test's mock.timers, which also replaces the members of
// node:timers' CommonJS object, not its ES module bindings): on those a decision would wait for a flush
// the test never runs, or a deadline it never reaches. Named imports, read once: no cost per call.
import { clearInterval, clearTimeout, setImmediate, setInterval, setTimeout } from 'node:timers';

export { clearInterval, clearTimeout, setImmediate, setInterval, setTimeout };

/**
 * What to do when a test's fake timers hold process.nextTick (Jest's fake it unless told not to, and
 * @sinonjs/fake-timers marks what it fakes with `clock`): a Redis client waits on it to connect, so it
 * never does, and its calls reach their deadline. Read only when a call fails.
 */
export function fakeTick(): string {
  if (typeof (process.nextTick as { clock?: unknown }).clock !== 'object') return '';
  return " (process.nextTick is faked, and the client connects on it: give Jest's fake timers doNotFake: ['nextTick'], or connect before faking)";
}
