// After the response: the decision's concurrent slots go back, and its charge moves to the request's real
// cost (settle), or back to nothing (skipFailedRequests and skipSuccessfulRequests), by the decision's own
// adjust().
import type { Decision } from '../decision.js';
import { SluiceError } from '../errors.js';
import { reportEvent } from '../events.js';
import type { Limiter } from '../limiter.js';
import type { Awaitable } from './user-call.js';

/** What the kit reads of Node's http.ServerResponse (Express's res, Fastify's reply.raw, Koa's ctx.res). */
export interface RawResponse {
  readonly statusCode: number;
  /** True once the whole response went out ('finish'). */
  readonly writableFinished: boolean;
  /** True once the connection closed, whether or not the response went out. */
  readonly destroyed: boolean;
  once(event: 'close', listener: () => void): unknown;
}

/** The kit's options that settle a charge, resolved. */
export interface SettleOptions<Req, Res> {
  settle?: ((req: Req, res: Res) => Awaitable<number | undefined>) | undefined;
  skipFailedRequests: boolean;
  skipSuccessfulRequests: boolean;
  requestWasSuccessful?: ((req: Req, res: Res) => Awaitable<boolean>) | undefined;
}

/** An allowed request's decision, with the key and the cost it was charged. */
export interface Charged {
  decision: Decision;
  key: string;
  cost: number;
}

/** Runs `fn` once `raw` closes (after it finished, or without: an abort), or now when it already has. */
function onClose(raw: RawResponse, fn: () => void): void {
  // Closed before we got here (the client left while the limiter decided): 'close' will not come.
  if (raw.destroyed) fn();
  // 'close' comes once for every response, after 'finish' or without it (the client left), always
  // since Node 11: one listener, and writableFinished tells the two apart ('close' alone does not
  // mean a failure: a successful request closes too).
  else raw.once('close', fn);
}

/**
 * The tracking of allowed requests (HttpLimit.track): once the response closes, gives the decision's
 * slots back and settles its charge. Costs nothing when there is neither.
 */
export function tracker<Req, Res>(
  limiter: Limiter,
  o: SettleOptions<Req, Res>,
): (verdict: Charged, req: Req, res: Res, raw: RawResponse) => void {
  const after = settleAfter(limiter, o);
  return (verdict, req, res, raw) => {
    const { decision } = verdict;
    // Nothing was charged when shadow mode let a denial through or the store was down and open.
    const charged = after !== undefined && decision.allowed && decision.shadowed !== true && decision.source !== 'fail-open';
    const release = decision.release;
    if (!charged && release === undefined) return;
    onClose(raw, () => {
      if (release !== undefined) void release();
      if (charged) after(verdict, req, res, raw);
    });
  };
}

/**
 * The settling of one allowed request, run once after its response; undefined when no option asks for
 * it. An error (in settle, requestWasSuccessful or the adjust) is reported as a 'settle-error' event by
 * the limiter, never thrown: the response is gone by then.
 */
function settleAfter<Req, Res>(
  limiter: Limiter,
  o: SettleOptions<Req, Res>,
): ((verdict: Charged, req: Req, res: Res, raw: RawResponse) => void) | undefined {
  const { settle, skipFailedRequests: failed, skipSuccessfulRequests: succeeded, requestWasSuccessful: wasSuccessful } = o;
  if (settle === undefined && !failed && !succeeded) return undefined;
  return (verdict, req, res, raw) => {
    // Read now: a later await must not see a status changed by anything else.
    const aborted = !raw.writableFinished;
    const status = raw.statusCode;
    (async () => {
      let cost = verdict.cost;
      if (settle !== undefined) cost = checkedCost(await settle(req, res)) ?? cost;
      if (failed || succeeded) {
        // A request the client gave up on failed, whatever its status says.
        const ok = !aborted && (wasSuccessful === undefined ? status < 400 : await wasSuccessful(req, res));
        if (ok ? succeeded : failed) cost = 0;
      }
      // The decision moves its own charge: the key, scope, shard and policies it was charged under.
      if (cost !== verdict.cost) await verdict.decision.adjust?.(cost - verdict.cost);
    })().catch((e: unknown) => {
      reportEvent(limiter, { type: 'settle-error', key: verdict.key, error: e instanceof Error ? e : new Error(describeValue(e)) });
    });
  };
}

function checkedCost(real: unknown): number | undefined {
  if (real !== undefined && (typeof real !== 'number' || !Number.isFinite(real) || real < 0)) {
    throw new SluiceError('ERR_SLUICE_COST', `settle(req, res) must return a finite number >= 0 or undefined, got ${describeValue(real)}`);
  }
  return real;
}

/** A number as it is, else its kind (never a user's contents in an event). */
function describeValue(value: unknown): string {
  if (typeof value === 'number') return String(value);
  return value === null ? 'null' : typeof value;
}
