// The actual cost: the requested cost's formula over the result, following the operation's plan, with
// each list's real length. A field that returned null (or is absent) costs nothing; an object of an
// abstract type costs as its `__typename` says, else as its most expensive possible type.
import type { FieldPlan, Plan, TypePlan } from './plan.js';

type Data = Record<string, unknown>;

/** The actual cost of an operation given its plan and its result's `data`, rounded up to a whole number. */
export function actualCost(plan: Plan, data: unknown): number {
  return isData(data) ? Math.ceil(fieldsCost(plan.root, data)) : 0;
}

const isData = (value: unknown): value is Data => typeof value === 'object' && value !== null && !Array.isArray(value);

function fieldsCost(plan: TypePlan, data: Data): number {
  let total = 0;
  for (const field of plan.fields) {
    const value = data[field.key];
    if (value !== undefined && value !== null) total += valueCost(field, value);
  }
  return total;
}

function valueCost(field: FieldPlan, value: unknown): number {
  if (Array.isArray(value)) {
    let total = 0;
    for (const item of value) if (item !== null && item !== undefined) total += valueCost(field, item);
    return total;
  }
  const types = field.types;
  if (types === undefined) return field.weight;
  if (!isData(value)) return 0;
  if (types.length === 1) return objectCost(types[0] as TypePlan, value);
  const typename = value.__typename;
  const named = typeof typename === 'string' ? types.find((t) => t.type.name === typename) : undefined;
  if (named !== undefined) return objectCost(named, value);
  let most = 0;
  for (const type of types) most = Math.max(most, objectCost(type, value));
  return most;
}

const objectCost = (plan: TypePlan, object: Data): number => plan.weight + fieldsCost(plan, object);
