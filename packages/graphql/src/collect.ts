// The fields an object of one type gets from a selection, as execution groups them: by response key
// (an alias, else the name), through fragments and inline fragments whose type condition it meets, without
// those that @skip or @include leave out.
import {
  type FieldNode,
  type FragmentDefinitionNode,
  type FragmentSpreadNode,
  GraphQLIncludeDirective,
  type GraphQLObjectType,
  type GraphQLSchema,
  GraphQLSkipDirective,
  getDirectiveValues,
  type InlineFragmentNode,
  isAbstractType,
  Kind,
  type SelectionSetNode,
} from 'graphql';

/** What one operation's walk knows: the schema, its fragments, its coerced variables. */
export interface Walk {
  schema: GraphQLSchema;
  fragments: Record<string, FragmentDefinitionNode>;
  variables: Record<string, unknown>;
  /** The variables the walk read (in @skip and @include, in slicing arguments): all a costing depends on. */
  read: Set<string>;
}

/** Response key -> the field nodes execution merges under it. */
export type Fields = Map<string, FieldNode[]>;

/** The fields that an object of `type` gets from `selectionSets` (one, or the merged ones of a response key). */
export function collectFields(walk: Walk, type: GraphQLObjectType, selectionSets: ReadonlyArray<SelectionSetNode | undefined>): Fields {
  const fields: Fields = new Map();
  const visited = new Set<string>();
  for (const set of selectionSets) if (set !== undefined) collect(walk, type, set, fields, visited);
  return fields;
}

function collect(walk: Walk, type: GraphQLObjectType, set: SelectionSetNode, fields: Fields, visited: Set<string>): void {
  for (const selection of set.selections) {
    if (!included(walk, selection)) continue;
    if (selection.kind === Kind.FIELD) {
      const key = selection.alias?.value ?? selection.name.value;
      const group = fields.get(key);
      if (group === undefined) fields.set(key, [selection]);
      else group.push(selection);
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      if (applies(walk, selection.typeCondition?.name.value, type)) collect(walk, type, selection.selectionSet, fields, visited);
    } else {
      const name = selection.name.value;
      if (visited.has(name)) continue;
      visited.add(name);
      const fragment = walk.fragments[name];
      if (fragment !== undefined && applies(walk, fragment.typeCondition.name.value, type))
        collect(walk, type, fragment.selectionSet, fields, visited);
    }
  }
}

function included(walk: Walk, node: FieldNode | FragmentSpreadNode | InlineFragmentNode): boolean {
  if (node.directives === undefined || node.directives.length === 0) return true;
  for (const directive of node.directives) {
    const name = directive.name.value;
    if (name !== 'skip' && name !== 'include') continue;
    for (const argument of directive.arguments ?? []) if (argument.value.kind === Kind.VARIABLE) walk.read.add(argument.value.name.value);
  }
  if (getDirectiveValues(GraphQLSkipDirective, node, walk.variables)?.if === true) return false;
  return getDirectiveValues(GraphQLIncludeDirective, node, walk.variables)?.if !== false;
}

function applies(walk: Walk, condition: string | undefined, type: GraphQLObjectType): boolean {
  if (condition === undefined || condition === type.name) return true;
  const conditional = walk.schema.getType(condition);
  return conditional !== undefined && conditional !== null && isAbstractType(conditional) && walk.schema.isSubType(conditional, type);
}
