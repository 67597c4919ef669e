// @sluice/core/adapter: the kit the Express, Fastify and Koa adapters share (option resolution, the
// per-request check, the problem+json body, header stacking, route merging). Not for applications:
// what they may rely on is the package root.
export type {
  AdapterOwn,
  HttpLimit,
  HttpLimitOptions,
  HttpVerdict,
  LimitedBody,
  LimitedResponse,
  PeerSpelling,
  PeerSpellings,
  PolicyGiven,
  PolicyOf,
  RawResponse,
} from './adapter-kit.js';
export { httpLimit, mergeHttpOptions, stackHeaders } from './adapter-kit.js';
export { badOption } from './errors.js';
export type { OptionSpec } from './options.js';
export { isBoolean, isFunction, own, resolve } from './options.js';
export type { ShedGate, ShedOptions, ShedRawResponse, ShedResponse } from './shed-kit.js';
export { shedGate } from './shed-kit.js';
