// GraphQL benchmark: what @sluice/graphql's costLimit costs a server. Per server (GraphQL Yoga on node:http,
// Apollo Server standalone, Mercurius on Fastify), each contender in its own child process on 127.0.0.1
// (NODE_ENV=production, as servers run): the bare server; costLimit on the memory store (sluice); the
// limiter's two decisions alone, the same consume and refund in the server's hooks with no costing
// (decisions: the plugin's share is the difference); the same hooks doing nothing (hooks: what the server's
// hook machinery costs any plugin that answers after execution); the same hooks waiting for the next turn of
// the event loop (turn: what a plugin that waits, on Redis or on the memory store's batch, gains by that alone:
// the server runs each stage for several requests in a row); costLimit from another checkout's build (sluice-base,
// with --base DIR); costLimit on Redis (sluice-redis); graphql-armor's cost limit (armor: a validation rule,
// a cap on one query's cost, no budget). autocannon runs here, every request the same three-level query
// with trivial resolvers, which is where a plugin's share shows most:
//   { viewer { login repositories(first: 5) { name issues(first: 5) { title } } } }
// requested 1 + 5 x (1 + 5) = 31, actual 1 + 3 x (1 + 2) = 10: each request is costed, charged in one
// consume, its result costed, and 21 points refunded (decision.adjust). Each request carries an
// x-api-key spread over 10,000 values, each with a budget it never exhausts (any non-2xx fails the run).
// Round r loads every contender once, in an order rotated by r, for SECONDS each; figures are median
// (min–max) over rounds of req/s and of the server's CPU µs per request, and each round's ratios to the
// bare server of the same round. On a shared machine the CPU per request is the steadier of the two: a
// plugin's share of a server's CPU is the share of throughput it costs a saturated server.
// Usage: node bench/graphql.mjs [--seconds 2 --rounds 5 --warmup 1 --connections 32 --servers yoga,apollo,mercurius
//   --contenders sluice,decisions,hooks,turn,sluice-base,sluice-redis,armor --base DIR --cpu-prof DIR --pin yes]
import { execFileSync, fork } from 'node:child_process';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { resolve as resolvePath } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { arg } from './args.mjs';
import { startRedis } from './redis-server.mjs';
import { stats } from './stats.mjs';

const require = createRequire(import.meta.url);
const QUERY = '{ viewer { login repositories(first: 5) { name issues(first: 5) { title } } } }';
const CONTENDERS = ['bare', 'sluice', 'decisions', 'hooks', 'turn', 'sluice-base', 'sluice-redis', 'armor'];
const LABELS = {
  bare: 'bare server',
  decisions: 'its two decisions alone, memory store',
  hooks: 'the same hooks, doing nothing',
  turn: 'the same hooks, waiting for the next turn',
  sluice: 'costLimit, memory store',
  'sluice-base': 'costLimit, memory store, --base build',
  'sluice-redis': 'costLimit, Redis',
  armor: 'graphql-armor cost limit',
};
const KEYS = 10_000;
/**
 * --pin yes: autocannon (this process) and redis-server on the first CPU and the servers on the last
 * (taskset), so that neither the load nor Redis takes turns on one CPU with the server it measures.
 */
const PIN = arg('pin') === 'yes' ? { load: '0', server: String(availableParallelism() - 1) } : undefined;
/** Pins a process, all its threads, to `cpu`. */
const pin = (cpu, pid) => execFileSync('taskset', ['-a', '-p', '-c', cpu, String(pid)], { stdio: 'ignore' });

const typeDefs = /* GraphQL */ `
  type Query { viewer: User }
  type User { login: String!, repositories(first: Int = 10): [Repository!]! }
  type Repository { name: String!, issues(first: Int = 10): [Issue!]! }
  type Issue { title: String! }
`;
const resolvers = {
  Query: { viewer: () => ({ login: 'ada' }) },
  User: { repositories: () => [{ name: 'engine' }, { name: 'notes' }, { name: 'loom' }] },
  Repository: { issues: () => [{ title: 'a bug' }, { title: 'an idea' }] },
};

