// The requested cost: what an operation may cost, from the document, the variables and the schema, before
// it runs. An object costs its weight (1) plus its selection, a scalar or an enum its weight (0), the root
// operation type nothing; a list n times its item, n from its slicing argument, else @listSize(assumedSize),
// else defaultListSize. An abstract type costs its most expensive possible type.
import {
  type FieldNode,
  type GraphQLField,
  type GraphQLObjectType,
  getArgumentValues,
  getNamedType,
  getNullableType,
  isAbstractType,
  isLeafType,
  isListType,
  type OperationDefinitionNode,
} from 'graphql';
import { collectFields, type Fields } from './collect.js';
import { CostError } from './cost-error.js';
import { type FieldCost, fieldCost, typeCost } from './directives.js';
import { COST_MAX } from './options.js';
import { type Costing, fieldOf, rootOf, weightOf } from './walk.js';

/** Deepest field sluice costs (a field of the root type is at depth 1): a deeper operation is refused. */
export const MAX_DEPTH = 64;
/** Most fields one costing visits (fragments expanded, each possible type of an abstract type apart): a wider operation is refused. */
export const MAX_FIELDS = 10_000;

interface State extends Costing {
  visits: number;
}

/** A list size handed down by `@listSize(sizedFields)` to the named fields of a connection. */
interface Sized {
  fields: string[];
  n: number;
}

/**
 * The requested cost of `operation`, rounded up to a whole number. Throws CostError for an operation
 * sluice cannot cost (too deep, too wide, a bad slicing argument or directive, a cost above 1e12).
 */
export function requestedCost(costing: Costing, operation: OperationDefinitionNode): number {
  const root = rootOf(costing.schema, operation);
  if (root === undefined) return 0;
  const state: State = { ...costing, visits: 0 };
  const cost = selectionCost(state, root, collectFields(state, root, [operation.selectionSet]), 1, undefined);
  if (!(cost <= COST_MAX)) throw new CostError(`the operation's cost is above ${COST_MAX}: too large to charge`);
  return Math.ceil(cost);
}

function selectionCost(state: State, parent: GraphQLObjectType, fields: Fields, depth: number, sized: Sized | undefined): number {
  if (depth > MAX_DEPTH) throw new CostError(`the operation nests fields more than ${MAX_DEPTH} levels deep: too deep to cost`);
  let total = 0;
  for (const nodes of fields.values()) {
    if (++state.visits > MAX_FIELDS) throw new CostError(`the operation selects more than ${MAX_FIELDS} fields: too wide to cost`);
    const node = nodes[0] as FieldNode;
    const field = fieldOf(state.schema, parent, node.name.value);
    if (field === undefined) continue;
    const n = sized?.fields.includes(field.name) ? sized.n : undefined;
    total += costOfField(state, parent, field, nodes, depth, n);
  }
  return total;
}

function costOfField(
  state: State,
  parent: GraphQLObjectType,
  field: GraphQLField<unknown, unknown>,
  nodes: FieldNode[],
  depth: number,
  given: number | undefined,
): number {
  const spec = fieldCost(field, parent.name);
  let type = getNullableType(field.type);
  let n = 1;
  if (isListType(type)) {
    n = given ?? sliceSize(state, parent, field, nodes[0] as FieldNode, spec) ?? spec.assumedSize ?? state.weights.defaultListSize;
    // A list of lists: each inner list as its field's assumed size, else the default.
    for (type = getNullableType(type.ofType); isListType(type); type = getNullableType(type.ofType)) {
      n *= spec.assumedSize ?? state.weights.defaultListSize;
    }
  }
  const named = getNamedType(type);
  if (isLeafType(named)) return n * (spec.weight ?? typeCost(named) ?? state.weights.scalar);
  let sized: Sized | undefined;
  if (spec.sizedFields !== undefined) {
    const size = sliceSize(state, parent, field, nodes[0] as FieldNode, spec) ?? spec.assumedSize;
    if (size !== undefined) sized = { fields: spec.sizedFields, n: size };
  }
  const sets = nodes.map((node) => node.selectionSet);
  const possible = isAbstractType(named) ? state.schema.getPossibleTypes(named) : [named];
  let most = 0;
  for (const type of possible) {
    const cost = weightOf(state, spec, type, named) + selectionCost(state, type, collectFields(state, type, sets), depth + 1, sized);
    if (cost > most) most = cost;
  }
  return n * most;
}

/**
 * The largest slicing argument the field is given (its default counted), or undefined when none is. A
 * slicing argument that is not a whole number >= 0 cannot size a list: CostError.
 */
function sliceSize(
  state: State,
  parent: GraphQLObjectType,
  field: GraphQLField<unknown, unknown>,
  node: FieldNode,
  spec: FieldCost,
): number | undefined {
  if (field.args.length === 0) return undefined;
  let args: Record<string, unknown>;
  try {
    args = getArgumentValues(field, node, state.variables);
  } catch {
    return undefined; // the server's own argument error answers it
  }
  let size: number | undefined;
  for (const path of spec.slicing) {
    let value: unknown = args;
    for (const name of path) value = typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[name] : undefined;
    if (value === undefined || value === null) continue;
    if (!Number.isSafeInteger(value) || (value as number) < 0) {
      throw new CostError(`${path.join('.')} on ${parent.name}.${field.name} must be a whole number >= 0 to size the list`);
    }
    size = Math.max(size ?? 0, value as number);
  }
  return size;
}
