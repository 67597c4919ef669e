// A shedder's waiting room, for the adapters' shed(): a request that gets no slot at once may wait for one
// (maxWait, its class's), higher classes first. A request holds its slot until its response ends or its
// client leaves, and one slot of a shedder however many gates on it the request passes (in front of the
// app on node:http and in it).
import { type Permit, type Priority, type Shedder, shedderInternals } from './shedder.js';

/** What a request's slot is held on: node:http's ServerResponse, as a framework hands it over. */
export interface HeldResponse {
  readonly destroyed: boolean;
  once(event: 'close' | 'finish', listener: () => void): unknown;
}

/** A shedder's admissions: one room per shedder, shared by every gate on it. */
export interface WaitingRoom {
  /**
   * True: the request holds a slot until `raw` finishes or closes (whichever first, once); false: shed it.
   * A promise only while it waits for a slot.
   */
  admit(priority: Priority, raw: HeldResponse): boolean | Promise<boolean>;
}

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
function holdUntilEnd(permit: Permit, raw: HeldResponse): void {
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

const rooms = new WeakMap<Shedder, WaitingRoom>();

/** The waiting room of `shedder`, made when first asked for. Throws for a shedder not from createShedder(). */
export function waitingRoom(shedder: Shedder): WaitingRoom {
  let room = rooms.get(shedder);
  if (room === undefined) {
    room = makeRoom(shedder);
    rooms.set(shedder, room);
  }
  return room;
}

/**
 * The requests waiting for a slot, in order of class, then of arrival: the first that does not fit means none
 * behind it does. At most twice `limit` wait (the slots of the next two turns); when full, a request of a higher
 * class than the last takes its place (the last is shed now). A class whose maxWait is 0 does not enter.
 */
function makeRoom(shedder: Shedder): WaitingRoom {
  const { freed, blockedFor, waitMs } = shedderInternals(shedder);
  const waiters: Waiter[] = [];
  // The responses that hold a slot: a request that passes a second gate on this shedder takes no second one.
  const holding = new WeakSet<HeldResponse>();
  const hold = (raw: HeldResponse) => {
    holding.add(raw);
    return true;
  };
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
  /** Resolves true once the request holds a slot, false past its maxWait or when its client leaves. */
  const wait = (p: Priority, raw: HeldResponse) =>
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
  /** Whether a request of class `p` may wait: its class waits, and the room has space or `p` outranks its last (who is shed). */
  const enter = (p: Priority): boolean => {
    if (waitMs(p) === 0) return false;
    if (waiters.length < 2 * shedder.limit) return true;
    const last = waiters.at(-1);
    if (last === undefined || RANK[last.priority] <= RANK[p]) return false;
    waiters.pop()?.done(undefined);
    return true;
  };
  return {
    admit(p, raw) {
      if (holding.has(raw)) return true;
      const permit = shedder.acquire(p);
      if (permit !== undefined) {
        holdUntilEnd(permit, raw);
        return hold(raw);
      }
      if (raw.destroyed || !enter(p)) return false;
      return wait(p, raw).then((ok) => ok && hold(raw));
    },
  };
}
