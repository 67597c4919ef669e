// The envelop plugin (GraphQL Yoga and every envelop server): costs and charges in onExecute, settles in
// onExecuteDone; a subscription is charged when it starts. Yoga reads `extensions.http` (status, headers)
// from a result's errors and leaves it out of the response. Envelop's types are spelt here, structurally,
// so that the package imports nothing of @envelop/core.
import { type DocumentNode, type ExecutionResult, GraphQLError, type GraphQLSchema } from 'graphql';
import { type Admission, type Admit, Admitted } from './budget.js';
import { errorExtensions, type Refusal, retryAfter } from './extensions.js';

/** The arguments envelop executes (or subscribes) with. */
export interface EnvelopArgs<Context> {
  schema: GraphQLSchema;
  document: DocumentNode;
  contextValue: Context;
  variableValues?: { readonly [name: string]: unknown } | null | undefined;
  operationName?: string | null | undefined;
}

type Result = ExecutionResult | AsyncIterable<ExecutionResult>;

/** The hooks of envelop's `Plugin` that the cost limit uses. */
export interface EnvelopPlugin<Context> {
  onExecute(payload: { args: EnvelopArgs<Context>; setResultAndStopExecution(result: ExecutionResult): void }): Promise<
    | undefined
    | {
        onExecuteDone(payload: { result: Result; setResult(result: Result): void }): Promise<void>;
      }
  >;
  onSubscribe(payload: { args: EnvelopArgs<Context>; setResultAndStopExecution(result: Result): void }): Promise<
    | undefined
    | {
        onSubscribeResult(payload: { result: Result }): undefined | { onEnd(): void };
      }
  >;
}

const isStream = (result: Result): result is AsyncIterable<ExecutionResult> =>
  typeof (result as Partial<AsyncIterable<unknown>>)[Symbol.asyncIterator] === 'function';

/** A refusal as Yoga answers it: a throttle with 429 and Retry-After, the rest as its own validation errors. */
function refused(refusal: Refusal): ExecutionResult {
  const after = retryAfter(refusal);
  const headers: Record<string, string> = after === undefined ? {} : { 'Retry-After': after };
  // Yoga's validation errors are `spec` errors: 400 to application/graphql-response+json, 200 to application/json.
  const http = refusal.status === 400 ? { spec: true, status: 400 } : { status: refusal.status, headers };
  const error = new GraphQLError(refusal.message, { extensions: { ...errorExtensions(refusal), http } });
  return refusal.cost === undefined ? { errors: [error] } : { errors: [error], extensions: { cost: refusal.cost } };
}

/** The operation to run, or undefined: a refusal is answered through `stop`, and what is not ours to judge runs as it is. */
function admitted(admission: Admission, stop: (result: ExecutionResult) => void): Admitted | undefined {
  if (admission === undefined || admission instanceof Admitted) return admission;
  stop(refused(admission));
  return undefined;
}

function release(admitted: Admitted): void {
  void admitted.decision.release?.();
}

export function envelopPlugin<Context>(admit: Admit<Context>): EnvelopPlugin<Context> {
  const request = (args: EnvelopArgs<Context>) => ({
    schema: args.schema,
    document: args.document,
    operationName: args.operationName,
    variables: args.variableValues,
  });
  return {
    async onExecute({ args, setResultAndStopExecution }) {
      const running = admitted(await admit(args.contextValue, request(args)), setResultAndStopExecution);
      if (running === undefined) return undefined;
      return {
        async onExecuteDone({ result, setResult }) {
          // A streamed result (@defer, @stream) keeps its charge: its length is known only when it ends.
          if (isStream(result)) {
            await running.settle(undefined);
            return;
          }
          const cost = await running.settle(result);
          setResult({ ...result, extensions: { ...result.extensions, cost } });
        },
      };
    },
    async onSubscribe({ args, setResultAndStopExecution }) {
      const running = admitted(await admit(args.contextValue, request(args)), setResultAndStopExecution);
      if (running === undefined) return undefined;
      return {
        onSubscribeResult({ result }) {
          if (isStream(result)) return { onEnd: () => release(running) };
          release(running);
          return undefined;
        },
      };
    },
  };
}
