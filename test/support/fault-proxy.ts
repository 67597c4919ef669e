// A TCP proxy on 127.0.0.1 in front of one server (a Redis), which a test switches at run time into the
// faults a network has and a paused or killed process does not show: a slow link, jitter, a stall, a
// reset, a black hole. Bytes are never reordered and never corrupted: what TCP itself guarantees.
import { connect, createServer, type Server, type Socket } from 'node:net';

/** What the proxy does to traffic now. */
export type FaultMode = 'pass' | 'stall' | 'stall-replies' | 'black-hole';

/** Counters since the proxy started, for a test to check that its fault really happened. */
export interface FaultStats {
  /** Connections accepted from clients. */
  accepted: number;
  /** Connections the proxy reset (RST), by reset(). */
  reset: number;
  /** Reply chunks (server to client) written to clients. */
  repliesDelivered: number;
  /** Reply chunks waiting now: delayed by latency or held by a stall. */
  repliesPending: number;
  /** Chunks thrown away by a black hole, both directions. */
  dropped: number;
}

export interface FaultProxy {
  /** The port clients connect to instead of the server's. */
  readonly port: number;
  /** The mode now. */
  readonly mode: FaultMode;
  /**
   * Every reply chunk reaches the client `ms` later, plus a uniform random 0..`jitterMs`, in order (a
   * chunk never overtakes an earlier one, as on one TCP stream). Requests go through at once, so the
   * server executes a command on time and only its answer is late: a slow Redis as a client sees it.
   * `latency(0)` ends it; chunks already delayed keep their time.
   */
  latency(ms: number, jitterMs?: number): void;
  /**
   * Holds every byte, both ways (`'replies'`: server to client only, requests go through), on open and
   * new connections, and delivers it all in order on heal(): a link that stops and comes back before
   * TCP gives up on it.
   */
  stall(direction?: 'both' | 'replies'): void;
  /**
   * Drops every byte, both ways, without a FIN or a RST; new connections are accepted and never reach
   * the server. A connection that lost bytes stays silent for good, even after heal() (its stream has
   * a hole no retransmission fills): only a client that times out a silent socket ever leaves it,
   * as when a route or a firewall drops packets and the kernel has not yet given up.
   */
  blackHole(): void;
  /** Sends a RST to every open client connection now (and closes its server side); returns how many. */
  reset(): number;
  /** Back to pass-through: no latency, stalled bytes delivered in order. Black-holed connections stay dead. */
  heal(): void;
  /** Open client connections. */
  connections(): number;
  stats(): FaultStats;
  close(): Promise<void>;
}

interface Link {
  client: Socket;
  /** Undefined for a connection accepted inside a black hole: it never reaches the server. */
  upstream: Socket | undefined;
  /** Lost bytes to a black hole: never forwarded again. */
  dead: boolean;
  heldRequests: Buffer[];
  heldReplies: Buffer[];
  /** Reply chunks delayed by latency, oldest first, each with when it is due (never before the one ahead). */
  delayed: { due: number; chunk: Buffer }[];
  /** The one timer that delivers `delayed` from its head, in order. */
  timer: ReturnType<typeof setTimeout> | undefined;
}

/**
 * Starts a proxy on a free port of 127.0.0.1 that forwards to `targetPort` on 127.0.0.1.
 * @example const proxy = await startFaultProxy(server.port); new Redis({ port: proxy.port }); proxy.latency(60);
 */
