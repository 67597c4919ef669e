// A route's config.rateLimit takes the route options; the plugin's own (hook, global) are refused there
// by name, as its type refuses them (test/types/adapters.types.ts).
import Fastify from 'fastify';
import rateLimit from './index.js';

describe("a route's config.rateLimit", () => {
  it.each([
    ['hook', 'preHandler'],
    ['global', false],
  ])("refuses %s, naming it as the plugin's option", async (name, value) => {
    const app = Fastify();
    await app.register(rateLimit, { policy: '5/1m' });
    const register = () => app.get('/r', { config: { rateLimit: { policy: '1/1m', [name]: value } } }, async () => 'ok');
    expect(register).toThrow(
      expect.objectContaining({
        code: 'ERR_SLUICE_OPTION',
        message: expect.stringMatching(`^config.rateLimit.${name} must be absent on a route`),
      }),
    );
    await app.close();
  });
});
