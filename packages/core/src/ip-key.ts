import { isIPv6 } from 'node:net';
import { SluiceError } from './errors.js';

const MAPPED_V4 = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i;

/** The 8 groups of a valid IPv6 address ('::' expanded, an embedded IPv4 tail turned into two groups). */
function groups(ip: string): number[] {
  let text = ip;
  const v4 = /(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const zeros = tail === undefined ? [] : Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...zeros, ...right].map((g) => Number.parseInt(g, 16));
}

/**
 * The rate-limit key for a client IP: IPv4 as is, IPv4-mapped IPv6 as its IPv4, and IPv6 grouped by
 * its `/subnet` prefix (default 56: one customer's allocation), since one client owns a whole IPv6
 * prefix and would otherwise rotate through it. `false` keeps the full IPv6 address.
 * @example ipKey('2001:db8:1:2ab::7') // '2001:db8:1:200::/56'
 */
export function ipKey(ip: string | undefined, subnet: number | false = 56): string {
  if (typeof ip !== 'string' || ip === '') {
    throw new SluiceError('ERR_SLUICE_KEY', 'the client IP is unknown (socket closed?): give a key(req) function');
  }
  const bare = ip.replace(/%.*$/, ''); // zone index, as in fe80::1%eth0
  const mapped = MAPPED_V4.exec(bare);
  if (mapped) return mapped[1] as string;
  if (subnet === false || !isIPv6(bare)) return bare;
  const masked = groups(bare).map((g, i) => {
    const bits = Math.min(16, Math.max(0, subnet - i * 16));
    return bits === 16 ? g : g & (0xffff << (16 - bits)) & 0xffff;
  });
  // Compressed like '2001:db8:1:200::/56': the trailing zero groups become '::'.
  let end = 8;
  while (end > 0 && masked[end - 1] === 0) end--;
  const head = masked.slice(0, end).map((g) => g.toString(16));
  return `${head.join(':')}${end < 8 ? '::' : ''}/${subnet}`;
}
