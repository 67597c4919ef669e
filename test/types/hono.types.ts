// Type test for @sluice/hono: never run, only type-checked by `pnpm typecheck` (root tsconfig includes test/).
// Every `@ts-expect-error` marks a wrong use that must NOT type-check; each wrong use sits alone on the line after it.
import { getConnInfo } from '@hono/node-server/conninfo';
import { createNodeWebSocket } from '@hono/node-ws';
import { createLimiter, type Decision } from '@sluice/core';
import rateLimitDefault, { rateLimit, shed, webSocketLimit } from '@sluice/hono';
import { Hono } from 'hono';

declare const decisionSink: (d: Decision | undefined) => void;
type AppEnv = { Variables: { user: { id: string; plan: 'free' | 'pro' } } };

{
  const app = new Hono<AppEnv>();
  app.use(rateLimit({ policy: '100/1m' }));
  app.use(rateLimitDefault({ policy: '100/1m', headers: 'both', getIP: getConnInfo }));
  // c.var.rateLimit is typed by the middleware's Env, in the handlers after it.
  app.post('/login', rateLimit({ policy: '5/15m', failMode: 'closed' }), (c) => {
    const decision: Decision | undefined = c.var.rateLimit;
    decisionSink(decision);
    decisionSink(c.get('rateLimit'));
    // @ts-expect-error c.var.rateLimit is a Decision, not any
    c.var.rateLimit?.nope;
    return c.json({ remaining: c.var.rateLimit?.remaining });
  });
  // An app.use(rateLimit()) of its own statement: c.var.rateLimit is typed in every handler too.
  const plain = new Hono();
  plain.use(rateLimit({ policy: '100/1m' }));
  plain.get('/', (c) => c.text(`${c.var.rateLimit?.remaining ?? 0} left`));
  // The app's Env types c in the options' functions.
  rateLimit<AppEnv>({
    policy: (c) => (c.var.user.plan === 'pro' ? ['100/s', '10000/day'] : '10/s'),
    key: (c) => c.var.user.id,
    cost: async (c) => (c.req.method === 'POST' ? 5 : 1),
    skip: (c) => c.req.path === '/health',
    settle: (c) => (c.res.status < 400 ? 1 : 0),
    requestWasSuccessful: (c) => c.res.status < 500,
    getIP: (c) => c.req.header('x-real-ip'),
    onLimited: (c, decision) => c.json({ retryInMs: decision.retryAfterMs }, 429),
    delay: { maxWait: '2s' },
  });
  // Without a type argument the Env is Hono's default, as createMiddleware's: c.var reads anything.
  rateLimit({ policy: '1/s', key: (c) => c.var.user.id });

  // @ts-expect-error key must return a string
  rateLimit({ policy: '1/s', key: () => 42 });
  // @ts-expect-error onLimited answers a Response
  rateLimit({ policy: '1/s', onLimited: () => 'slow down' });
  // @ts-expect-error onLimited gets a Decision
  rateLimit({ policy: '1/s', onLimited: (c, decision) => c.json(decision.nope) });
  // @ts-expect-error getIP returns an address or a ConnInfo
  rateLimit({ policy: '1/s', getIP: () => 42 });
  // @ts-expect-error headers must be a known mode
  rateLimit({ policy: '1/s', headers: 'nope' });
  // @ts-expect-error a middleware without any policy
  rateLimit({ key: () => 'k' });
  // @ts-expect-error the options' c is the app's Context
  rateLimit<AppEnv>({ policy: '1/s', key: (c) => c.var.nope });

  app.use(shed({ maxWait: '20ms', priority: (c) => (c.req.path === '/pay' ? 'critical' : 'normal') }));
  // @ts-expect-error priority answers a class, not any string
  shed({ priority: () => 'urgent' });

  // webSocketLimit wraps upgradeWebSocket's events, keeping their types.
  const { upgradeWebSocket } = createNodeWebSocket({ app });
  app.get(
    '/ws',
    upgradeWebSocket(
      webSocketLimit<AppEnv>({ policy: '20/1s', key: (c) => c.var.user.id, onLimited: 'drop' })((c) => ({
        onMessage(event, ws) {
          ws.send(`${c.var.user.id}: ${String(event.data)}`);
          ws.raw?.ping();
        },
      })),
    ),
  );
  webSocketLimit({ limiter: createLimiter({ policy: '5/1s' }) });
  // @ts-expect-error onLimited is 'close' or 'drop'
  webSocketLimit({ policy: '1/s', onLimited: 'ignore' });
  // @ts-expect-error a message has no HTTP response: no headers
  webSocketLimit({ policy: '1/s', headers: 'draft' });
  // @ts-expect-error a limit without any policy
  webSocketLimit({ key: () => 'k' });
}
