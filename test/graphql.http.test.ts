// @sluice/graphql on three real servers (GraphQL Yoga on node:http, Apollo Server standalone, Mercurius on
// Fastify): each query's requested and actual cost, worked out by hand below, is what every server reports
// in extensions.cost; refunds, throttling, maxCost and the operations that cannot be costed, on each.
import { createLimiter, createRules, memoryStore } from '@sluice/core';
import { costLimit, MAX_DEPTH } from '@sluice/graphql';
import { type Context, deep, post, type RunningServer, ran, SERVERS, startGraphql, wide } from './support/graphql';

const BUDGET = 1000;
const store = memoryStore();
const rules = createRules({ store });
const limiter = createLimiter({ policy: `${BUDGET}/1d`, store, rules }); // refills 0.0116 points a second: nothing a test sees
/** The user `nobody` has no key: the key function throws. */
const keyOf = (ctx: Context) => {
  if (ctx.user === 'nobody') throw new Error('no user to charge');
  return ctx.user;
};
const limit = costLimit<Context>({ limiter, key: keyOf, maxCost: 2000 });
/** Points a second: 1000 a day. */
const RESTORE_RATE = expect.closeTo(BUDGET / 86_400, 6);
afterAll(async () => {
  await limiter.close();
  await rules.close();
});
let users = 0;
const fresh = () => `user-${++users}`;
const spent = async (user: string) => BUDGET - (await limiter.peek(user)).remaining;

interface Case {
  name: string;
  query: string;
  variables?: Record<string, unknown>;
  /** By hand, from the schema in test/support/graphql.ts. */
  requested: number;
  /** By hand, from what the resolvers return. */
  actual: number;
}

const U = 'fragment U on User { login tags @include(if: $withTags) starred @skip(if: $skipStarred) { name } avatar { url } }';
const CASES: Case[] = [
  // viewer 1 + login 0
  { name: 'an object and a scalar', query: '{ viewer { login } }', requested: 1, actual: 1 },
  { name: 'a field selected twice runs, and costs, once', query: '{ viewer { login } viewer { id } }', requested: 1, actual: 1 },
  { name: 'only scalars on the root type cost nothing', query: '{ __typename }', requested: 0, actual: 0 },
  {
    // viewer 1 + repositories [1 + edges 5 x (edge 1 + node 1 + issues [1 + nodes 10 x Issue (weight 2)]) + pageInfo 1] = 1 + (1 + 5 x 23 + 1) = 118
    // actual: 2 edges, 3 issues each: 1 + (1 + 2 x (1 + 1 + (1 + 3 x 2)) + 1) = 21
    name: 'nested connections sized by a variable',
    query:
      'query Repos($n: Int!) { viewer { repositories(first: $n) { edges { node { name issues(first: 10) { nodes { title } } } } pageInfo { hasNextPage } } } }',
    variables: { n: 5 },
    requested: 118,
    actual: 21,
  },
  {
    // a: user 1 + starred 3 x 1 + avatar 2 = 6; b: 1 + 3 + 2 + followers 4 x 1 = 10
    // actual: a: 1 + 2 starred + avatar 2 = 5; b: 1 + 2 + avatar null 0 + 1 follower = 4
    name: 'fragments, aliases, and @include and @skip by variables',
    query: `query ($withTags: Boolean!, $skipStarred: Boolean!) { a: user(login: "a") { ...U } b: user(login: "b") { ...U followers(limit: 4) { login } } } ${U}`,
    variables: { withTags: true, skipStarred: false },
    requested: 16,
    actual: 9,
  },
  {
    // without starred: a: 1 + 2 = 3; b: 1 + 2 + 4 = 7. actual: a: 1 + 2 = 3; b: 1 + 0 + 1 = 2
    name: 'a fragment field skipped by a variable costs nothing',
    query: `query ($withTags: Boolean!, $skipStarred: Boolean!) { a: user(login: "a") { ...U } b: user(login: "b") { ...U followers(limit: 4) { login } } } ${U}`,
    variables: { withTags: false, skipStarred: true },
    requested: 10,
    actual: 5,
  },
  {
    // Node is a User (1) or a Repository (1 + issues [1 + 4 x 2] = 10): the dearer, 10. actual: a Repository with 3 issues: 1 + 1 + 3 x 2 = 8
    name: 'an interface, through inline fragments',
    query: '{ node(id: "r1") { id ... on Repository { name issues(first: 4) { nodes { title } } } ... on User { login } } }',
    requested: 10,
    actual: 8,
  },
  // expensive: @cost 5 on the field replaces the object's 1; total: @cost 3 on a scalar
  { name: '@cost on a field and on a scalar', query: '{ expensive { total } }', requested: 8, actual: 8 },
  // users(first: Int = 5): 5 x 1
  { name: "a slicing argument's default value", query: '{ users { id } }', requested: 5, actual: 5 },
  { name: "a variable's default value", query: 'query ($n: Int = 7) { users(first: $n) { login } }', requested: 7, actual: 7 },
  // viewer 1 + repositories [1 + nodes 3 x 1] = 5; actual: 1 + 1 + 2 = 4
  {
    name: '@listSize(slicingArguments) by last',
    query: '{ viewer { repositories(last: 3) { nodes { name } } } }',
    requested: 5,
    actual: 4,
  },
  // follow 1 + followers 3 x 1 = 4; actual: 1 + 1
  { name: 'a mutation', query: 'mutation { follow(login: "x") { login followers(limit: 3) { login } } }', requested: 4, actual: 2 },
  {
    // __schema 1 + queryType 1 + types 10 x 1 (defaultListSize) = 12; actual: 2 + the 26 types (18 of the schema, 8 of introspection)
    name: 'introspection, as any query',
    query: 'query IntrospectionQuery { __schema { queryType { name } types { name } } }',
    requested: 12,
    actual: 28,
  },
  // __type 1 + fields 10 x 1 = 11; actual: 1 + User's 7 fields
  { name: '__type, as any query', query: '{ __type(name: "User") { name fields { name } } }', requested: 11, actual: 8 },
  { name: 'an operation named __schema, as any query', query: 'query __schema { users(first: 50) { id } }', requested: 50, actual: 50 },
];

