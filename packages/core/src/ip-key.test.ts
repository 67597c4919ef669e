import { ipKey } from './ip-key.js';

describe('ipKey', () => {
  it.each([
    ['203.0.113.7', 56, '203.0.113.7'],
    ['::ffff:203.0.113.7', 56, '203.0.113.7'],
    ['::FFFF:10.0.0.1', 56, '10.0.0.1'],
    ['2001:db8:1:2ab::7', 56, '2001:db8:1:200::/56'],
    ['2001:db8:1:2ff:ffff::1', 56, '2001:db8:1:200::/56'],
    ['2001:db8:1:300::1', 56, '2001:db8:1:300::/56'],
    ['2001:db8:1:2ab::7', 64, '2001:db8:1:2ab::/64'],
    ['2001:db8:1:2ab::7', 128, '2001:db8:1:2ab:0:0:0:7/128'],
    ['2001:db8:1:2ab::7', false, '2001:db8:1:2ab::7'],
    ['::1', 56, '::/56'],
    ['fe80::1%eth0', 64, 'fe80::/64'],
    ['64:ff9b::192.0.2.33', 96, '64:ff9b::/96'],
  ] as const)('%s /%s -> %s', (ip, subnet, key) => {
    expect(ipKey(ip, subnet)).toBe(key);
  });

  it('refuses an unknown IP rather than sharing one bucket', () => {
    expect(() => ipKey(undefined)).toThrow(/client IP is unknown/);
    expect(() => ipKey('')).toThrow(/client IP is unknown/);
  });
});
