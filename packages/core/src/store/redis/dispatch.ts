// The Redis store's queue: from a decision asked for to the script call that carries it. Every decision
// goes through here; nothing in it allocates per decision beyond its Pending.
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import calculateSlot from 'cluster-key-slot';
import { clearTimeout, fakeTick, setImmediate, setTimeout } from '../../timers.js';
import { StoreRefusal, type StoreReply, type StoreRequest } from '../contract.js';
import { guardKey } from '../keys.js';
import { decodeReply, encodeBatch } from '../protocol.js';
import type { ScriptClient } from './script-client.js';
import { runDecide } from './scripts.js';

interface Pending {
  request: StoreRequest;
  done: (error: unknown, reply?: StoreReply) => void;
  /** performance.now() past which its caller no longer waits (the fail mode has answered it): never sent then. */
  deadline: number;
}

/** Fewest decisions a flush is split down to, so that per-call costs stay small beside per-decision ones. */
const MIN_SPLIT = 32;
/**
 * Script calls in flight (standalone) past which decisions wait for one to return and then go together:
 * a call costs Redis and this process tens of µs of wake-ups and system calls whatever it carries, so
 * under load fewer, fuller calls leave more CPU for the work. Two keep Redis busy while this process
 * answers the other call's callers. Decisions wait at most HOLD_MS, so that a call which never returns
 * (a connection lost mid-call) does not hold the ones behind it.
 */
const MAX_IN_FLIGHT = 2;
const HOLD_MS = 5;

/**
 * Decisions asked for in one event-loop turn travel together, many to a script call (one call per slot
 * on a Cluster). On a standalone server, while two calls are in flight, later decisions wait for one of
 * them and go together. While the connection is being made they are parked.
 */
export class Dispatcher {
  private readonly cluster: boolean;
  /** The standalone guard key; a Cluster's is per slot. */
  private readonly guard: string | undefined;
  private calls = 0;
  private queue: Pending[] = [];
  /** Calls that wait for the connection being made; each leaves at its deadline, unsent. */
  private parked: Pending[] = [];
  private sweeping: ReturnType<typeof setTimeout> | undefined;
  /** Set while unpark waits to be told the connection is up, or failed. */
  private waiting = false;
  private inFlight = 0;
  /** Set while a flush waits for a call to return, for at most HOLD_MS. */
  private holding: ReturnType<typeof setTimeout> | undefined;
  // The script's guard (lua/decide.lua) refuses a call that runs again: this store's calls are numbered.
  private readonly storeId = randomBytes(8).toString('hex');

  private readonly client: ScriptClient;
  private readonly maxBatch: number;
  /** A test's fake ms clock (RedisStoreOptions.clock); undefined in production. */
  private readonly clock: (() => number) | undefined;

  constructor(client: ScriptClient, maxBatch: number, clock: (() => number) | undefined) {
    this.client = client;
    this.maxBatch = maxBatch;
    this.clock = clock;
    this.cluster = client.cluster;
    this.guard = this.cluster ? undefined : guardKey(this.storeId);
  }

  readonly decideWith = (request: StoreRequest, done: Pending['done'], deadline = Number.POSITIVE_INFINITY): void => {
    if (this.queue.push({ request, done, deadline }) === 1) setImmediate(this.flush);
  };

  /** Sends what is queued and lets go of what is parked (the client is detached). */
  drain(): void {
    if (this.queue.length > 0) this.release();
    if (this.parked.length > 0) this.unpark();
  }

  private readonly release = (): void => {
    clearTimeout(this.holding);
    this.holding = undefined;
    if (this.queue.length > 0) this.flushNow();
  };

  /** A script call is back: decisions held for it go, after this turn's callers have asked again. */
  private returned(): void {
    if (--this.inFlight < MAX_IN_FLIGHT && this.holding !== undefined) {
      clearTimeout(this.holding);
      this.holding = undefined;
      setImmediate(this.flush);
    }
  }

  private readonly flush = (): void => {
    if (!this.cluster && this.inFlight >= MAX_IN_FLIGHT) this.holding ??= setTimeout(this.release, HOLD_MS);
    else this.flushNow();
  };

