// Plans by operation: servers keep a parsed document per query text (Yoga, Apollo Server and Mercurius
// each cache them), so an operation is found and costed once per document, its outcome (a plan, or why it
// cannot be costed) kept beside the document while the server keeps it. A plan depends on the variables
// only through those its costing read (in @skip and @include, and in slicing arguments): plans are kept
// per values of those, so a variable that sizes no list (a cursor, an id) never costs the operation again.
import type { DocumentNode, GraphQLObjectType, GraphQLSchema, OperationDefinitionNode } from 'graphql';
import { CostError } from './cost-error.js';
import type { Weights } from './options.js';
import { type Plan, planOperation } from './plan.js';
import { coerceVariables, fragmentsOf, type OperationRequest, operationOf } from './walk.js';

/** A costed operation: its plan, or why it cannot be costed. */
export type Costed = { plan: Plan } | { error: string };

/** Plans kept per operation, each for one set of values of the variables costing reads. */
const PER_OPERATION = 16;

/** One operation of a document, and its plans by the values of the variables they read. */
interface Operation {
  operation: OperationDefinitionNode;
  root: GraphQLObjectType;
  /** Every variable a costing of it has read so far (a value of one can lead a costing to read others). */
  read: string[];
  plans: Map<string, Costed>;
}

/** Costs operations for one set of weights, each (document, operation name, values of the variables read) once. */
export function planCache(weights: Weights): (request: OperationRequest) => Costed | undefined {
  const bySchema = new WeakMap<GraphQLSchema, WeakMap<DocumentNode, Map<string, Operation>>>();

  function operationFor(request: OperationRequest): Operation | undefined {
    let byDocument = bySchema.get(request.schema);
    if (byDocument === undefined) {
      byDocument = new WeakMap();
      bySchema.set(request.schema, byDocument);
    }
    let operations = byDocument.get(request.document);
    if (operations === undefined) {
      operations = new Map();
      byDocument.set(request.document, operations);
    }
    const name = request.operationName ?? '';
    let known = operations.get(name);
    if (known === undefined) {
      const found = operationOf(request.schema, request.document, request.operationName);
      if (found === undefined) return undefined;
      known = { ...found, read: [], plans: new Map() };
      operations.set(name, known);
    }
    return known;
  }

  return function costed(request) {
    const op = operationFor(request);
    if (op === undefined) return undefined;
    const variables = coerceVariables(request.schema, op.operation, request.variables);
    if (variables === undefined) return undefined;
    const id = idOf(op.read, variables);
    const known = id === undefined ? undefined : op.plans.get(id);
    if (known !== undefined) return known;

    const costing = { schema: request.schema, fragments: fragmentsOf(request.document), variables, weights, read: new Set<string>() };
    let outcome: Costed;
    try {
      outcome = { plan: planOperation({ operation: op.operation, root: op.root, costing }) };
    } catch (error) {
      if (!(error instanceof CostError)) throw error;
      outcome = { error: error.message };
    }
    // A variable read for the first time: the plans kept are keyed on too few values.
    if ([...costing.read].some((name) => !op.read.includes(name))) {
      op.read = [...new Set([...op.read, ...costing.read])];
      op.plans.clear();
    }
    const kept = idOf(op.read, variables);
    if (kept !== undefined) {
      if (op.plans.size >= PER_OPERATION) op.plans.delete(op.plans.keys().next().value as string);
      op.plans.set(kept, outcome);
    }
    return outcome;
  };
}

/** The values of the variables `read`, as one string; undefined for values that are not JSON (a BigInt): costed each time. */
function idOf(read: readonly string[], variables: Record<string, unknown>): string | undefined {
  if (read.length === 0) return '';
  // By name: an absent variable (its argument's default applies) is not one given as null.
  const values: Record<string, unknown> = {};
  for (const name of read) if (Object.hasOwn(variables, name)) values[name] = variables[name];
  try {
    return JSON.stringify(values);
  } catch {
    return undefined;
  }
}
