import { BlockList, isIPv6, SocketAddress } from 'node:net';
import fc from 'fast-check';
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

describe('IPv4-mapped IPv6 in every spelling', () => {
  it.each([
    ['0:0:0:0:0:ffff:198.51.100.7', '198.51.100.7'],
    ['0:0:0:0:0:ffff:203.0.113.9', '203.0.113.9'],
    ['::ffff:cb00:7109', '203.0.113.9'],
    ['::ffff:c633:6407', '198.51.100.7'],
    ['0000:0000:0000:0000:0000:FFFF:C633:6407', '198.51.100.7'],
    ['::0:ffff:198.51.100.7%eth0', '198.51.100.7'],
  ])('%s is the client %s', (ip, v4) => {
    expect(ipKey(ip)).toBe(v4);
    expect(ipKey(ip, false)).toBe(v4);
  });

  it('gives every spelling of one address the key node:net reads it as', () => {
    const group = fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 0xffff }));
    const mapped = fc.tuple(group, group).map(([hi, lo]) => [0, 0, 0, 0, 0, 0xffff, hi, lo]);
    const address = fc.oneof(fc.array(group, { minLength: 8, maxLength: 8 }), mapped);
    const style = fc.record({
      pad: fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 8, maxLength: 8 }),
      upper: fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }),
      dotted: fc.boolean(),
      run: fc.nat(),
      zone: fc.constantFrom('', '%eth0', '%1'),
      subnet: fc.oneof(fc.constantFrom(56 as const, 64 as const, 128 as const, false as const), fc.integer({ min: 1, max: 128 })),
    });
    fc.assert(
      fc.property(address, style, (g, s) => {
        const ip = spell(g, s);
        expect(isIPv6(ip)).toBe(true);
        const node = new SocketAddress({ address: ip.replace(/%.*/, ''), family: 'ipv6' }).address;
        const key = ipKey(ip, s.subnet);
        expect(key).toBe(ipKey(node, s.subnet));
        const v4 = g[5] === 0xffff && g.slice(0, 5).every((x) => x === 0);
        if (v4) expect(node).toBe(`::ffff:${key}`);
        else if (s.subnet === false) expect(new SocketAddress({ address: key, family: 'ipv6' }).address).toBe(node);
        else {
          const [prefix, bits] = key.split('/') as [string, string];
          const net = new BlockList();
          net.addSubnet(prefix, Number(bits), 'ipv6');
          expect(net.check(node, 'ipv6')).toBe(true);
        }
      }),
      { numRuns: 2000 },
    );
  });
});

/** One spelling of the address `g`: leading zeros, case, a '::' over a run of zeros, a dotted tail, a zone. */
function spell(g: number[], s: { pad: number[]; upper: boolean[]; dotted: boolean; run: number; zone: string }): string {
  const dotted = s.dotted;
  const tokens: (string | undefined)[] = g.map((x, i) => {
    const hex = x.toString(16);
    const padded = hex.padStart(Math.min(4, hex.length + (s.pad[i] ?? 0)), '0');
    return s.upper[i] ? padded.toUpperCase() : padded;
  });
  if (dotted)
    tokens.splice(6, 2, `${(g[6] as number) >> 8}.${(g[6] as number) & 255}.${(g[7] as number) >> 8}.${(g[7] as number) & 255}`, undefined);
  const runs: [number, number][] = [];
  for (let i = 0; i < 8; i++) for (let j = i + 1; j <= (dotted ? 6 : 8) && g[j - 1] === 0; j++) runs.push([i, j]);
  const run = runs[s.run % (runs.length + 1)];
  const text = (a: number, b: number) =>
    tokens
      .slice(a, b)
      .filter((t) => t !== undefined)
      .join(':');
  return `${run === undefined ? text(0, 8) : `${text(0, run[0])}::${text(run[1], 8)}`}${s.zone}`;
}