  private flushNow(): void {
    const batch = this.queue;
    this.queue = [];
    // A connection that is not up, whether it went down or never came up: a client would hold these calls
    // in its offline queue and run them once connected, after their callers had their answer from the
    // fail mode, charging them twice. Refuse them now.
    const down = this.client.down();
    if (down !== undefined) {
      if (this.client.connecting()) this.park(batch);
      else fail(batch, new Error(down));
      return;
    }
    if (this.cluster) {
      this.flushBySlot(batch);
      return;
    }
    const { maxBatch } = this;
    // With no call in flight, two or more script calls rather than one when there are enough decisions:
    // Redis runs the first while this process answers the other's callers, so the two overlap.
    const size = this.inFlight > 0 ? maxBatch : Math.min(maxBatch, Math.max(MIN_SPLIT, Math.ceil(batch.length / 2)));
    for (let i = 0; i < batch.length; i += size) this.send(i === 0 && size >= batch.length ? batch : batch.slice(i, i + size));
  }

  private flushBySlot(batch: Pending[]): void {
    // A script's keys must share one slot; a request's keys already do (one hash tag).
    const bySlot = new Map<number, Pending[]>();
    for (const p of batch) {
      const slot = calculateSlot(p.request.keys[0] as string);
      const group = bySlot.get(slot);
      if (group === undefined) bySlot.set(slot, [p]);
      else if (group.push(p) >= this.maxBatch) {
        bySlot.delete(slot);
        this.sendTo(slot, group);
      }
    }
    for (const [slot, group] of bySlot) this.sendTo(slot, group);
  }

  private sendTo(slot: number, group: Pending[]): void {
    const slotDown = this.client.down(slot);
    if (slotDown === undefined) this.send(group, guardKey(this.storeId, slot));
    else if (this.client.connecting()) this.park(group);
    else fail(group, new Error(slotDown));
  }

  /**
   * The connection is being made: the batch waits for it (never in the client's offline queue, which
   * would send a call after its deadline), and goes when it is up; a call whose deadline passed first
   * leaves unsent, and every one fails at once if the attempt fails.
   */
  private park(batch: Pending[]): void {
    if (!this.waiting) {
      this.waiting = true;
      this.client.whenSettled(this.unpark);
    }
    for (const p of batch) this.parked.push(p);
    this.sweep();
  }

  private readonly unpark = (): void => {
    this.waiting = false;
    // The calls whose deadline passed leave unsent; the others go.
    this.sweep();
    clearTimeout(this.sweeping);
    this.sweeping = undefined;
    for (const p of this.parked) this.queue.push(p);
    this.parked = [];
    if (this.queue.length > 0) this.flushNow();
  };

  /** Lets go of parked calls whose deadline has passed (their callers had their answer), and waits for the next. */
  private readonly sweep = (): void => {
    clearTimeout(this.sweeping);
    this.sweeping = undefined;
    const now = performance.now();
    let next = Number.POSITIVE_INFINITY;
    const still: Pending[] = [];
    for (const p of this.parked) {
      if (p.deadline > now) {
        still.push(p);
        next = Math.min(next, p.deadline);
      } else p.done(new Error(`the Redis connection was not up within the call's deadline${fakeTick()}`));
    }
    this.parked = still;
    if (next !== Number.POSITIVE_INFINITY) {
      this.sweeping = setTimeout(this.sweep, Math.max(1, next - now));
      this.sweeping.unref?.();
    }
  };

  private send(batch: Pending[], guard = this.guard as string): void {
    const requests = batch.map((p) => p.request);
    const now = this.clock?.();
    const wall = now ?? Date.now();
    const { keys, args } = encodeBatch(requests, { guard, call: ++this.calls, wall, now });
    this.inFlight++;
    runDecide(this.client, keys, args, () => String(++this.calls)).then(
      (values) => {
        this.returned();
        const replies = decodeReply(values, requests, wall);
        if (replies instanceof Error) fail(batch, replies);
        // An indexed loop: entries() makes a pair per decision. A decision the script refused fails alone.
        else
          for (let i = 0; i < batch.length; i++) {
            const reply = replies[i];
            if (reply instanceof StoreRefusal) (batch[i] as Pending).done(reply);
            else (batch[i] as Pending).done(undefined, reply);
          }
      },
      (error: unknown) => {
        this.returned();
        fail(batch, error);
      },
    );
  }
}

function fail(batch: Pending[], error: unknown): void {
  for (const { done } of batch) done(error);
}
