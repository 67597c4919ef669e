// An open-loop HTTP/1.1 load generator for bench/overload.mjs: requests are due on a fixed schedule and
// sent then, whatever the answers (no coordinated omission: a request's latency counts from when it was
// due, also while it waits for a free connection). A pool of `connections` raw keep-alive sockets, all opened
// before the clock starts (opening hundreds under load overflows the listen backlog, and a dropped SYN is
// retried after 1 s: that would measure TCP, not the server), one request at a time on each (no pipelining);
// a request with no free connection waits in a FIFO. Cheap per
// request (a prebuilt request, a status line and a Content-Length read), so that the client sharing the
// machine is not what limits the rate. 127.0.0.1 only.
import { connect } from 'node:net';
import { performance } from 'node:perf_hooks';

const HEAD_END = Buffer.from('\r\n\r\n');
const LENGTH = /\r\ncontent-length:\s*(\d+)/i;
const START = /\r\nx-start:\s*([\d.]+)/i; // bench/overload.mjs --verbose: when the handler began

/**
 * Sends `rate` requests/s for `seconds` to 127.0.0.1:`port` GET /, every `criticalEvery`-th with
 * x-priority: critical; waits up to `drainMs` for the last answers. Resolves with { critical, status, ms } per
 * request: status 0 for no answer (ms Infinity).
 */
export async function openLoop({ port, rate, seconds, criticalEvery = 0, connections = 256, drainMs = 1000 }) {
  const plain = Buffer.from('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
  const critical = Buffer.from('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nx-priority: critical\r\n\r\n');
  const total = Math.round(rate * seconds);
  const results = [];
  const idle = [];
  const queue = [];
  const sockets = new Set();
  let sent = 0;
  let resolveAll;

  const record = (r) => {
    results.push(r);
    if (results.length === total) resolveAll();
  };
  function open() {
    const socket = connect(port, '127.0.0.1');
    socket.setNoDelay(true);
    sockets.add(socket);
    let buffer = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
      const end = buffer.indexOf(HEAD_END);
      if (end < 0) return;
      const length = Number(LENGTH.exec(buffer.subarray(0, end).toString('latin1'))?.[1] ?? 0);
      if (buffer.length < end + 4 + length) return;
      const status = Number(buffer.subarray(9, 12).toString('latin1'));
      const head = buffer.subarray(0, end).toString('latin1');
      buffer = buffer.subarray(end + 4 + length);
      const job = socket.job;
      socket.job = undefined;
      const start = START.exec(head)?.[1];
      const r = { critical: job.critical, status, ms: performance.now() - job.due };
      if (start !== undefined) Object.assign(r, { start: Number(start), dueEpoch: performance.timeOrigin + job.due });
      record(r);
      next(socket);
    });
    const fail = () => {
      sockets.delete(socket);
      const i = idle.indexOf(socket);
      if (i >= 0) idle.splice(i, 1);
      if (socket.job !== undefined) record({ critical: socket.job.critical, status: 0, ms: Number.POSITIVE_INFINITY });
      socket.job = undefined;
    };
    socket.on('error', fail);
    socket.on('close', fail);
    return socket;
  }
  function next(socket) {
    const job = queue.shift();
    if (job === undefined) return void idle.push(socket);
    socket.job = job;
    socket.write(job.critical ? critical : plain);
  }
  function send(job) {
    const socket = idle.pop();
    if (socket === undefined) return void queue.push(job);
    socket.job = job;
    socket.write(job.critical ? critical : plain);
  }

  await Promise.all(Array.from({ length: connections }, () => new Promise((ready) => idle.push(open().once('connect', ready)))));
  const t0 = performance.now();
  return new Promise((resolve) => {
    let drain;
    resolveAll = () => {
      clearTimeout(drain);
      for (const s of sockets) s.destroy();
      resolve(results.slice(0, total));
    };
    const tick = setInterval(() => {
      const due = Math.min(total, Math.floor(((performance.now() - t0) / 1000) * rate));
      for (; sent < due; sent++) send({ due: t0 + (sent * 1000) / rate, critical: criticalEvery > 0 && sent % criticalEvery === 0 });
      if (sent < total) return;
      clearInterval(tick);
      drain = setTimeout(() => {
        for (const job of queue) record({ critical: job.critical, status: 0, ms: Number.POSITIVE_INFINITY });
        queue.length = 0;
        for (const s of sockets) s.destroy(); // those in flight record status 0 on close
        setTimeout(resolveAll, 100);
      }, drainMs);
    }, 1);
  });
}
