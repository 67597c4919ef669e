// The public surface of @sluice/graphql (shared/DESIGN.md, "GraphQL: budgets by query cost").
export type { ApolloListener, ApolloOperationContext, ApolloPlugin, ApolloResponseContext } from './apollo.js';
export { type CostLimit, costLimit } from './cost-limit.js';
export { costDirectives } from './directives.js';
export type { EnvelopArgs, EnvelopPlugin } from './envelop.js';
export type { QueryCost, ThrottleStatus } from './extensions.js';
export type { MercuriusPlugin } from './mercurius.js';
export type { CostLimitOptions, CostWeights } from './options.js';
export { MAX_DEPTH, MAX_FIELDS } from './plan.js';
