// The public contract of @sluice/core (shared/DESIGN.md). What only the adapters need is on the
// subpath @sluice/core/adapter.

export type { Decision, DecisionSource, PolicyDecision } from './decision.js';
export type { Duration } from './duration.js';
export { SluiceError } from './errors.js';
export type { HeadersMode } from './headers.js';
export { rateLimitHeaders } from './headers.js';
export { ipKey } from './ip-key.js';
export type { CallOptions, ConsumeOptions, FailMode, Limiter, LimiterEvent, LimiterOptions, WaitOptions } from './limiter.js';
export { createLimiter } from './limiter.js';
export type { Algorithm, CalendarPeriod, PolicyInput, WindowStart } from './policy/policy.js';
export type { RateLimitedFetchOptions } from './rate-limited-fetch.js';
export { rateLimitedFetch } from './rate-limited-fetch.js';
export type { RegionsOptions } from './regions/options.js';
export type { BanOptions } from './rules/ban.js';
export type { Rule, RuleKind, RuleOptions, Rules, RulesOptions } from './rules/rules.js';
export { createRules } from './rules/rules.js';
export type { Permit, Priority, Shedder, ShedderEvent, ShedderOptions } from './shed/shedder.js';
export { createShedder } from './shed/shedder.js';
export { runStoreVectors, type StoreVectorsOptions } from './store/conformance.js';
export type { Policy, PolicyState, RuleChanges, RuleStore, Store, StoreReply, StoreRequest } from './store/contract.js';
export type { HomeGrant, HomeView, LeaseAsk, LeaseBucket, LeaseSpend, LeaseStore, LeaseTimes } from './store/leases.js';
export type { MemoryStoreOptions } from './store/memory-store.js';
export { memoryStore } from './store/memory-store.js';
export type { RedisStoreOptions } from './store/redis/store.js';
export { redisStore } from './store/redis/store.js';
export type { ThrottleOptions } from './throttle.js';
export { throttle } from './throttle.js';
export { WaitError } from './wait.js';
