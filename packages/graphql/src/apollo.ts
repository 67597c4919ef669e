// The Apollo Server 5 plugin: costs and charges in didResolveOperation (after parsing and
// validation), settles in willSendResponse. A refusal is an error thrown from didResolveOperation: Apollo
// answers it with no data, with the status and headers of its `extensions.http`. Apollo's types are
// spelt here, structurally, so that the package imports nothing of @apollo/server.
import { type DocumentNode, GraphQLError, type GraphQLSchema } from 'graphql';
import { type Admit, Admitted } from './budget.js';
import { errorExtensions, type QueryCost, type Refusal, retryAfter } from './extensions.js';

interface ApolloResult {
  data?: unknown;
  errors?: readonly unknown[] | undefined;
  extensions?: Record<string, unknown> | undefined;
}

/** The request context of Apollo's didResolveOperation hook, as far as the cost limit reads it. */
export interface ApolloOperationContext<Context> {
  schema: GraphQLSchema;
  document: DocumentNode;
  contextValue: Context;
  request: { operationName?: string | null | undefined; variables?: Record<string, unknown> | undefined };
}

/** The request context of Apollo's willSendResponse hook, as far as the cost limit writes it. */
export interface ApolloResponseContext {
  response: {
    body?: { kind: 'single'; singleResult: ApolloResult } | { kind: 'incremental' };
  };
}

/** The request listener the plugin starts for each request. */
export interface ApolloListener<Context> {
  didResolveOperation(requestContext: ApolloOperationContext<Context>): Promise<void>;
  willSendResponse(requestContext: ApolloResponseContext): Promise<void>;
}

/** An Apollo Server plugin (`ApolloServerPlugin`). */
export interface ApolloPlugin<Context> {
  requestDidStart(requestContext: { contextValue: Context }): Promise<ApolloListener<Context>>;
}

/** A refusal as Apollo answers it: a throttle with 429 and Retry-After, the rest 400 as its validation errors. */
function refused(refusal: Refusal): GraphQLError {
  const after = retryAfter(refusal);
  const headers = new Map<string, string>(after === undefined ? [] : [['retry-after', after]]);
  // Apollo's `http.headers` is a Map (a server that types it otherwise, such as Yoga, does not read it here).
  const extensions: Record<string, unknown> = { ...errorExtensions(refusal), http: { status: refusal.status, headers } };
  return new GraphQLError(refusal.message, { extensions });
}

/** What the plugin keeps on a request's context between its two hooks (Apollo hands both the same object). */
const STATE = Symbol('@sluice/graphql');
type WithState = { [STATE]?: Admitted | QueryCost };

export function apolloPlugin<Context>(admit: Admit<Context>): ApolloPlugin<Context> {
  // One listener for every request: the request's own state is on its context, not in closures made per request.
  const listener: ApolloListener<Context> = {
    async didResolveOperation(requestContext) {
      const { schema, document, contextValue, request } = requestContext;
      const admission = await admit(contextValue, { schema, document, operationName: request.operationName, variables: request.variables });
      if (admission === undefined) return;
      if (admission instanceof Admitted) {
        (requestContext as WithState)[STATE] = admission;
        return;
      }
      (requestContext as WithState)[STATE] = admission.cost;
      throw refused(admission);
    },
    async willSendResponse(requestContext) {
      const { response } = requestContext;
      const state = (requestContext as WithState)[STATE];
      if (state === undefined) return;
      const body = response.body;
      const single = body?.kind === 'single' ? body.singleResult : undefined;
      // An incremental (@defer) response keeps its charge: its size is known only when it ends.
      const cost = state instanceof Admitted ? await state.settle(single) : state;
      if (single !== undefined) single.extensions = { ...single.extensions, cost };
    },
  };
  const started = Promise.resolve(listener);
  return { requestDidStart: () => started };
}
