// @sluice/core/adapter: the kit the framework adapters share (adapter/: options, the translator a rival's
// spelling comes through, key and route scope, verdict, headers, problem body, settle, shed). It exports what
// the adapters (and the CLI) import, no more, and names no framework. Not for applications: what they may
// rely on is the package root.

export type { ForwardedCheck } from './adapter/forwarded.js';
export { stackHeaders } from './adapter/headers.js';
export { mergeHttpOptions } from './adapter/merge.js';
export type { HttpLimitOptions, PolicyGiven } from './adapter/options.js';
export type { LimitedResponse } from './adapter/problem.js';
export { routeScope } from './adapter/scope.js';
export { type ShedNodeResponse, type ShedOptions, shedGate, shedGuard } from './adapter/shed.js';
export { type PeerAnswer, type PeerTranslator, policyPerLimit } from './adapter/translator.js';
export type { Awaitable } from './adapter/user-call.js';
export { type HttpLimit, httpLimit } from './adapter/verdict.js';
export { parseDuration } from './duration.js';
export { badOption } from './errors.js';
export { isBoolean, isFunction, nearest, own, resolve, spec } from './options.js';
export { inspectLeases, type LeasesInspected } from './regions/inspect.js';