describe.each(SERVERS)('%s with costLimit', (name) => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startGraphql(name, limit);
  });
  afterAll(() => server.close());

  it.each(CASES)('reports the hand-computed cost: $name', async ({ query, variables, requested, actual }) => {
    const user = fresh();
    const { status, body } = await post(server.url, user, query, variables);
    expect(body.errors).toBeUndefined();
    expect(status).toBe(200);
    const charged = Math.min(requested, actual); // only a refund: an actual cost above the requested one is not charged
    expect(body.extensions?.cost).toEqual({
      requestedQueryCost: requested,
      actualQueryCost: actual,
      throttleStatus: { maximumAvailable: BUDGET, currentlyAvailable: BUDGET - charged, restoreRate: RESTORE_RATE },
    });
    expect(await spent(user)).toBe(charged);
  });

  it('a refund leaves currentlyAvailable at the budget less the actual cost', async () => {
    const user = fresh();
    const repos = CASES[3] as Case;
    const { body } = await post(server.url, user, repos.query, repos.variables);
    expect(body.extensions?.cost?.throttleStatus.currentlyAvailable).toBe(BUDGET - 21);
    expect(await spent(user)).toBe(21);
  });

  it('a throttled operation does not run: THROTTLED, no data, 429 with Retry-After, extensions.cost', async () => {
    const user = fresh();
    const query = '{ users(first: 600) { id } }';
    expect((await post(server.url, user, query)).status).toBe(200);
    const before = ran.users;
    const { status, retryAfter, body } = await post(server.url, user, query);
    expect(ran.users).toBe(before);
    expect(status).toBe(429);
    expect(body).not.toHaveProperty('data');
    expect(body.errors).toEqual([{ message: 'Throttled', extensions: { code: 'THROTTLED', retryAfterMs: expect.any(Number) } }]);
    const retryAfterMs = body.errors?.[0]?.extensions?.retryAfterMs as number;
    expect(retryAfterMs).toBeGreaterThan(200 * 86_000); // 200 points at 1000 a day: about 4.8 hours
    expect(retryAfter).toBe(String(Math.ceil(retryAfterMs / 1000)));
    expect(body.extensions?.cost).toEqual({
      requestedQueryCost: 600,
      actualQueryCost: null,
      throttleStatus: { maximumAvailable: BUDGET, currentlyAvailable: 400, restoreRate: RESTORE_RATE },
    });
    expect(await spent(user)).toBe(600);
  });

  it('a user refused by a deny rule gets FORBIDDEN, 403, and is charged nothing', async () => {
    const user = fresh();
    await rules.deny(user);
    const before = ran.users;
    const { status, body } = await post(server.url, user, '{ users(first: 3) { id } }');
    expect(ran.users).toBe(before);
    expect(status).toBe(403);
    expect(body).not.toHaveProperty('data');
    expect(body.errors).toEqual([{ message: 'Forbidden', extensions: { code: 'FORBIDDEN', retryAfterMs: 0 } }]);
    expect(body.extensions?.cost).toMatchObject({ requestedQueryCost: 3, actualQueryCost: null });
    await rules.remove('deny', user);
    expect(await spent(user)).toBe(0);
  });

  it('an operation above maxCost is refused before it runs, charged nothing', async () => {
    const user = fresh();
    const before = ran.users;
    const { status, body } = await post(server.url, user, '{ users(first: 3000) { id } }');
    expect(ran.users).toBe(before);
    expect(status).toBe(name === 'yoga' ? 200 : 400); // Yoga answers its validation errors 200 to application/json
    expect(body.errors).toEqual([
      { message: 'Query cost is 3000, which exceeds the maximum cost of 2000', extensions: { code: 'MAX_COST_EXCEEDED' } },
    ]);
    expect(body).not.toHaveProperty('data');
    expect(body.extensions?.cost).toMatchObject({ requestedQueryCost: 3000, actualQueryCost: null });
    expect(await spent(user)).toBe(0);
  });

  it.each([
    ['an invalid document', '{ nope }', undefined],
    ['a document that does not parse', '{ viewer {', undefined],
    ['variables that do not coerce', 'query ($n: Int!) { users(first: $n) { id } }', { n: 'many' }],
    ['a missing operation name', 'query A { viewer { id } } query B { users { id } }', undefined],
  ])('%s is charged nothing and left to the server', async (_what, query, variables) => {
    const user = fresh();
    const { status, body } = await post(server.url, user, query, variables);
    expect(status).toBeLessThan(500);
    expect(body.errors?.length).toBeGreaterThan(0);
    expect(body.errors?.[0]?.message).not.toMatch(/cost/i);
    expect(await spent(user)).toBe(0);
  });

  it.each([
    ['too deep to cost', deep(MAX_DEPTH + 1), /more than 64 levels/],
    ['too wide to cost', wide(), /more than 10000 fields/],
    [
      'above 1e12 points',
      '{ users(first: 1000000) { followers(limit: 1000000) { followers(limit: 1000000) { id } } } }',
      /above 1000000000000/,
    ],
    [
      'sized by a negative slicing argument',
      '{ viewer { followers(limit: -1) { id } } }',
      /limit on User.followers must be a whole number >= 0/,
    ],
    ['under a directive with bad arguments', '{ broken { id } }', /assumedSize.*User|Query.broken/],
  ])("an operation %s is the server's validation error, charged nothing", async (_what, query, message) => {
    const user = fresh();
    const { status, body } = await post(server.url, user, query);
    expect(status).toBe(name === 'yoga' ? 200 : 400);
    expect(body.errors).toHaveLength(1);
    expect(body.errors?.[0]?.message).toMatch(message);
    expect(body.errors?.[0]?.extensions).toEqual({ code: 'GRAPHQL_VALIDATION_FAILED' });
    expect(await spent(user)).toBe(0);
  });

  it('an operation whose key throws does not run: the server answers an unexpected error', async () => {
    const before = ran.users;
    const { status, body } = await post(server.url, 'nobody', '{ users(first: 3) { id } }');
    expect(ran.users).toBe(before);
    // An unexpected error, as each server answers one: Mercurius as an error in its hooks, 200 with data null.
    expect(status).toBe(name === 'mercurius' ? 200 : 500);
    expect(body.errors).toHaveLength(1);
    expect(body.data ?? null).toBeNull();
  });

  it('an operation just within the depth cap is costed', async () => {
    const user = fresh();
    const { body } = await post(server.url, user, deep(MAX_DEPTH));
    // viewer 1 + 62 nested lists of followers, each of 1 x 1
    expect(body.extensions?.cost).toMatchObject({ requestedQueryCost: MAX_DEPTH - 1, actualQueryCost: MAX_DEPTH - 1 });
  });
});

describe('a subscription on GraphQL Yoga', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startGraphql('yoga', limit);
  });
  afterAll(() => server.close());

  const subscribe = async (user: string) => {
    const res = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'x-user': user },
      body: JSON.stringify({ query: 'subscription { userAdded { followers(limit: 500) { id } } }' }),
    });
    return { status: res.status, retryAfter: res.headers.get('retry-after'), events: await res.text() };
  };

  it('is charged its requested cost when it starts, and refused when the budget cannot pay it', async () => {
    const user = fresh();
    // userAdded 1 + followers 500 x 1 = 501, charged at the start, with no refund
    const started = await subscribe(user);
    expect(started.status).toBe(200);
    expect(started.events).toContain('"userAdded"');
    expect(await spent(user)).toBe(501);
    const refused = await subscribe(user);
    expect(refused.status).toBe(429);
    expect(refused.retryAfter).toMatch(/^\d+$/);
    expect(refused.events).toContain('"code":"THROTTLED"');
    expect(refused.events).not.toContain('"userAdded"');
    expect(await spent(user)).toBe(501);
  });
});
