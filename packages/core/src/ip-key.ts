import { isIPv4, isIPv6 } from 'node:net';
import { SluiceError } from './errors.js';

/** The 8 groups of an address that node:net's isIPv6 accepts ('::' expanded, an IPv4 tail as two groups). */
export function groups(ip: string): number[] {
  const g: number[] = [];
  let gap = ip.startsWith('::') ? 0 : -1;
  for (let i = gap === 0 ? 2 : 0; i < ip.length; ) {
    const colon = ip.indexOf(':', i);
    const part = ip.slice(i, colon < 0 ? ip.length : colon);
    if (part.includes('.')) {
      const [a, b, c, d] = part.split('.').map(Number) as [number, number, number, number];
      g.push((a << 8) | b, (c << 8) | d);
    } else g.push(Number.parseInt(part, 16));
    if (colon < 0) break;
    i = colon + 1;
    if (ip[i] === ':') {
      gap = g.length;
      i++;
    }
  }
  if (gap >= 0) g.splice(gap, 0, ...Array<number>(8 - g.length).fill(0));
  return g;
}

/** Groups in hex with the run of zero groups [from, to) written '::'. */
function format(g: readonly number[], from: number, to: number): string {
  const hex = (a: number, b: number) =>
    g
      .slice(a, b)
      .map((x) => x.toString(16))
      .join(':');
  return from === to ? hex(0, 8) : `${hex(0, from)}::${hex(to, 8)}`;
}

/** An address as RFC 5952 writes it: lowercase, no leading zeros, the longest run of 2+ zero groups (the first) as '::'. */
function canonical(g: readonly number[]): string {
  let from = 0;
  let to = 0;
  for (let i = 0; i < 8; i++) {
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > 1 && j - i > to - from) [from, to] = [i, j];
    i = j;
  }
  return format(g, from, to);
}

/**
 * The rate-limit key for a client IP: IPv4 as is, IPv4-mapped IPv6 as its IPv4, and IPv6 grouped by
 * its `/subnet` prefix (default 56: one customer's allocation), since one client owns a whole IPv6
 * prefix and would otherwise rotate through it. `false` keeps the full IPv6 address (RFC 5952 form).
 * Every spelling of one address (case, leading zeros, '::', a dotted tail, a zone index) gives one key.
 * @example ipKey('2001:db8:1:2ab::7') // '2001:db8:1:200::/56'
 */
export function ipKey(ip: string | undefined, subnet: number | false = 56): string {
  if (typeof ip !== 'string' || ip === '') {
    throw new SluiceError('ERR_SLUICE_KEY', 'the client IP is unknown (socket closed?): give a key(req) function');
  }
  // The usual spelling of a mapped IPv4 (a dual-stack server's req.ip) first, without parsing.
  if (ip.startsWith('::ffff:')) {
    const v4 = ip.slice(7);
    if (isIPv4(v4)) return v4;
  } else if (isIPv4(ip)) return ip;
  const zone = ip.indexOf('%'); // as in fe80::1%eth0
  const bare = zone < 0 ? ip : ip.slice(0, zone);
  if (!isIPv6(bare)) return bare;
  const g = groups(bare);
  if (g[5] === 0xffff && !(g[0] || g[1] || g[2] || g[3] || g[4])) {
    const [hi, lo] = [g[6] as number, g[7] as number];
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  if (subnet === false) return canonical(g);
  const masked = g.map((x, i) => x & (0xffff << (16 - Math.min(16, Math.max(0, subnet - i * 16)))) & 0xffff);
  // Compressed like '2001:db8:1:200::/56': the trailing zero groups become '::'.
  let end = 8;
  while (end > 0 && masked[end - 1] === 0) end--;
  return `${format(masked, end, 8)}/${subnet}`;
}
