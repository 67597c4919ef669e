import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

// Runs the built packages (pnpm build) from real CommonJS and ES module consumers.
describe.each(['consumer.cjs', 'consumer.mjs'])('built @sluice/* from %s', (file) => {
  it('limits and computes headers', () => {
    const out = JSON.parse(execFileSync(process.execPath, [join(__dirname, 'consumers', file)], { encoding: 'utf8' }));
    expect(out.results).toEqual([true, true, false]);
    expect(out.headers['Retry-After']).toMatch(/^\d+$/);
    expect(out.headers['RateLimit-Policy']).toBe('"2-per-60s";q=2;w=60');
    expect(out.adapters).toEqual(['function', 'function', 'function', 'function', 'function', 'function']);
    expect(out.middleware).toEqual(['function', 'function']);
  });
});
