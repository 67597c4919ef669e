// The timers the core schedules its own work on (a batch's flush, a call's deadline, the rules' refresh,
// a Cluster's discovery), as node:timers had them when the core was loaded. A test's fake timers replace
// the globals afterwards (Jest's and Vitest's, node:test's mock.timers, which also replaces the members of
// node:timers' CommonJS object, not its ES module bindings): on those a decision would wait for a flush
// the test never runs, or a deadline it never reaches. Named imports, read once: no cost per call.
import { clearInterval, clearTimeout, setImmediate, setInterval, setTimeout } from 'node:timers';

export { clearInterval, clearTimeout, setImmediate, setInterval, setTimeout };
