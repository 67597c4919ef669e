// A second process for test/rules.redis.test.ts, on the built packages: a limiter with rules (refresh 1 s)
// and a ban, on the standalone Redis or the Cluster the arguments name. It answers the parent's messages:
//   { op: 'consume' | 'peek', key, ip?, scope? } -> the Decision's { allowed, source, limit, rule }
//   { op: 'deny' | 'allow' | 'override' | 'remove', args } -> writes a rule here; { done: true } once it resolved
const { createLimiter, createRules, redisStore } = require('@sluice/core');
const Redis = require('ioredis');

const [mode, ports, prefix] = process.argv.slice(2);
const nodes = ports.split(',').map((port) => ({ host: '127.0.0.1', port: Number(port) }));
const client = mode === 'cluster' ? new Redis.Cluster(nodes) : new Redis(nodes[0]);
const store = redisStore({ client });
const rules = createRules({
  store,
  prefix,
  refresh: '1s',
  onEvent: (e) => e.type === 'rule-error' && console.error('rules-child:', e.error?.message),
});
const limiter = createLimiter({ policy: '3/1h', store, prefix, rules, timeout: 5000, ban: { after: 6, within: '1m', for: '1h' } });

client.once('ready', () => process.send({ ready: true }));
process.on('message', async (m) => {
  try {
    if (m.op === 'consume' || m.op === 'peek') {
      const d = await limiter[m.op](m.key, { ...(m.ip ? { ip: m.ip } : {}), ...(m.scope ? { scope: m.scope } : {}) });
      process.send({ id: m.id, allowed: d.allowed, source: d.source, limit: d.limit, rule: d.rule ?? null, at: Date.now() });
    } else if (m.op === 'close') {
      await limiter.close();
      await rules.close();
      client.disconnect();
      process.disconnect();
    } else {
      await rules[m.op](...m.args);
      process.send({ id: m.id, done: true });
    }
  } catch (error) {
    process.send({ id: m.id, error: String(error) });
  }
});
