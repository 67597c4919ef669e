// The cost model's corners, by hand: the servers' tests (test/graphql.http.test.ts) cover the common cases.
import { buildSchema, type GraphQLSchema, parse } from 'graphql';
import { actualCost } from './actual.js';
import { costDirectives } from './directives.js';
import type { Weights } from './options.js';
import { planOperation } from './plan.js';
import { prepare } from './walk.js';

const DEFAULTS: Weights = { object: 1, scalar: 0, defaultListSize: 10 };

const schema = buildSchema(`${costDirectives}
  type Query {
    search(first: Int): [Result!]!
    node: Node
    feed(filter: Filter = { max: 4 }): [Item!]! @listSize(slicingArguments: ["filter.max"])
    page(size: Int): Page! @listSize(assumedSize: 6, sizedFields: ["items"])
    bare: Page! @listSize(sizedFields: ["items"])
    grid: [[Item]]
    labels(first: Int): [String!]! @cost(weight: "0.5")
    gold: Gold
  }
  input Filter { max: Int }
  union Result = Item | Gold
  interface Node @cost(weight: "3") { id: ID! }
  type Item implements Node { id: ID! name: String! }
  type Gold implements Node { id: ID! carats: Int! }
  extend type Gold @cost(weight: "7")
  type Page { items: [Item!]! total: Int! }
`);

function costs(query: string, variables?: Record<string, unknown>, weights = DEFAULTS, on: GraphQLSchema = schema) {
  const prepared = prepare({ schema: on, document: parse(query), variables }, weights);
  if (prepared === undefined) throw new Error('not an operation');
  return {
    requested: () => planOperation(prepared).cost,
    actual: (data: unknown) => actualCost(planOperation(prepared), data),
  };
}

describe('the requested cost', () => {
  it('a union costs its dearest member: @cost on a type, and on an extension of it', () => {
    // search(first: 2): 2 x max(Item 1, Gold 7 (its extension's @cost)) = 14
    expect(costs('{ search(first: 2) { ... on Item { name } ... on Gold { carats } } }').requested()).toBe(14);
  });

  it("an interface's @cost weighs each implementation that has none of its own", () => {
    // node: max(Item: Node's 3, Gold: its own 7) = 7
    expect(costs('{ node { id } }').requested()).toBe(7);
  });

  it('a slicing argument inside an input object, with its default value', () => {
    expect(costs('{ feed { id } }').requested()).toBe(4); // the default { max: 4 }
    expect(costs('query ($f: Filter) { feed(filter: $f) { id } }', { f: { max: 9 } }).requested()).toBe(9);
  });

  it('sizedFields hands assumedSize to the list field of a connection', () => {
    // page 1 + items 6 x 1 + total 0; bare: no size, so items takes defaultListSize
    expect(costs('{ page { items { id } total } }').requested()).toBe(7);
    expect(costs('{ page(size: 2) { items { id } } }').requested()).toBe(7); // size is not a slicing argument here
    expect(costs('{ bare { items { id } } }').requested()).toBe(11);
  });

  it('a list of lists multiplies each level by the default size', () => {
    expect(costs('{ grid { id } }').requested()).toBe(100);
  });

  it('@cost on a list of scalars weighs each item, rounded up once for the operation', () => {
    expect(costs('{ labels(first: 3) }').requested()).toBe(2); // 3 x 0.5 = 1.5
  });

  it('the weights option sets what the directives do not', () => {
    const weights = { object: 2, scalar: 1, defaultListSize: 3 };
    // grid: 3 x 3 x (Item 2 + id 1 + name 1) = 36
    expect(costs('{ grid { id name } }', undefined, weights).requested()).toBe(36);
  });

  it('a @cost directive declared with an Int weight (as Apollo spells it) is read too', () => {
    const apolloStyle = buildSchema(`
      directive @cost(weight: Int!) on FIELD_DEFINITION | OBJECT
      type Query { report: Report @cost(weight: 12) }
      type Report { id: ID! }
    `);
    expect(costs('{ report { id } }', undefined, DEFAULTS, apolloStyle).requested()).toBe(12);
  });

  it.each([
    ['a weight that is not a number', 'field: Thing @cost(weight: "lots")', /@cost\(weight:\) on Query\.field must be a number >= 0/],
    ['a negative weight', 'field: Thing @cost(weight: "-2")', /@cost\(weight:\) on Query\.field must be a number >= 0/],
    [
      'a negative assumedSize',
      'field: [Thing] @listSize(assumedSize: -1)',
      /@listSize\(assumedSize:\) on Query\.field must be an integer >= 0/,
    ],
    [
      'a slicing argument the field lacks',
      'field(first: Int): [Thing] @listSize(slicingArguments: ["limit"])',
      /names "limit", not an argument/,
    ],
    ['a sized field that is not a list', 'field: Thing @listSize(sizedFields: ["id"])', /names "id", not a list field of Thing/],
  ])('%s is an error that names the field', (_what, field, message) => {
    const bad = buildSchema(`${costDirectives} type Query { ${field} } type Thing { id: ID! }`);
    expect(() => costs('{ field { id } }', undefined, DEFAULTS, bad).requested()).toThrow(message);
  });
});

describe('the actual cost', () => {
  it('an object of a union costs as its __typename says, else as its dearest possible type', () => {
    const { actual } = costs('{ search(first: 5) { __typename ... on Item { name } } }');
    expect(actual({ search: [{ __typename: 'Item', name: 'a' }, { __typename: 'Gold' }] })).toBe(8); // 1 + 7
    const untyped = costs('{ search(first: 5) { ... on Item { name } } }');
    expect(untyped.actual({ search: [{ name: 'a' }] })).toBe(7); // Item 1 or Gold 7: the dearer
  });

  it('null items, null fields and absent fields cost nothing', () => {
    const { actual } = costs('{ search(first: 5) { ... on Item { name } } page { items { id } } labels(first: 9) }');
    expect(actual({ search: [null, null], page: null, labels: ['a', null, 'b'] })).toBe(1); // 2 labels x 0.5
    expect(actual(null)).toBe(0);
  });

  it('the lists of a result count by their real length', () => {
    const { actual } = costs('{ page { items { id } } grid { id } }');
    expect(actual({ page: { items: [{ id: 1 }, { id: 2 }, { id: 3 }] }, grid: [[{ id: 1 }], [{ id: 2 }, null]] })).toBe(6); // 1 + 3, and 2
  });
});
