// The Mercurius plugin, a Fastify plugin registered after Mercurius: costs and charges in Mercurius'
// preExecution hook, settles in onResolution. A refusal is an error thrown from preExecution, which
// Mercurius answers with the error's `statusCode`, as `{ data: null, errors }`; the plugin's onSend hook
// then drops the `data: null` and adds `extensions.cost` to that one response. Fastify's and Mercurius'
// types are spelt here, structurally, so that the package imports neither.
import type { DocumentNode, GraphQLSchema } from 'graphql';
import { type Admit, Admitted } from './budget.js';
import { errorExtensions, type QueryCost, type Refusal, retryAfter } from './extensions.js';

interface Reply {
  request: { body?: unknown; query?: unknown };
  header(name: string, value: string): unknown;
}

/** Mercurius' GraphQL context, as far as the plugin reads it. */
interface MercuriusContext {
  reply?: Reply;
  /** A batched request's index of this operation. */
  operationId?: number;
}

interface ExecutionResult {
  data?: unknown;
  errors?: readonly unknown[] | null;
  extensions?: Record<string, unknown>;
}

interface App {
  graphql: {
    addHook(
      name: 'preExecution',
      hook: (
        schema: GraphQLSchema,
        document: DocumentNode,
        context: MercuriusContext,
        variables?: Record<string, unknown>,
      ) => Promise<void>,
    ): void;
    addHook(name: 'onResolution', hook: (execution: ExecutionResult, context: MercuriusContext) => Promise<void>): void;
  };
  addHook(
    name: 'onSend',
    hook: (request: unknown, reply: Reply, payload: unknown, done: (error: null, payload: unknown) => void) => void,
  ): void;
}

/** A Fastify plugin (`app.register(limit.mercurius())`), registered after Mercurius. */
export type MercuriusPlugin = (app: object) => Promise<void>;

/** The error Mercurius answers a refusal with: its `statusCode` is the response's, its `extensions` the error's. */
class Refused extends Error {
  readonly extensions: Record<string, unknown>;
  readonly statusCode: number;
  constructor(refusal: Refusal) {
    super(refusal.message);
    this.extensions = errorExtensions(refusal);
    this.statusCode = refusal.status;
  }
}

/** The operation name the request gives: Mercurius' hooks are not told it. */
function operationName(context: MercuriusContext): string | undefined {
  const request = context.reply?.request;
  const body = Array.isArray(request?.body) ? request.body[context.operationId ?? 0] : request?.body;
  const params = (typeof body === 'object' && body !== null ? body : request?.query) as { operationName?: unknown } | undefined;
  return typeof params?.operationName === 'string' ? params.operationName : undefined;
}

/** The admitted operation the plugin keeps on Mercurius' context between its two hooks. */
const ADMITTED = Symbol('@sluice/graphql');
type WithAdmitted = MercuriusContext & { [ADMITTED]?: Admitted | undefined };

export function mercuriusPlugin<Context>(admit: Admit<Context>): MercuriusPlugin {
  const refusals = new WeakMap<Reply, QueryCost>();
  /** Refused replies not sent yet: while there are none, the onSend hook has nothing to look up. */
  let unsent = 0;

  /** A refused response: no `data: null`, and `extensions.cost`. */
  function rewrite(payload: string, cost: QueryCost): string {
    const body = JSON.parse(payload) as ExecutionResult | unknown[];
    if (Array.isArray(body)) return payload;
    if (body.data === null) delete body.data;
    return JSON.stringify({ ...body, extensions: { ...body.extensions, cost } });
  }

  async function sluiceCostLimit(instance: object): Promise<void> {
    const app = instance as App;
    app.graphql.addHook('preExecution', async (schema, document, context, variables) => {
      const request = { schema, document, operationName: operationName(context), variables };
      const admission = await admit(context as Context, request);
      if (admission === undefined) return;
      if (admission instanceof Admitted) {
        (context as WithAdmitted)[ADMITTED] = admission;
        return;
      }
      const reply = context.reply;
      const after = retryAfter(admission);
      if (reply !== undefined && after !== undefined) reply.header('retry-after', after);
      if (reply !== undefined && admission.cost !== undefined && !refusals.has(reply)) {
        refusals.set(reply, admission.cost);
        unsent++;
      }
      throw new Refused(admission);
    });
    app.graphql.addHook('onResolution', async (execution, context) => {
      const admitted = (context as WithAdmitted)[ADMITTED];
      if (admitted === undefined) return;
      (context as WithAdmitted)[ADMITTED] = undefined;
      execution.extensions = { ...execution.extensions, cost: await admitted.settle(execution) };
    });
    // A callback hook, not an async one: no promise for each response of the app.
    app.addHook('onSend', (_request, reply, payload, done) => {
      if (unsent === 0) return done(null, payload);
      const cost = refusals.get(reply);
      if (cost === undefined) return done(null, payload);
      refusals.delete(reply);
      unsent--;
      done(null, typeof payload === 'string' ? rewrite(payload, cost) : payload);
    });
  }
  // What fastify-plugin sets: the hooks reach the app Mercurius is registered on, after Mercurius.
  return Object.assign(sluiceCostLimit, {
    [Symbol.for('skip-override')]: true,
    [Symbol.for('fastify.display-name')]: '@sluice/graphql',
    [Symbol.for('plugin-meta')]: { name: '@sluice/graphql', fastify: '5.x', dependencies: ['mercurius'] },
  });
}
