// What the adapters' shed() share: the shedder, the priority of a request, the 503, and the guard that does it
// on node:http's request and response, in front of a framework. The slots and the wait for one are the
// shedder's waiting room (shed/waiting-room.ts). Framework-free: `Req` is opaque.
import { badOption, SluiceError } from '../errors.js';
import { checkNames, isFunction, resolve, spec } from '../options.js';
import { createShedder, type Priority, type Shedder, type ShedderOptions } from '../shed/shedder.js';
import { type HeldResponse, waitingRoom } from '../shed/waiting-room.js';

/** Options of the adapters' shed(): createShedder's, or a `shedder` to share, and `priority`. */
export interface ShedOptions<Req> extends ShedderOptions {
  /** The request's class. Default: every request is 'normal'. */
  priority?: (req: Req) => Priority;
  /** A shedder to use (and share between apps) instead of shedder options. Default: one made from the options. */
  shedder?: Shedder;
}

/** What shedGuard writes a 503 to: node:http's ServerResponse. */
export interface ShedNodeResponse extends HeldResponse {
  writeHead(status: number, headers: Record<string, string>): { end(body: Uint8Array): unknown };
}

/** The answer to a shed request. */
export interface ShedResponse {
  status: 503;
  headers: { 'Retry-After': string };
  contentType: string;
  body: string;
}

export interface ShedGate<Req> {
  readonly shedder: Shedder;
  /**
   * True: the request holds a slot until `raw` finishes or closes (whichever first, once); false: answer
   * `response`. A promise only while it waits for a slot (maxWait > 0).
   */
  admit(req: Req, raw: HeldResponse): boolean | Promise<boolean>;
  readonly response: ShedResponse;
}

const RETRY_AFTER_S = 1; // a shed is decided per window of 100 ms: one second is the shortest whole answer
const RESPONSE: ShedResponse = {
  status: 503,
  headers: { 'Retry-After': String(RETRY_AFTER_S) },
  contentType: 'application/problem+json; charset=utf-8',
  body: JSON.stringify({
    type: 'about:blank',
    title: 'Service Unavailable',
    status: 503,
    detail: `The service is overloaded; retry in ${RETRY_AFTER_S} s.`,
  }),
};

/**
 * The shared half of every adapter's shed(): resolves options once (bad ones throw here, by name), then
 * admits or sheds each request. With maxWait, up to twice `limit` requests wait for a slot, higher classes first
 * (a higher class arriving at a full room displaces the lowest class's latest). Gates on one shedder take one
 * slot per request, however many of them it passes.
 * @example const gate = shedGate<Request>({ priority: (req) => (req.path === '/health' ? 'critical' : 'normal') })
 */
export function shedGate<Req>(options: ShedOptions<Req> = {}): ShedGate<Req> {
  if (options === null || typeof options !== 'object') badOption('options', 'an object', options);
  const { priority: _priority, shedder: given, ...rest } = options;
  const { priority } = resolve({ priority: spec<(req: Req) => Priority>(isFunction) }, options);
  // A shared shedder keeps its own options: any given here too would be silently ignored.
  if (given !== undefined) checkNames(rest, [], 'an option beside shedder (give it to createShedder)');
  const shedder = given ?? createShedder(rest);
  const room = waitingRoom(shedder);
  return {
    shedder,
    response: RESPONSE,
    admit(req, raw) {
      let p: Priority = 'normal';
      if (priority !== undefined) {
        try {
          p = priority(req);
        } catch (error) {
          throw new SluiceError('ERR_SLUICE_PRIORITY', 'priority(req) threw', { cause: error });
        }
      }
      return room.admit(p, raw);
    },
  };
}

/**
 * A gate as a node:http guard, `(req, res, next) => void`: `next()` once the request holds a slot, else the 503
 * written with `writeHead`/`end` (no framework's response helpers: under overload most requests take this path).
 * In front of a framework (`http.createServer((req, res) => guard(req, res, (error) => (error ? res.writeHead(500).end()
 * : app(req, res))))`) a shed request costs node:http's parsing and the 503 only. `next(error)` when `priority(req)`
 * throws (ERR_SLUICE_PRIORITY): a next that ignores it would run the app without a slot.
 * @example const guard = shedGuard(shedGate<IncomingMessage>({ maxWait: '20ms' }))
 */
export function shedGuard<Req>(gate: ShedGate<Req>): (req: Req, res: ShedNodeResponse, next: (error?: unknown) => void) => void {
  const { status, headers, contentType, body } = gate.response;
  const bytes = Buffer.from(body);
  const head = { ...headers, 'Content-Type': contentType, 'Content-Length': String(bytes.length) };
  return function sluiceShedGuard(req, res, next) {
    let admitted: boolean | Promise<boolean>;
    try {
      admitted = gate.admit(req, res);
    } catch (error) {
      return next(error); // priority(req) threw: in Express, the app's error handler; in front, the caller's next
    }
    if (admitted === true) return next();
    if (admitted === false) return void res.writeHead(status, head).end(bytes);
    admitted.then((ok) => (ok ? next() : void res.writeHead(status, head).end(bytes)), next);
  };
}
