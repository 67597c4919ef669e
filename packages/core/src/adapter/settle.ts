// After the response: the charge moves to the request's real cost (settle), or back to nothing
// (express-rate-limit's skipFailedRequests and skipSuccessfulRequests), by one limiter.adjust().

import type { Decision } from './decision.js';
import { SluiceError } from './errors.js';
import type { Limiter } from './limiter.js';
import { reportEvent } from './report.js';

type Awaitable<T> = T | Promise<T>;

/** The kit's options that settle a charge. */
export interface SettleOptions {
  settle?: ((req: never, res: never) => Awaitable<number | undefined>) | undefined;
  skipFailedRequests: boolean;
  skipSuccessfulRequests: boolean;
  requestWasSuccessful?: ((req: never, res: never) => Awaitable<boolean>) | undefined;
}

/**
 * The settling of one allowed request, run once after its response (see HttpLimit.track); undefined
 * when no option asks for it. An error (in settle, requestWasSuccessful or the adjust) is reported as
 * a 'settle-error' event by the limiter, never thrown: the response is gone by then.
 */
export function settleAfter<Req, Res>(
  limiter: Limiter,
  o: SettleOptions,
):
  | ((
      verdict: { key: string; cost: number; decision: Decision },
      req: Req,
      res: Res,
      raw: { statusCode: number; writableFinished: boolean },
    ) => void)
  | undefined {
  const { skipFailedRequests: failed, skipSuccessfulRequests: succeeded } = o;
  const settle = o.settle as ((req: Req, res: Res) => Awaitable<number | undefined>) | undefined;
  const wasSuccessful = o.requestWasSuccessful as ((req: Req, res: Res) => Awaitable<boolean>) | undefined;
  if (settle === undefined && !failed && !succeeded) return undefined;
  return (verdict, req, res, raw) => {
    // Read now: a later await must not see a status changed by anything else.
    const aborted = !raw.writableFinished;
    const status = raw.statusCode;
    (async () => {
      let cost = verdict.cost;
      if (settle !== undefined) {
        const real = await settle(req, res);
        if (real !== undefined) {
          if (typeof real !== 'number' || !Number.isFinite(real) || real < 0) {
            throw new SluiceError(
              'ERR_SLUICE_COST',
              `settle(req, res) must return a finite number >= 0 or undefined, got ${describe(real)}`,
            );
          }
          cost = real;
        }
      }
      if (failed || succeeded) {
        // A request the client gave up on failed, whatever its status says.
        const ok = !aborted && (wasSuccessful === undefined ? status < 400 : await wasSuccessful(req, res));
        if (ok ? succeeded : failed) cost = 0;
      }
      // The decision moves its own charge: the key, scope, shard and policies it was charged under.
      if (cost !== verdict.cost) await verdict.decision.adjust?.(cost - verdict.cost);
    })().catch((e: unknown) => {
      reportEvent(limiter, { type: 'settle-error', key: verdict.key, error: e instanceof Error ? e : new Error(describe(e)) });
    });
  };
}

function describe(value: unknown): string {
  if (typeof value === 'number') return String(value);
  return value === null ? 'null' : typeof value;
}
