// The budget's two moments, neutral of any server: before execution, cost the operation and charge it in
// one consume (or refuse it, charged nothing); after, cost the result and refund the difference.
import { type Decision, SluiceError } from '@sluice/core';
import { actualCost } from './actual.js';
import { planCache } from './cache.js';
import { denied, invalid, type QueryCost, type Refusal, throttleStatus, tooCostly } from './extensions.js';
import type { Settings } from './options.js';
import type { Plan } from './plan.js';
import type { OperationRequest } from './walk.js';

type Result = { data?: unknown; errors?: readonly unknown[] | null | undefined } | undefined;

/** An operation allowed to run: its consume's decision, and what settling it needs. */
export class Admitted {
  constructor(
    /** The consume's decision (a peek's, for an operation that costs nothing). */
    readonly decision: Decision,
    private readonly plan: Plan,
  ) {}

  /** After execution: the result's cost, the refund, and the response's `extensions.cost`; no result (a stream) keeps the charge. */
  async settle(result: Result): Promise<QueryCost> {
    const { decision, plan } = this;
    const requested = plan.cost;
    try {
      // Errors can cut a result short after the work was done (a null that bubbles up): it keeps its charge.
      const whole = result === undefined || (result.errors !== undefined && result.errors !== null && result.errors.length > 0);
      const actual = whole ? requested : actualCost(plan, result.data);
      // Only a refund: the requested cost is the price agreed before the operation ran.
      let after = decision;
      if (requested > 0 && actual < requested && decision.adjust !== undefined) after = await decision.adjust(actual - requested);
      return { requestedQueryCost: requested, actualQueryCost: actual, throttleStatus: throttleStatus(after) };
    } finally {
      if (decision.release !== undefined) await decision.release();
    }
  }
}

/** Before execution: the operation runs (Admitted), is refused (Refusal), or is not ours to judge (undefined: the server answers its own error). */
export type Admission = Admitted | Refusal | undefined;

/** The admit step of costLimit, bound to its settings. */
export type Admit<Context> = (context: Context, request: OperationRequest) => Promise<Admission>;

const keyError = (error: unknown): unknown =>
  error instanceof SluiceError
    ? error
    : new SluiceError('ERR_SLUICE_KEY', `key(context) threw${error instanceof Error ? `: ${error.message}` : ''}`, { cause: error });

/** The budget of one costLimit: its admit step, which every server's plugin calls before execution. */
export function budget<Context>(settings: Settings<Context>): Admit<Context> {
  const { limiter, maxCost, weights } = settings;

  /** The budget's owner: a string as it is (awaiting it would cost a microtask), a promise awaited. */
  function keyOf(context: Context): string | Promise<string> {
    let key: string | Promise<string>;
    try {
      key = settings.key(context);
    } catch (error) {
      throw keyError(error);
    }
    return typeof key === 'string' ? key : Promise.resolve(key).catch((error) => Promise.reject(keyError(error)));
  }

  const costed = planCache(weights);

  return async function admit(context, request) {
    const outcome = costed(request);
    if (outcome === undefined) return undefined;
    if ('error' in outcome) return invalid(outcome.error);
    const { plan } = outcome;
    const requested = plan.cost;
    const known = keyOf(context);
    const key = typeof known === 'string' ? known : await known;
    if (maxCost !== undefined && requested > maxCost) return tooCostly(requested, maxCost, await limiter.peek(key));
    let decision: Decision;
    try {
      decision = requested === 0 ? await limiter.peek(key) : await limiter.consume(key, { cost: requested });
    } catch (error) {
      // A cost above the budget's capacity can never pass: refused like one above maxCost.
      if (error instanceof SluiceError && error.code === 'ERR_SLUICE_COST') return tooCostly(requested, undefined, await limiter.peek(key));
      throw error;
    }
    if (requested > 0 && !decision.allowed) return denied(decision, requested);
    return new Admitted(decision, plan);
  };
}
