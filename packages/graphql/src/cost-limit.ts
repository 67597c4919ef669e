// costLimit: one budget by query cost, and its plugin for each server.
import { type ApolloPlugin, apolloPlugin } from './apollo.js';
import { budget } from './budget.js';
import { type EnvelopPlugin, envelopPlugin } from './envelop.js';
import { type MercuriusPlugin, mercuriusPlugin } from './mercurius.js';
import { type CostLimitOptions, resolveOptions } from './options.js';

/** A budget by query cost, as a plugin for each GraphQL server; one budget may serve several servers. */
export interface CostLimit<Context> {
  /** For GraphQL Yoga and every envelop server: `createYoga({ schema, plugins: [limit.envelop()] })`. */
  envelop(): EnvelopPlugin<Context>;
  /** For Apollo Server 5: `new ApolloServer({ schema, plugins: [limit.apollo()] })`. */
  apollo(): ApolloPlugin<Context>;
  /** For Mercurius, a Fastify plugin registered after it: `await app.register(limit.mercurius())`. */
  mercurius(): MercuriusPlugin;
}

/**
 * Budgets by query cost: each operation's requested cost (from the document, the variables and the
 * schema's @cost and @listSize) is charged to `key(context)` in one consume before it runs, the difference
 * to its actual cost (the result's real list lengths) refunded after, and every response carries
 * `extensions.cost`. An operation above `maxCost` is refused before it runs, charged nothing; a throttled
 * one does not run (`THROTTLED`, 429 with Retry-After). Bad options throw ERR_SLUICE_OPTION here.
 * @example
 * const limit = costLimit({ limiter: createLimiter({ policy: '1000/1m' }), key: (ctx) => ctx.user.id, maxCost: 1000 });
 * createYoga({ schema, plugins: [limit.envelop()] });
 */
export function costLimit<Context = Record<string, unknown>>(options: CostLimitOptions<Context>): CostLimit<Context> {
  const admit = budget(resolveOptions(options));
  return {
    envelop: () => envelopPlugin(admit),
    apollo: () => apolloPlugin(admit),
    mercurius: () => mercuriusPlugin(admit),
  };
}
