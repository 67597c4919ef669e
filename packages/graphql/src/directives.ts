// IBM's GraphQL Cost Directives, as the schema spells them: `@cost(weight)` on a field or a type and
// `@listSize(assumedSize, slicingArguments, sizedFields)` on a field. Read once per field and per type from
// the schema's SDL (astNode and extensions), checked as they are read.
import {
  type ConstDirectiveNode,
  type GraphQLField,
  type GraphQLNamedType,
  getNamedType,
  getNullableType,
  isInterfaceType,
  isListType,
  isObjectType,
  valueFromASTUntyped,
} from 'graphql';
import { CostError } from './cost-error.js';

/**
 * The directives' SDL, to add to a schema's type definitions (IBM's GraphQL Cost Directives, the parts
 * sluice reads: `@cost` replaces the weight of a field or a type, `@listSize` sizes a list).
 * @example createSchema({ typeDefs: [costDirectives, typeDefs], resolvers })
 */
export const costDirectives = `directive @cost(weight: String!) on FIELD_DEFINITION | OBJECT | INTERFACE | UNION | ENUM | SCALAR
directive @listSize(assumedSize: Int, slicingArguments: [String!], sizedFields: [String!]) on FIELD_DEFINITION
`;

/** What the directives say of one field. */
export interface FieldCost {
  /** `@cost(weight)` on the field. */
  weight?: number;
  /** `@listSize(slicingArguments)`, each a path of argument names ('first', 'filter.max'); default first and last. */
  slicing: string[][];
  /** `@listSize(assumedSize)`. */
  assumedSize?: number;
  /** `@listSize(sizedFields)`: the fields of the returned object that hold its list. */
  sizedFields?: string[];
}

type Named = { astNode?: { directives?: readonly ConstDirectiveNode[] } | null | undefined };

const DEFAULT_SLICING = [['first'], ['last']];
const fields = new WeakMap<GraphQLField<unknown, unknown>, FieldCost>();
const types = new WeakMap<GraphQLNamedType, number | undefined>();

/** The directive's arguments as plain values, or undefined when the node does not carry it. */
function directiveArgs(nodes: ReadonlyArray<Named['astNode'] | undefined>, name: string): Record<string, unknown> | undefined {
  for (const node of nodes) {
    const directive = node?.directives?.find((d) => d.name.value === name);
    if (directive === undefined) continue;
    const args: Record<string, unknown> = {};
    for (const arg of directive.arguments ?? []) args[arg.name.value] = valueFromASTUntyped(arg.value);
    return args;
  }
  return undefined;
}

function weightOf(args: Record<string, unknown> | undefined, where: string): number | undefined {
  if (args === undefined) return undefined;
  const raw = args.weight;
  const weight = typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : raw;
  if (typeof weight !== 'number' || !Number.isFinite(weight) || weight < 0) {
    throw new CostError(`@cost(weight:) on ${where} must be a number >= 0 (as a string, "2.5")`);
  }
  return weight;
}

function names(value: unknown, what: string): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  const list = Array.isArray(value) ? value : [value];
  if (!list.every((v) => typeof v === 'string' && v !== '')) throw new CostError(`${what} must be a list of names`);
  return list as string[];
}

/** The cost directives of a field, read and checked once. Throws CostError for arguments sluice cannot use. */
export function fieldCost(field: GraphQLField<unknown, unknown>, parent: string): FieldCost {
  const known = fields.get(field);
  if (known !== undefined) return known;
  const where = `${parent}.${field.name}`;
  const spec: FieldCost = { slicing: DEFAULT_SLICING };
  const weight = weightOf(directiveArgs([field.astNode], 'cost'), where);
  if (weight !== undefined) spec.weight = weight;
  const listSize = directiveArgs([field.astNode], 'listSize');
  if (listSize !== undefined) {
    const { assumedSize } = listSize;
    if (assumedSize !== undefined && assumedSize !== null) {
      if (!Number.isSafeInteger(assumedSize) || (assumedSize as number) < 0) {
        throw new CostError(`@listSize(assumedSize:) on ${where} must be an integer >= 0`);
      }
      spec.assumedSize = assumedSize as number;
    }
    const slicing = names(listSize.slicingArguments, `@listSize(slicingArguments:) on ${where}`);
    if (slicing !== undefined) {
      spec.slicing = slicing.map((path) => path.split('.'));
      for (const path of spec.slicing) {
        if (!field.args.some((a) => a.name === path[0])) {
          throw new CostError(`@listSize(slicingArguments:) on ${where} names "${path.join('.')}", not an argument of the field`);
        }
      }
    }
    const sized = names(listSize.sizedFields, `@listSize(sizedFields:) on ${where}`);
    if (sized !== undefined) {
      const type = getNamedType(field.type);
      for (const name of sized) {
        const child = isObjectType(type) || isInterfaceType(type) ? type.getFields()[name] : undefined;
        if (child === undefined || !isListType(getNullableType(child.type))) {
          throw new CostError(`@listSize(sizedFields:) on ${where} names "${name}", not a list field of ${type.name}`);
        }
      }
      spec.sizedFields = sized;
    }
  }
  fields.set(field, spec);
  return spec;
}

/** `@cost(weight)` on a type (its definition or an extension of it), read and checked once. */
export function typeCost(type: GraphQLNamedType): number | undefined {
  if (types.has(type)) return types.get(type);
  const nodes: Named['astNode'][] = [type.astNode, ...(type.extensionASTNodes ?? [])];
  const weight = weightOf(directiveArgs(nodes, 'cost'), type.name);
  types.set(type, weight);
  return weight;
}
