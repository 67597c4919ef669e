// One schema, one set of resolvers and one way to start each GraphQL server (GraphQL Yoga on node:http,
// Apollo Server standalone, Mercurius on Fastify), each on 127.0.0.1, port 0, with a costLimit plugin; the
// budget's owner is the request's `x-user` header. The resolvers return lists of known lengths, so that
// a test can work out each query's actual cost by hand.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApolloServer } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';
import { type CostLimit, costDirectives } from '@sluice/graphql';
import Fastify from 'fastify';
import { createSchema, createYoga } from 'graphql-yoga';
import mercurius from 'mercurius';

export type ServerName = 'yoga' | 'apollo' | 'mercurius';
export const SERVERS: ServerName[] = ['yoga', 'apollo', 'mercurius'];

/** The GraphQL context of every server: who the budget belongs to. */
export interface Context {
  user: string;
}

export const typeDefs = /* GraphQL */ `
  type Query {
    viewer: User
    user(login: String!): User
    users(first: Int = 5): [User!]!
    node(id: ID!): Node
    expensive: Report @cost(weight: "5")
    broken: [User!] @listSize(assumedSize: -1)
  }
  type Mutation {
    follow(login: String!): User
  }
  type Subscription {
    userAdded: User
  }
  interface Node {
    id: ID!
  }
  type User implements Node {
    id: ID!
    login: String!
    repositories(first: Int, last: Int): RepositoryConnection!
      @listSize(slicingArguments: ["first", "last"], sizedFields: ["edges", "nodes"])
    followers(limit: Int): [User!]! @listSize(slicingArguments: ["limit"])
    tags: [String!]!
    starred: [Repository!]! @listSize(assumedSize: 3)
    avatar: Image @cost(weight: "2")
  }
  type Image {
    url: String!
  }
  type RepositoryConnection {
    edges: [RepositoryEdge!]!
    nodes: [Repository!]!
    pageInfo: PageInfo!
  }
  type RepositoryEdge {
    cursor: String!
    node: Repository!
  }
  type Repository implements Node {
    id: ID!
    name: String!
    issues(first: Int): IssueConnection! @listSize(slicingArguments: ["first"], sizedFields: ["nodes"])
  }
  type IssueConnection {
    nodes: [Issue!]!
    pageInfo: PageInfo!
  }
  type Issue @cost(weight: "2") {
    id: ID!
    title: String!
    state: State!
  }
  enum State {
    OPEN
    CLOSED
  }
  type PageInfo {
    hasNextPage: Boolean!
  }
  type Report {
    total: Int! @cost(weight: "3")
  }
`;

type Args = Record<string, number | undefined>;
const times = <T>(n: number, f: (i: number) => T): T[] => Array.from({ length: n }, (_, i) => f(i));
const user = (login: string) => ({ __typename: 'User', id: `u-${login}`, login });
const repository = (i: number) => ({ __typename: 'Repository', id: `r${i}`, name: `repo-${i}` });

/** How many times `users` resolved: a refused operation never runs. */
export const ran = { users: 0 };

/** What each resolver returns: a connection at most 2 repositories, at most 3 issues; `users` exactly `first`; `starred` 2; `followers` 1. */
export const resolvers = {
  Query: {
    viewer: () => user('viewer'),
    user: (_: unknown, { login }: { login: string }) => user(login),
    users: (_: unknown, { first = 5 }: Args) => {
      ran.users++;
      return times(Math.min(first, 1000), (i) => user(`u${i}`));
    },
    node: (_: unknown, { id }: { id: string }) => (id.startsWith('r') ? repository(0) : user(id)),
    expensive: () => ({ total: 42 }),
    broken: () => [],
  },
  Mutation: { follow: (_: unknown, { login }: { login: string }) => user(login) },
  Subscription: {
    userAdded: {
      subscribe: async function* added() {
        yield { userAdded: user('new') };
      },
    },
  },
  User: {
    repositories: (_: unknown, { first, last }: Args) => {
      const items = times(Math.min(first ?? last ?? 2, 2), repository);
      return { edges: items.map((node) => ({ cursor: node.id, node })), nodes: items, pageInfo: { hasNextPage: true } };
    },
    followers: (_: unknown, { limit = 1 }: Args) => times(Math.min(limit, 1), (i) => user(`f${i}`)),
    tags: () => ['a', 'b'],
    starred: () => times(2, repository),
    avatar: (parent: { login: string }) => (parent.login === 'b' ? null : { url: `https://img.test/${parent.login}` }),
  },
  Repository: {
    issues: (_: unknown, { first = 3 }: Args) => ({
      nodes: times(Math.min(first, 3), (i) => ({ id: `i${i}`, title: `issue ${i}`, state: 'OPEN' })),
      pageInfo: { hasNextPage: false },
    }),
  },
};

