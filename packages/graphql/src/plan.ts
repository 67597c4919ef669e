// The requested cost: what an operation may cost, from the document, the variables and the schema, before
// it runs. An object costs its weight (1) plus its selection, a scalar or an enum its weight (0), the root
// operation type nothing; a list n times its item, n from its slicing argument, else @listSize(assumedSize),
// else defaultListSize. An abstract type costs its most expensive possible type. The walk leaves a plan
// (each field's response key, weight and size, per possible type) that the actual cost follows.
import {
  type ArgumentNode,
  type FieldNode,
  type GraphQLField,
  type GraphQLObjectType,
  getNamedType,
  getNullableType,
  isAbstractType,
  isLeafType,
  isListType,
  Kind,
  type ValueNode,
} from 'graphql';
import { collectFields, type Fields } from './collect.js';
import { CostError } from './cost-error.js';
import { type FieldCost, fieldCost, typeCost } from './directives.js';
import { COST_MAX } from './options.js';
import { type Costing, fieldOf, type Prepared, weightOf } from './walk.js';

/** Deepest field sluice costs (a field of the root type is at depth 1): a deeper operation is refused. */
export const MAX_DEPTH = 64;
/** Most fields one costing visits (fragments expanded, each possible type of an abstract type apart): a wider operation is refused. */
export const MAX_FIELDS = 10_000;

/** The fields an object of one type selects, and what one such object costs. */
export interface TypePlan {
  type: GraphQLObjectType;
  /** What the object itself costs: its @cost, or `object`. */
  weight: number;
  /** The fields that can cost something: a leaf of weight 0, or an object whose every part weighs 0, is left out (the actual cost walks less). */
  fields: FieldPlan[];
  /** Requested: weight plus the fields' costs. */
  cost: number;
}

/** One selected field: a leaf (its weight per value) or an object (a plan per type it may be). */
export interface FieldPlan {
  key: string;
  /** A leaf's weight per value; unused for objects. */
  weight: number;
  /** The possible types of an object field; undefined for a leaf. */
  types?: TypePlan[];
}

/** An operation's plan: its requested cost (rounded up) and its root's fields. */
export interface Plan {
  cost: number;
  root: TypePlan;
}

interface State extends Costing {
  visits: number;
}

/**
 * The plan of a prepared operation, with its requested cost. Throws CostError for an operation sluice
 * cannot cost (too deep, too wide, a bad slicing argument or directive, a cost above 1e12).
 */
export function planOperation({ operation, root, costing }: Prepared): Plan {
  const plan = typePlan({ ...costing, visits: 0 }, root, 0, [operation.selectionSet], 1, undefined);
  if (!(plan.cost <= COST_MAX)) throw new CostError(`the operation's cost is above ${COST_MAX}: too large to charge`);
  return { cost: Math.ceil(plan.cost), root: plan };
}

/** A list size handed down by `@listSize(sizedFields)` to the named fields of a connection. */
interface Sized {
  fields: string[];
  n: number;
}

function typePlan(
  state: State,
  type: GraphQLObjectType,
  weight: number,
  sets: FieldNode['selectionSet'][],
  depth: number,
  sized: Sized | undefined,
): TypePlan {
  if (depth > MAX_DEPTH) throw new CostError(`the operation nests fields more than ${MAX_DEPTH} levels deep: too deep to cost`);
  const plan: TypePlan = { type, weight, fields: [], cost: weight };
  const fields: Fields = collectFields(state, type, sets);
  for (const [key, nodes] of fields) {
    if (++state.visits > MAX_FIELDS) throw new CostError(`the operation selects more than ${MAX_FIELDS} fields: too wide to cost`);
    const field = fieldOf(state.schema, type, (nodes[0] as FieldNode).name.value);
    if (field === undefined) continue;
    const n = sized?.fields.includes(field.name) ? sized.n : undefined;
    plan.cost += fieldPlan(state, plan, key, field, nodes, depth, n);
  }
  return plan;
}

/** Adds the field's plan to `parent`, and returns its requested cost. */
function fieldPlan(
  state: State,
  parent: TypePlan,
  key: string,
  field: GraphQLField<unknown, unknown>,
  nodes: FieldNode[],
  depth: number,
  given: number | undefined,
): number {
  const spec = fieldCost(field, parent.type.name);
  const node = nodes[0] as FieldNode;
  let type = getNullableType(field.type);
  let n = 1;
  if (isListType(type)) {
    n = given ?? sliceSize(state, parent.type, field, node, spec) ?? spec.assumedSize ?? state.weights.defaultListSize;
    // A list of lists: each inner list as its field's assumed size, else the default.
    for (type = getNullableType(type.ofType); isListType(type); type = getNullableType(type.ofType)) {
      n *= spec.assumedSize ?? state.weights.defaultListSize;
    }
  }
  const named = getNamedType(type);
  if (isLeafType(named)) {
    const weight = spec.weight ?? typeCost(named) ?? state.weights.scalar;
    if (weight > 0) parent.fields.push({ key, weight });
    return n * weight;
  }
  let sized: Sized | undefined;
  if (spec.sizedFields !== undefined) {
    const size = sliceSize(state, parent.type, field, node, spec) ?? spec.assumedSize;
    if (size !== undefined) sized = { fields: spec.sizedFields, n: size };
  }
  const sets = nodes.map((n) => n.selectionSet);
  const possible = isAbstractType(named) ? state.schema.getPossibleTypes(named) : [named];
  const types = possible.map((t) => typePlan(state, t, weightOf(state, spec, t, named), sets, depth + 1, sized));
  if (types.some((t) => t.weight > 0 || t.fields.length > 0)) parent.fields.push({ key, weight: 0, types });
  let most = 0;
  for (const t of types) if (t.cost > most) most = t.cost;
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
  let size: number | undefined;
  for (const path of spec.slicing) {
    const value = argumentValue(state, field, node.arguments, path);
    if (value === undefined || value === null) continue;
    if (!Number.isSafeInteger(value) || (value as number) < 0) {
      throw new CostError(`${path.join('.')} on ${parent.name}.${field.name} must be a whole number >= 0 to size the list`);
    }
    size = Math.max(size ?? 0, value as number);
  }
  return size;
}

/** The value at `path` of the field's arguments, as execution would see it: a literal, a variable, else the argument's default. */
function argumentValue(
  state: State,
  field: GraphQLField<unknown, unknown>,
  args: readonly ArgumentNode[] | undefined,
  path: string[],
): unknown {
  const [name, ...rest] = path;
  const node = args?.find((a) => a.name.value === name);
  const given = node === undefined ? undefined : valueAt(state, node.value, rest);
  if (given !== undefined) return given;
  let value = field.args.find((a) => a.name === name)?.defaultValue;
  for (const step of rest) value = typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[step] : undefined;
  return value;
}

function valueAt(state: State, node: ValueNode, path: string[]): unknown {
  if (node.kind === Kind.VARIABLE) {
    state.read.add(node.name.value);
    let value: unknown = state.variables[node.name.value];
    for (const step of path) value = typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[step] : undefined;
    return value;
  }
  if (path.length > 0) {
    if (node.kind !== Kind.OBJECT) return undefined;
    const inner = node.fields.find((f) => f.name.value === path[0]);
    return inner === undefined ? undefined : valueAt(state, inner.value, path.slice(1));
  }
  if (node.kind === Kind.NULL) return null;
  if (node.kind === Kind.INT) return Number.parseInt(node.value, 10);
  if (node.kind === Kind.FLOAT) return Number(node.value);
  return Number.NaN; // not a number: no size
}
