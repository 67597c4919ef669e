// What the Express, Fastify and Koa shed() share: the shedder, the priority of a request, the short wait for a
// slot, the release when the response ends or the client leaves, the 503, and the guard that does all of it on
// node:http's request and response, in front of a framework. Framework-free: `Req` is opaque.
import { badOption, SluiceError } from '../errors.js';
import { checkNames, isFunction, resolve, spec } from '../options.js';
import { createShedder, type Permit, type Priority, type Shedder, type ShedderOptions, shedderInternals } from '../shed/shedder.js';

/** Options of the adapters' shed(): createShedder's, or a `shedder` to share, and `priority`. */
export interface ShedOptions<Req> extends ShedderOptions {
  /** The request's class. Default: every request is 'normal'. */
  priority?: (req: Req) => Priority;
  /** A shedder to use (and share between apps) instead of shedder options. Default: one made from the options. */
  shedder?: Shedder;
}

/** What the kit reads of Node's http.ServerResponse (Express's res, Fastify's reply.raw, Koa's ctx.res). */
export interface ShedRawResponse {
  readonly destroyed: boolean;
  once(event: 'close' | 'finish', listener: () => void): unknown;
}

/** What shedGuard writes a 503 to: node:http's ServerResponse. */
export interface ShedNodeResponse extends ShedRawResponse {
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
  admit(req: Req, raw: ShedRawResponse): boolean | Promise<boolean>;
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
const RANK: Record<Priority, number> = { critical: 0, normal: 1, sheddable: 2 };

interface Waiter {
  priority: Priority;
  done: (permit: Permit | undefined) => void;
}

// Responses that ended in this turn of the event loop: their slots come back when it ends. Node runs the requests
// one turn reads one after another, each waiting for those before it: given back at 'finish', which comes before
// the turn's next request is read, a slot would let a turn run every request it read, and a handler that does its
// work synchronously would never be shed.
const ended: Permit[] = [];
function releaseEnded(): void {
  for (const permit of ended.splice(0)) permit.release();
}

/** Holds a slot until the response finishes or the client leaves, whichever comes first, once, and to the end of that turn. */
function holdUntilEnd(permit: Permit, raw: ShedRawResponse): void {
  if (raw.destroyed) {
    permit.release();
    return;
  }
  let held = true;
  const release = () => {
    if (!held) return;
    held = false;
    if (ended.push(permit) === 1) setImmediate(releaseEnded);
  };
  raw.once('finish', release);
  raw.once('close', release);
}

/**
 * The requests waiting for a slot (maxWait, its class's), in order of class, then of arrival: the first that
 * does not fit means none behind it does. At most twice `limit` wait (the slots of the next two turns); when
 * full, a request of a higher class than the last takes its place (the last is shed now). `wait` resolves true
 * once the request holds a slot, false past its maxWait. A class whose maxWait is 0 does not enter.
 */
function waitingRoom(shedder: Shedder): { enter(p: Priority): boolean; wait(p: Priority, raw: ShedRawResponse): Promise<boolean> } {
  const { freed, blockedFor, waitMs } = shedderInternals(shedder);
  const waiters: Waiter[] = [];
  // A first waiter that yields to a refused higher class tries again when the yield ends: no slot may come
  // back before then (nothing else in flight). One reading decides both (a timer may fire a little early).
  let retry: ReturnType<typeof setTimeout> | undefined;
  const serve = () => {
    for (let first = waiters[0]; first !== undefined; first = waiters[0]) {
      const ms = blockedFor(first.priority);
      if (ms > 0) {
        if (ms < Number.POSITIVE_INFINITY && retry === undefined) {
          retry = setTimeout(() => {
            retry = undefined;
            serve();
          }, Math.ceil(ms));
          retry.unref();
        }
        return;
      }
      waiters.shift();
      first.done(shedder.acquire(first.priority));
    }
  };
  if (shedder.maxWaitMs > 0) freed.add(serve);
  const wait = (p: Priority, raw: ShedRawResponse) =>
    new Promise<boolean>((resolveAdmit) => {
      const waiter: Waiter = {
        priority: p,
        done(permit) {
          clearTimeout(timer);
          if (permit !== undefined) holdUntilEnd(permit, raw);
          resolveAdmit(permit !== undefined);
        },
      };
      const timer = setTimeout(() => leave(), waitMs(p));
      const leave = () => {
        const i = waiters.indexOf(waiter);
        if (i >= 0) waiters.splice(i, 1)[0]?.done(undefined);
      };
      raw.once('close', leave); // a client that leaves gives its place back
      const at = waiters.findIndex((w) => RANK[w.priority] > RANK[p]);
      waiters.splice(at < 0 ? waiters.length : at, 0, waiter);
    });
  return {
    /** Whether a request of class `p` may wait: its class waits, and the room has space or `p` outranks its last (who is shed). */
    enter(p: Priority): boolean {
      if (waitMs(p) === 0) return false;
      if (waiters.length < 2 * shedder.limit) return true;
      const last = waiters.at(-1);
      if (last === undefined || RANK[last.priority] <= RANK[p]) return false;
      waiters.pop()?.done(undefined);
      return true;
    },
    wait,
  };
}

/**
 * The shared half of every adapter's shed(): resolves options once (bad ones throw here, by name), then
 * admits or sheds each request. With maxWait, up to twice `limit` requests wait for a slot, higher classes first
 * (a higher class arriving at a full room displaces the lowest class's latest).
 * @example const gate = shedGate<Request>({ priority: (req) => (req.path === '/health' ? 'critical' : 'normal') })
 */
export function shedGate<Req>(options: ShedOptions<Req> = {}): ShedGate<Req> {
  if (options === null || typeof options !== 'object') badOption('options', 'an object', options);
  const { priority: _priority, shedder: given, ...rest } = options;
  const { priority } = resolve({ priority: spec<(req: Req) => Priority>(isFunction) }, options);
  // A shared shedder keeps its own options: any given here too would be silently ignored.
  if (given !== undefined) checkNames(rest, [], 'an option beside shedder (give it to createShedder)');
  const shedder = given ?? createShedder(rest);
  const queue = waitingRoom(shedder);
  // The responses that hold a slot of this gate: a gate mounted twice on one request (in front of the app on
  // node:http and inside it) takes one slot, and the second pass admits at once.
  const holding = new WeakSet<ShedRawResponse>();
  const hold = (raw: ShedRawResponse) => {
    holding.add(raw);
    return true;
  };

  return {
    shedder,
    response: RESPONSE,
    admit(req, raw) {
      if (holding.has(raw)) return true;
      let p: Priority = 'normal';
      if (priority !== undefined) {
        try {
          p = priority(req);
        } catch (error) {
          throw new SluiceError('ERR_SLUICE_PRIORITY', 'priority(req) threw', { cause: error });
        }
      }
      const permit = shedder.acquire(p);
      if (permit !== undefined) {
        holdUntilEnd(permit, raw);
        return hold(raw);
      }
      if (raw.destroyed || !queue.enter(p)) return false;
      return queue.wait(p, raw).then((ok) => ok && hold(raw));
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