export interface RunningServer {
  name: ServerName;
  /** The GraphQL endpoint. */
  url: string;
  close(): Promise<void>;
}

/** Starts one server with the plugin of `limit` (none: the server alone). */
export async function startGraphql(name: ServerName, limit: CostLimit<Context> | undefined): Promise<RunningServer> {
  const defs = [costDirectives, typeDefs];
  if (name === 'yoga') {
    const yoga = createYoga({
      schema: createSchema({ typeDefs: defs, resolvers }),
      plugins: limit ? [limit.envelop()] : [],
      context: ({ request }) => ({ user: request.headers.get('x-user') ?? 'anonymous' }),
      logging: false,
    });
    const server = createServer(yoga);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    return { name, url: `http://127.0.0.1:${port}/graphql`, close: () => new Promise((resolve) => server.close(() => resolve())) };
  }
  if (name === 'apollo') {
    const apollo = new ApolloServer<Context>({ typeDefs: defs, resolvers, plugins: limit ? [limit.apollo()] : [] });
    const { url } = await startStandaloneServer(apollo, {
      listen: { port: 0, host: '127.0.0.1' },
      context: async ({ req }) => ({ user: String(req.headers['x-user'] ?? 'anonymous') }),
    });
    return { name, url, close: () => apollo.stop() };
  }
  const app = Fastify();
  await app.register(mercurius, {
    schema: defs.join('\n'),
    resolvers: resolvers as never,
    context: (request) => ({ user: String(request.headers['x-user'] ?? 'anonymous') }),
    // Mercurius' parse cache is loaded with a dynamic import(), which Jest runs only under --experimental-vm-modules.
    cache: false,
  });
  if (limit) await app.register(limit.mercurius());
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  return { name, url: `${address}/graphql`, close: () => app.close() };
}

export interface GraphqlResponse {
  status: number;
  retryAfter: string | null;
  body: {
    data?: unknown;
    errors?: Array<{ message: string; extensions?: Record<string, unknown> }>;
    extensions?: { cost?: { requestedQueryCost: number; actualQueryCost: number | null; throttleStatus: Record<string, number> } };
  };
}

/** POSTs one operation as `user`. */
export async function post(url: string, user: string, query: string, variables?: Record<string, unknown>): Promise<GraphqlResponse> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', 'x-user': user },
    body: JSON.stringify({ query, variables }),
  });
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as GraphqlResponse['body'] };
}

/** An operation whose deepest field is `levels` deep: viewer (at depth 1), followers nested in it, and login. */
export const deep = (levels: number) => `{ viewer { ${'followers(limit: 1) { '.repeat(levels - 2)}login${' }'.repeat(levels - 2)} } }`;

/** An operation of 2^13 paths from a small document: F13 selects F12 through two aliases, and so on down. */
export function wide(): string {
  const fragments = ['fragment F0 on User { login }'];
  for (let k = 1; k <= 13; k++)
    fragments.push(`fragment F${k} on User { x: followers(limit: 1) { ...F${k - 1} } y: followers(limit: 1) { ...F${k - 1} } }`);
  return `{ viewer { ...F13 } } ${fragments.join(' ')}`;
}
