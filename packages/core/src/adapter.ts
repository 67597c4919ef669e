// @sluice/core/adapter: the kit the Express, Fastify and Koa adapters share (adapter/: options, peer
// spellings, key and route scope, verdict, headers, problem body, settle, shed). It exports what the
// adapters (and the CLI) import, no more. Not for applications: what they may rely on is the package root.

export type { ForwardedCheck } from './adapter/forwarded.js';
export { stackHeaders } from './adapter/headers.js';
export { mergeHttpOptions } from './adapter/merge.js';
export type { HttpLimitOptions, PolicyGiven } from './adapter/options.js';
export type { ExpressRateLimitSpellings } from './adapter/peer-express.js';
export type { FastifyRateLimitSpellings } from './adapter/peer-fastify.js';
export type { PeerSpellings } from './adapter/peers.js';
export type { LimitedResponse } from './adapter/problem.js';
export { routeScope } from './adapter/scope.js';
export { type ShedNodeResponse, type ShedOptions, shedGate, shedGuard } from './adapter/shed.js';
export { type HttpLimit, httpLimit } from './adapter/verdict.js';
export { badOption } from './errors.js';
export { isBoolean, isFunction, nearest, own, resolve, spec } from './options.js';
