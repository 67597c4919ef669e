// Express on a Redis Cluster. REDIS_CLUSTER_NODES lists some of its nodes ('127.0.0.1:7000,127.0.0.1:7001');
// ioredis finds the rest. GET / passes two limits: the whole API's, on one hot key split into shards, and
// each client's; POST /login is strict and refuses every request (503) while the cluster is down.
import { redisStore } from '@sluice/core';
import { rateLimit } from '@sluice/express';
import express from 'express';
import { Cluster } from 'ioredis';
import { left, logBreaker, quietErrors } from '../outage-log.mjs';

const nodes = (process.env.REDIS_CLUSTER_NODES ?? '127.0.0.1:7000').split(',').map((node) => {
  const [host, port] = node.trim().split(':');
  return { host, port: Number(port) };
});
const cluster = new Cluster(nodes);
quietErrors(cluster); // 'Failed to refresh slots cache.' once per 5 s, not per attempt
const store = redisStore({ client: cluster });

// Fail-overs and outages, as they happen: the breaker stops calling a dead store and probes it back.
const onEvent = logBreaker;

const app = express();

app.get('/health', (_req, res) => {
  res.send('ok\n');
});

// Every client together: one key, so one slot and one node would take all of it. 8 shards put 125/s on each of
// 8 keys with their own hash tags, spread over the nodes; a request tries two shards before it is denied.
// Fail open: an outage must not take the API down.
app.use(rateLimit({ policy: '1000/1s', key: () => 'everyone', shards: 8, store, failMode: 'open', onEvent }));

// Per client, over two windows: both policies' keys share the client's hash tag, so one script on one node decides.
app.get('/', rateLimit({ policy: ['20/1s', '1000/1h'], store, failMode: 'open', onEvent }), (req, res) => {
  res.send(`hello, ${left(req.rateLimit)} this second\n`);
});

// Fail closed: while the cluster is down, no login is tried (503 with Retry-After); a per-process fallback would
// start full, and let a client locked out by the cluster try again.
app.post('/login', rateLimit({ policy: '5/15m', store, failMode: 'closed', fallback: false, onEvent }), (_req, res) => {
  res.send('logged in\n');
});

const server = app.listen(Number(process.env.PORT ?? 3000), (error) => {
  if (error) throw error;
  console.log(
    `listening on http://localhost:${server.address().port} (Redis Cluster ${nodes.map((n) => `${n.host}:${n.port}`).join(', ')})`,
  );
});
