// Where costing starts: the operation a request runs, its root type, fragments and coerced variables; the
// field a name selects (the introspection fields too: no bypass); the weight of an object.
import {
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLObjectType,
  type GraphQLSchema,
  getOperationAST,
  getVariableValues,
  Kind,
  type OperationDefinitionNode,
  SchemaMetaFieldDef,
  TypeMetaFieldDef,
  TypeNameMetaFieldDef,
} from 'graphql';
import type { Walk } from './collect.js';
import { type FieldCost, typeCost } from './directives.js';
import type { Weights } from './options.js';

/** One operation's costing: its schema, fragments and coerced variables, and the weights. */
export interface Costing extends Walk {
  weights: Weights;
}

/** What a server is about to run. */
export interface OperationRequest {
  schema: GraphQLSchema;
  document: DocumentNode;
  operationName?: string | null | undefined;
  variables?: Readonly<Record<string, unknown>> | null | undefined;
}

/** An operation that would run as given: its root type, and its costing. */
export interface Prepared {
  operation: OperationDefinitionNode;
  root: GraphQLObjectType;
  costing: Costing;
}

const fragmentsByDocument = new WeakMap<DocumentNode, Record<string, FragmentDefinitionNode>>();

/** The document's fragments by name, found once per document. */
export function fragmentsOf(document: DocumentNode): Record<string, FragmentDefinitionNode> {
  let fragments = fragmentsByDocument.get(document);
  if (fragments === undefined) {
    fragments = Object.create(null) as Record<string, FragmentDefinitionNode>;
    for (const definition of document.definitions) {
      if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments[definition.name.value] = definition;
    }
    fragmentsByDocument.set(document, fragments);
  }
  return fragments;
}

/** The operation a request names and its root type, or undefined when there is no such operation to run. */
export function operationOf(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | null | undefined,
): { operation: OperationDefinitionNode; root: GraphQLObjectType } | undefined {
  const operation = getOperationAST(document, operationName);
  if (operation === null || operation === undefined) return undefined;
  const root = rootOf(schema, operation);
  return root === undefined ? undefined : { operation, root };
}

const NONE: Record<string, unknown> = Object.freeze(Object.create(null));

/** The request's variables as execution coerces them, or undefined when they do not coerce (the server's error). */
export function coerceVariables(
  schema: GraphQLSchema,
  operation: OperationDefinitionNode,
  variables: OperationRequest['variables'],
): Record<string, unknown> | undefined {
  if (operation.variableDefinitions === undefined || operation.variableDefinitions.length === 0) return NONE;
  const coerced = getVariableValues(schema, operation.variableDefinitions, variables ?? {});
  return coerced.errors === undefined ? coerced.coerced : undefined;
}

/**
 * The operation a request runs and its costing, or undefined when it would not run as given (no such
 * operation, variables that do not coerce): the server answers that with its own error, charged nothing.
 */
export function prepare(request: OperationRequest, weights: Weights): Prepared | undefined {
  const found = operationOf(request.schema, request.document, request.operationName);
  if (found === undefined) return undefined;
  const variables = coerceVariables(request.schema, found.operation, request.variables);
  if (variables === undefined) return undefined;
  const fragments = fragmentsOf(request.document);
  return { ...found, costing: { schema: request.schema, fragments, variables, weights, read: new Set() } };
}

/** The root type of an operation: it costs nothing, only its fields do. */
export function rootOf(schema: GraphQLSchema, operation: OperationDefinitionNode): GraphQLObjectType | undefined {
  const root =
    operation.operation === 'query'
      ? schema.getQueryType()
      : operation.operation === 'mutation'
        ? schema.getMutationType()
        : schema.getSubscriptionType();
  return root ?? undefined;
}

/** The field `name` selects on `parent`: its own, or an introspection field (`__schema` and `__type` on the query type, `__typename` anywhere). */
export function fieldOf(schema: GraphQLSchema, parent: GraphQLObjectType, name: string): GraphQLField<unknown, unknown> | undefined {
  if (name.startsWith('__')) {
    if (name === '__typename') return TypeNameMetaFieldDef;
    if (parent !== schema.getQueryType()) return undefined;
    if (name === '__schema') return SchemaMetaFieldDef;
    if (name === '__type') return TypeMetaFieldDef;
  }
  return parent.getFields()[name];
}

/** What one object of `type` costs, reached through a field of type `declared`: the field's @cost, else the type's, else the declared interface's or union's, else `object`. */
export function weightOf(costing: Costing, spec: FieldCost, type: GraphQLObjectType, declared: GraphQLNamedType): number {
  return spec.weight ?? typeCost(type) ?? (declared === type ? undefined : typeCost(declared)) ?? costing.weights.object;
}