export async function startFaultProxy(targetPort: number): Promise<FaultProxy> {
  const links = new Set<Link>();
  let mode: FaultMode = 'pass';
  let delayMs = 0;
  let jitterMs = 0;
  const counts = { accepted: 0, reset: 0, repliesDelivered: 0, dropped: 0 };

  const toClient = (link: Link, chunk: Buffer) => {
    if (link.client.destroyed) return;
    counts.repliesDelivered++;
    link.client.write(chunk);
  };

  /** A reply chunk from the server, as the mode and the latency say. */
  const reply = (link: Link, chunk: Buffer) => {
    if (link.dead || mode === 'black-hole') {
      link.dead = true;
      counts.dropped++;
      return;
    }
    if (mode === 'stall' || mode === 'stall-replies' || link.heldReplies.length > 0) {
      link.heldReplies.push(chunk);
      return;
    }
    if (delayMs === 0 && jitterMs === 0 && link.delayed.length === 0) {
      toClient(link, chunk);
      return;
    }
    const last = link.delayed[link.delayed.length - 1];
    link.delayed.push({ due: Math.max(performance.now() + delayMs + Math.random() * jitterMs, last?.due ?? 0), chunk });
    if (link.timer === undefined) deliver(link);
  };

  /**
   * Delivers the delayed chunks that are due, from the head of the queue, and waits for the next one: one
   * timer per connection, so no chunk overtakes an earlier one (timers of their own, one per chunk, may fire
   * out of order when one fires early and waits again).
   */
  const deliver = (link: Link) => {
    link.timer = undefined;
    while (link.delayed.length > 0 && (link.delayed[0]?.due ?? 0) <= performance.now()) {
      toClient(link, (link.delayed.shift() as { chunk: Buffer }).chunk);
    }
    const next = link.delayed[0];
    if (next !== undefined) link.timer = setTimeout(() => deliver(link), Math.max(1, Math.ceil(next.due - performance.now())));
  };

  /** A request chunk from the client. */
  const request = (link: Link, chunk: Buffer) => {
    if (link.dead || mode === 'black-hole') {
      link.dead = true;
      counts.dropped++;
      return;
    }
    if (mode === 'stall' || link.heldRequests.length > 0) link.heldRequests.push(chunk);
    else link.upstream?.write(chunk);
  };

  const drop = (link: Link) => {
    if (!links.delete(link)) return;
    clearTimeout(link.timer);
    link.client.destroy();
    link.upstream?.destroy();
  };

  const server: Server = createServer({ noDelay: true }, (client) => {
    counts.accepted++;
    const link: Link = { client, upstream: undefined, dead: false, heldRequests: [], heldReplies: [], delayed: [], timer: undefined };
    links.add(link);
    client.on('error', () => drop(link));
    client.on('close', () => drop(link));
    if (mode === 'black-hole') {
      link.dead = true;
    } else {
      const upstream = connect({ host: '127.0.0.1', port: targetPort, noDelay: true });
      link.upstream = upstream;
      upstream.on('data', (chunk: Buffer) => reply(link, chunk));
      // The server went away (killed, restarted): the client sees its connection end, as without a proxy.
      upstream.on('error', () => drop(link));
      upstream.on('close', () => drop(link));
    }
    client.on('data', (chunk: Buffer) => request(link, chunk));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address !== 'object') throw new Error('fault proxy: no port');

  return {
    port: address.port,
    get mode() {
      return mode;
    },
    latency(ms, jitter = 0) {
      delayMs = ms;
      jitterMs = jitter;
    },
    stall(direction = 'both') {
      mode = direction === 'both' ? 'stall' : 'stall-replies';
    },
    blackHole() {
      mode = 'black-hole';
    },
    reset() {
      let n = 0;
      for (const link of [...links]) {
        links.delete(link);
        clearTimeout(link.timer);
        link.client.resetAndDestroy();
        link.upstream?.destroy();
        n++;
      }
      counts.reset += n;
      return n;
    },
    heal() {
      mode = 'pass';
      delayMs = 0;
      jitterMs = 0;
      for (const link of links) {
        if (link.dead) continue;
        for (const chunk of link.heldRequests.splice(0)) link.upstream?.write(chunk);
        for (const chunk of link.heldReplies.splice(0)) reply(link, chunk);
      }
    },
    connections: () => links.size,
    stats() {
      let pending = 0;
      for (const link of links) pending += link.delayed.length + link.heldReplies.length;
      return { ...counts, repliesPending: pending };
    },
    async close() {
      for (const link of [...links]) drop(link);
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