/** A child: one server with one contender, its port sent to the parent once it listens. */
async function serve(server, contender, redisPort, base) {
  // --base: another checkout's build of @sluice/core and @sluice/graphql (its packages/*/dist), side by side with this one's.
  const built = (pkg) => pathToFileURL(`${base}/packages/${pkg}/dist/esm/index.js`).href;
  const { createLimiter, memoryStore, redisStore } = await import(contender === 'sluice-base' ? built('core') : '@sluice/core');
  const { costDirectives, costLimit } = await import(contender === 'sluice-base' ? built('graphql') : '@sluice/graphql');
  const { costLimitPlugin, costLimitRule } = require('@escape.tech/graphql-armor-cost-limit');
  const { default: Redis } = await import('ioredis');
  const store = contender === 'sluice-redis' ? redisStore({ client: new Redis({ port: Number(redisPort) }) }) : memoryStore();
  const limiter = createLimiter({ policy: { limit: 1e9, window: '1s' }, store });
  const limit = costLimit({ limiter, key: (ctx) => ctx.key, maxCost: 1e6 });
  const sluice = contender.startsWith('sluice');
  const armor = { maxCost: 1e6 };
  // `decisions`: what costLimit asks of the limiter and nothing else (no costing, no extensions): the
  // same consume of 31 in the server's hook before execution, and the refund of 21 after.
  // `hooks`: the same hooks with nothing in them, what the server's hook machinery costs; `turn`: the same
  // hooks, the first waiting for the next turn of the event loop.
  const hooks = contender === 'hooks' || contender === 'turn';
  const decisions = contender === 'decisions' || hooks;
  const consume =
    contender === 'turn'
      ? () => new Promise((resolve) => setImmediate(resolve))
      : hooks
        ? async () => undefined
        : (ctx) => limiter.consume(ctx.key, { cost: 31 });
  const refund = hooks ? async () => undefined : (decision) => decision.adjust(-21);
  const defs = [costDirectives, typeDefs];
  let port;
  if (server === 'yoga') {
    const { createSchema, createYoga } = await import('graphql-yoga');
    const charge = {
      async onExecute({ args }) {
        const decision = await consume(args.contextValue);
        return { onExecuteDone: () => refund(decision).then(() => undefined) };
      },
    };
    const plugins = sluice ? [limit.envelop()] : contender === 'armor' ? [costLimitPlugin(armor)] : decisions ? [charge] : [];
    const yoga = createYoga({
      schema: createSchema({ typeDefs: defs, resolvers }),
      plugins,
      context: ({ request }) => ({ key: request.headers.get('x-api-key') }),
      logging: false,
    });
    const http = createServer(yoga);
    await new Promise((resolve) => http.listen(0, '127.0.0.1', resolve));
    port = http.address().port;
  } else if (server === 'apollo') {
    const { ApolloServer } = await import('@apollo/server');
    const { startStandaloneServer } = await import('@apollo/server/standalone');
    const apollo = new ApolloServer({
      typeDefs: defs,
      resolvers,
      plugins: sluice
        ? [limit.apollo()]
        : decisions
          ? [
              {
                async requestDidStart() {
                  let decision;
                  return {
                    async didResolveOperation({ contextValue }) {
                      decision = await consume(contextValue);
                    },
                    async willSendResponse() {
                      await refund(decision);
                    },
                  };
                },
              },
            ]
          : [],
      validationRules: contender === 'armor' ? [costLimitRule(armor)] : [],
    });
    const { url } = await startStandaloneServer(apollo, {
      listen: { port: 0, host: '127.0.0.1' },
      context: async ({ req }) => ({ key: req.headers['x-api-key'] }),
    });
    port = Number(new URL(url).port);
  } else {
    const { default: Fastify } = await import('fastify');
    const { default: mercurius } = await import('mercurius');
    const app = Fastify();
    await app.register(mercurius, {
      schema: defs.join('\n'),
      resolvers,
      context: (request) => ({ key: request.headers['x-api-key'] }),
      validationRules: contender === 'armor' ? [costLimitRule(armor)] : [],
    });
    if (sluice) await app.register(limit.mercurius());
    if (decisions) {
      app.graphql.addHook('preExecution', async (_schema, _document, context) => {
        context.decision = await consume(context);
      });
      app.graphql.addHook('onResolution', async (_execution, context) => {
        await refund(context.decision);
      });
    }
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = app.server.address().port;
  }
  // The plugin is there and answers: the one request a wrong setup would fail.
  const res = await fetch(`http://127.0.0.1:${port}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': 'check' },
    body: JSON.stringify({ query: QUERY }),
  });
  const body = await res.json();
  if (res.status !== 200 || body.errors) throw new Error(`${server} ${contender}: ${res.status} ${JSON.stringify(body)}`);
  if (sluice && body.extensions?.cost?.actualQueryCost !== 10) throw new Error(`${server}: no extensions.cost`);
  process.on('message', (message) => {
    if (message === 'cpu') process.send({ cpu: process.cpuUsage() });
    if (message === 'exit') process.exit(0); // a --cpu-prof child writes its profile on exit
  });
  // A parent that failed or was stopped leaves no server behind.
  process.once('disconnect', () => process.exit(0));
  process.send({ port });
}

function start(server, contender, redisPort, profileDir, base) {
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(import.meta.url), ['--serve', server, contender, String(redisPort), base], {
      env: { ...process.env, NODE_ENV: 'production' },
      execArgv: profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir, '--cpu-prof-name', `${server}-${contender}.cpuprofile`] : [],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    if (PIN) pin(PIN.server, child.pid);
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.once('exit', (code, signal) => reject(new Error(`${server} ${contender} exited (${signal ?? code}) before listening`)));
    child.once('message', ({ port }) => {
      clearTimeout(timer);
      child.removeAllListeners('exit');
      resolve({ child, port });
    });
  });
}

const IDS = Array.from({ length: KEYS }, (_, i) => `key-${i}`);
let sent = 0;
const requests = [
  {
    method: 'POST',
    path: '/graphql',
    body: JSON.stringify({ query: QUERY }),
    setupRequest(req) {
      req.headers = { 'content-type': 'application/json', 'x-api-key': IDS[sent++ % KEYS] };
      return req;
    },
  },
];

/** The server's CPU time, user and system, in µs. */
function cpu(child) {
  return new Promise((resolve) => {
    child.once('message', ({ cpu: { user, system } }) => resolve(user + system));
    child.send('cpu');
  });
}

/** Loads one server for `seconds`: its requests per second, and its CPU µs per request. */
async function load({ child, port }, seconds, connections) {
  const autocannon = require('autocannon');
  const before = await cpu(child);
  const result = await autocannon({ url: `http://127.0.0.1:${port}`, connections, duration: seconds, requests });
  const used = (await cpu(child)) - before;
  const bad = result.non2xx + result.errors + result.timeouts;
  if (bad > 0) throw new Error(`port ${port}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts`);
  return { rps: result.requests.total / result.duration, cpu: used / result.requests.total };
}

function commit() {
  try {
    const git = (...a) => execFileSync('git', a, { encoding: 'utf8' }).trim();
    const dirty = git('status', '--short', '--', 'packages').split('\n').filter(Boolean).length;
    return `${git('rev-parse', '--short', 'HEAD')}${dirty ? ` (+${dirty} uncommitted under packages/)` : ''}`;
  } catch {
    return 'unknown';
  }
}

async function main() {
  const seconds = Number(arg('seconds', 2));
  const rounds = Number(arg('rounds', 5));
  const warmup = Number(arg('warmup', 1));
  const connections = Number(arg('connections', 32));
  const servers = arg('servers', 'yoga,apollo,mercurius').split(',');
  // A checkout whose build runs as the contender sluice-base (its packages built: pnpm build there). Its
  // node_modules must reach this checkout's graphql (graphql refuses a schema built by another copy of it):
  // link DIR/node_modules/.pnpm/graphql@*/node_modules/graphql to this one's.
  const base = resolvePath(arg('base', '.'));
  // The bare server is every ratio's base: always there.
  const all = CONTENDERS.filter((c) => c !== 'sluice-base' || arg('base') !== undefined);
  const contenders = [
    'bare',
    ...arg('contenders', all.join(','))
      .split(',')
      .filter((c) => c !== 'bare'),
  ];
  for (const c of contenders) if (!CONTENDERS.includes(c)) throw new Error(`--contenders: ${c} is none of ${CONTENDERS.join(', ')}`);
  // Each server's CPU profile (node --cpu-prof), written to this directory when the run ends.
  const profileDir = arg('cpu-prof', '');
  const fmt = (n, digits = 0) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
  const cell = (xs, digits) => {
    const s = stats(xs);
    return `${fmt(s.median, digits)} (${fmt(s.min, digits)}–${fmt(s.max, digits)})`;
  };
  if (PIN) pin(PIN.load, process.pid);
  const rows = [];
  const redis = await startRedis();
  if (PIN) pin(PIN.load, /process_id:(\d+)/.exec(await redis.client.info('server'))[1]);
  for (const server of servers) {
    const running = {};
    for (const contender of contenders) running[contender] = await start(server, contender, redis.port, profileDir, base);
    try {
      for (const contender of contenders) if (warmup > 0) await load(running[contender], warmup, connections);
      const runs = Object.fromEntries(contenders.map((c) => [c, []]));
      for (let r = 0; r < rounds; r++) {
        for (let i = 0; i < contenders.length; i++) {
          const contender = contenders[(i + r) % contenders.length];
          runs[contender].push(await load(running[contender], seconds, connections));
        }
      }
      for (const contender of contenders) {
        const mine = runs[contender];
        const ratio =
          contender === 'bare'
            ? '1'
            : cell(
                mine.map((m, r) => m.rps / runs.bare[r].rps),
                2,
              );
        const cpuRatio =
          contender === 'bare'
            ? '1'
            : cell(
                mine.map((m, r) => runs.bare[r].cpu / m.cpu),
                2,
              );
        const added =
          contender === 'bare'
            ? ''
            : cell(
                mine.map((m, r) => m.cpu - runs.bare[r].cpu),
                1,
              );
        rows.push(
          `| ${server} | ${LABELS[contender]} | ${cell(mine.map((m) => m.rps))} | ${ratio} | ${cell(
            mine.map((m) => m.cpu),
            1,
          )} | ${added} | ${cpuRatio} |`,
        );
        console.error(rows.at(-1));
      }
    } finally {
      for (const { child } of Object.values(running)) {
        if (profileDir) await new Promise((resolve) => child.once('exit', resolve).send('exit'));
        else child.kill('SIGKILL');
      }
    }
  }
  await redis.stop();
  const command = `node bench/graphql.mjs --seconds ${seconds} --rounds ${rounds} --warmup ${warmup} --connections ${connections} --servers ${servers.join(',')} --contenders ${contenders.join(',')}${arg('base') ? ` --base ${arg('base')}` : ''}${profileDir ? ` --cpu-prof ${profileDir}` : ''}${PIN ? ' --pin yes' : ''}`;
  console.log(`Run of ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, commit ${commit()}: \`${command}\`\n`);
  console.log('| server | contender | req/s | ratio to the bare server | server CPU µs per request | µs added | bare CPU / its CPU |');
  console.log('| --- | --- | --- | --- | --- | --- | --- |');
  for (const row of rows) console.log(row);
}

if (process.argv[2] === '--serve') await serve(process.argv[3], process.argv[4], process.argv[5], process.argv[6]);
else await main();
