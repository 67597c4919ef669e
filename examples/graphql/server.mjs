// GraphQL Yoga with @sluice/graphql: each API key has a budget of 1000 points a minute, charged by query
// cost (Shopify's model): the requested cost before an operation runs, the difference to its actual cost
// refunded after, `extensions.cost` in every response. Counts in the embedded memory store, or in Redis
// when REDIS_URL is set (e.g. redis://localhost:6379).
//
//   curl -s localhost:4000/graphql -H 'content-type: application/json' -H 'x-api-key: demo' \
//     -d '{"query":"{ viewer { login repositories(first: 20) { totalCount nodes { name issues(first: 20) { title } } } } }"}'
import { createServer } from 'node:http';
import { createLimiter, memoryStore, redisStore } from '@sluice/core';
import { costDirectives, costLimit } from '@sluice/graphql';
import { createSchema, createYoga } from 'graphql-yoga';
import { Redis } from 'ioredis';

const typeDefs = /* GraphQL */ `
  type Query {
    viewer: User!
  }
  type User {
    login: String!
    "A connection: first sizes its nodes list (sizedFields)."
    repositories(first: Int = 10): RepositoryConnection! @listSize(slicingArguments: ["first"], sizedFields: ["nodes"])
  }
  type RepositoryConnection {
    totalCount: Int!
    nodes: [Repository!]!
  }
  type Repository {
    name: String!
    issues(first: Int = 10): [Issue!]!
  }
  "An issue is read from another service: it weighs 2."
  type Issue @cost(weight: "2") {
    title: String!
  }
`;

const repositories = ['engine', 'notes', 'loom'].map((name) => ({ name }));
const resolvers = {
  Query: { viewer: () => ({ login: 'ada' }) },
  User: {
    repositories: (_, { first }) => ({ totalCount: repositories.length, nodes: repositories.slice(0, first) }),
  },
  Repository: {
    issues: (repository, { first }) => [{ title: `${repository.name}: a bug` }, { title: `${repository.name}: an idea` }].slice(0, first),
  },
};

const redis = process.env.REDIS_URL ? new Redis(process.env.REDIS_URL) : undefined;
const limit = costLimit({
  limiter: createLimiter({ policy: '1000/1m', store: redis ? redisStore({ client: redis }) : memoryStore(), prefix: 'graphql' }),
  // After your authentication, the user's or the app's id.
  key: (ctx) => ctx.request.headers.get('x-api-key') ?? 'anonymous',
  maxCost: 1000,
});

const yoga = createYoga({ schema: createSchema({ typeDefs: [costDirectives, typeDefs], resolvers }), plugins: [limit.envelop()] });
const server = createServer(yoga).listen(Number(process.env.PORT ?? 4000), () => {
  console.log(`GraphQL on http://localhost:${server.address().port}/graphql (${redis ? 'Redis' : 'memory store'})`);
});
