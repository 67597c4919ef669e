// The plan cache: an operation costed once per document and per values of the variables its costing reads.
import { buildSchema, parse } from 'graphql';
import { type Costed, planCache } from './cache.js';
import { costDirectives } from './directives.js';

const schema = buildSchema(`${costDirectives}
  type Query { items(first: Int, after: String): [Item!]! }
  type Item { id: ID! tags(first: Int): [String!]! @cost(weight: "1") }
`);
const weights = { object: 1, scalar: 0, defaultListSize: 10 };
const costOf = (outcome: Costed | undefined) => (outcome !== undefined && 'plan' in outcome ? outcome.plan.cost : outcome);

describe('the plan cache', () => {
  it('a variable that sizes no list (a cursor) reuses the plan of the operation', () => {
    const costed = planCache(weights);
    const document = parse('query ($n: Int, $after: String) { items(first: $n, after: $after) { id } }');
    const first = costed({ schema, document, variables: { n: 3, after: 'a' } });
    expect(costOf(first)).toBe(3);
    for (const after of ['b', 'c', 'd']) expect(costed({ schema, document, variables: { n: 3, after } })).toBe(first);
  });

  it('a variable that sizes a list is costed per value, and an absent one apart from null', () => {
    const costed = planCache(weights);
    const document = parse('query ($n: Int) { items(first: $n) { id } }');
    expect(costOf(costed({ schema, document, variables: { n: 2 } }))).toBe(2);
    expect(costOf(costed({ schema, document, variables: { n: 7 } }))).toBe(7);
    expect(costOf(costed({ schema, document, variables: { n: 2 } }))).toBe(2);
    expect(costOf(costed({ schema, document, variables: {} }))).toBe(10); // no size: defaultListSize
    expect(costOf(costed({ schema, document, variables: { n: null } }))).toBe(10);
  });

  it('a variable read only when another lets the field in (@include) keys the plans from then on', () => {
    const costed = planCache(weights);
    const document = parse('query ($with: Boolean!, $t: Int) { items(first: 2) { id tags(first: $t) @include(if: $with) } }');
    // items 2 x (Item 1 + tags t x 1)
    expect(costOf(costed({ schema, document, variables: { with: false, t: 5 } }))).toBe(2);
    expect(costOf(costed({ schema, document, variables: { with: true, t: 5 } }))).toBe(12);
    expect(costOf(costed({ schema, document, variables: { with: true, t: 1 } }))).toBe(4);
    expect(costOf(costed({ schema, document, variables: { with: false, t: 1 } }))).toBe(2);
    expect(costOf(costed({ schema, document, variables: { with: true, t: 5 } }))).toBe(12);
  });

  it('variables that do not coerce, or an operation not in the document, are not costed', () => {
    const costed = planCache(weights);
    const document = parse('query Q ($n: Int) { items(first: $n) { id } }');
    expect(costed({ schema, document, variables: { n: 'many' } })).toBeUndefined();
    expect(costed({ schema, document, operationName: 'Other', variables: { n: 1 } })).toBeUndefined();
    expect(costOf(costed({ schema, document, operationName: 'Q', variables: { n: 1 } }))).toBe(1);
  });
});
