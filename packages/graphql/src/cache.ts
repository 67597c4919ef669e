// Plans by operation: servers keep a parsed document per query text (Yoga, Apollo Server and Mercurius
// each cache them), so an operation seen before with the same variables is costed once, its outcome (a
// plan, or why it cannot be costed) kept beside its document while the server keeps the document.
import type { DocumentNode, GraphQLSchema } from 'graphql';
import { CostError } from './cost-error.js';
import type { Weights } from './options.js';
import { type Plan, planOperation } from './plan.js';
import { type OperationRequest, prepare } from './walk.js';

/** A costed operation: its plan, or why it cannot be costed. */
export type Costed = { plan: Plan } | { error: string };

/** Operations kept per document, each with its variables: enough for a document run with a few variable sets. */
const PER_DOCUMENT = 16;

/** Costs operations for one set of weights, each (document, operation name, variables) once. */
export function planCache(weights: Weights): (request: OperationRequest) => Costed | undefined {
  const bySchema = new WeakMap<GraphQLSchema, WeakMap<DocumentNode, Map<string, Costed>>>();

  function entriesOf(request: OperationRequest): Map<string, Costed> {
    let byDocument = bySchema.get(request.schema);
    if (byDocument === undefined) {
      byDocument = new WeakMap();
      bySchema.set(request.schema, byDocument);
    }
    let entries = byDocument.get(request.document);
    if (entries === undefined) {
      entries = new Map();
      byDocument.set(request.document, entries);
    }
    return entries;
  }

  return function costed(request) {
    let id: string | undefined;
    try {
      const variables = request.variables;
      id = `${request.operationName ?? ''}\n${variables === undefined || variables === null ? '' : JSON.stringify(variables)}`;
    } catch {
      id = undefined; // variables that are not JSON (a BigInt, a cycle): costed each time
    }
    const entries = entriesOf(request);
    const known = id === undefined ? undefined : entries.get(id);
    if (known !== undefined) return known;
    const prepared = prepare(request, weights);
    if (prepared === undefined) return undefined;
    let outcome: Costed;
    try {
      outcome = { plan: planOperation(prepared) };
    } catch (error) {
      if (!(error instanceof CostError)) throw error;
      outcome = { error: error.message };
    }
    if (id !== undefined) {
      if (entries.size >= PER_DOCUMENT) entries.delete(entries.keys().next().value as string);
      entries.set(id, outcome);
    }
    return outcome;
  };
}
