// The actual cost: the requested cost's formula over the result, with each list's real length. A field that
// returned null (or is absent) costs nothing; an object of an abstract type costs as its `__typename` says,
// else as its most expensive possible type.
import {
  type FieldNode,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLObjectType,
  getNamedType,
  isAbstractType,
  isLeafType,
  isObjectType,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import { collectFields, type Fields } from './collect.js';
import { type FieldCost, fieldCost, typeCost } from './directives.js';
import { type Costing, fieldOf, rootOf, weightOf } from './walk.js';

type Data = Record<string, unknown>;

/** The actual cost of `operation` given its result's `data`, rounded up to a whole number. */
export function actualCost(costing: Costing, operation: OperationDefinitionNode, data: unknown): number {
  const root = rootOf(costing.schema, operation);
  if (root === undefined || !isData(data)) return 0;
  return Math.ceil(selectionCost(costing, root, collectFields(costing, root, [operation.selectionSet]), data));
}

const isData = (value: unknown): value is Data => typeof value === 'object' && value !== null && !Array.isArray(value);

function selectionCost(costing: Costing, parent: GraphQLObjectType, fields: Fields, data: Data): number {
  let total = 0;
  for (const [key, nodes] of fields) {
    const value = data[key];
    if (value === undefined || value === null) continue;
    const field = fieldOf(costing.schema, parent, (nodes[0] as FieldNode).name.value);
    if (field !== undefined) total += valueCost(costing, parent, field, nodes, value);
  }
  return total;
}

function valueCost(
  costing: Costing,
  parent: GraphQLObjectType,
  field: GraphQLField<unknown, unknown>,
  nodes: FieldNode[],
  value: unknown,
): number {
  const spec = fieldCost(field, parent.name);
  const named = getNamedType(field.type);
  if (isLeafType(named)) {
    const weight = spec.weight ?? typeCost(named) ?? costing.weights.scalar;
    return weight === 0 ? 0 : weight * count(value);
  }
  const item = itemCost(
    costing,
    spec,
    named,
    nodes.map((node) => node.selectionSet),
  );
  return sum(value, item);
}

/** The cost of one object of a field's type; the fields each possible type collects are collected once per field. */
function itemCost(
  costing: Costing,
  spec: FieldCost,
  declared: GraphQLNamedType,
  sets: Array<SelectionSetNode | undefined>,
): (object: Data) => number {
  const collected = new Map<GraphQLObjectType, Fields>();
  const costAs = (type: GraphQLObjectType, object: Data): number => {
    let fields = collected.get(type);
    if (fields === undefined) {
      fields = collectFields(costing, type, sets);
      collected.set(type, fields);
    }
    return weightOf(costing, spec, type, declared) + selectionCost(costing, type, fields, object);
  };
  if (isObjectType(declared)) return (object) => costAs(declared, object);
  if (!isAbstractType(declared)) return () => 0;
  const possible = costing.schema.getPossibleTypes(declared);
  return (object) => {
    const named = typeof object.__typename === 'string' ? costing.schema.getType(object.__typename) : undefined;
    if (isObjectType(named) && possible.includes(named)) return costAs(named, object);
    let most = 0;
    for (const type of possible) most = Math.max(most, costAs(type, object));
    return most;
  };
}

/** The leaves of a value (a list's items, nested lists flattened) that are not null. */
function count(value: unknown): number {
  if (!Array.isArray(value)) return value === null || value === undefined ? 0 : 1;
  let n = 0;
  for (const item of value) n += count(item);
  return n;
}

function sum(value: unknown, cost: (object: Data) => number): number {
  if (isData(value)) return cost(value);
  if (!Array.isArray(value)) return 0;
  let total = 0;
  for (const item of value) total += sum(item, cost);
  return total;
}
