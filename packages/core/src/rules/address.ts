// Addresses and CIDR ranges as the rules match them (match.ts): parsed once when rules load, and
// a key tested on every decision while address rules are loaded, so the test allocates nothing.
import { isIPv6 } from 'node:net';
import { groups } from '../ip-key.js';

/** An address: IPv4 as one 32-bit word, IPv6 as four. */
export interface Address {
  v6: boolean;
  words: number[];
  /** Bits of the address that count: 32 or 128, or a range's prefix length. */
  bits: number;
}

/**
 * The IPv4 dotted quad s[0, end) as a 32-bit unsigned number, or -1. A scan of char codes, no regex and
 * nothing allocated: it runs on every decision's key while address rules are loaded.
 */
export function v4Number(s: string, end = s.length): number {
  let n = 0;
  let part = 0;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i < end; i++) {
    const c = s.charCodeAt(i);
    if (c === 46 /* . */) {
      if (digits === 0 || dots === 3) return -1;
      n = n * 256 + part;
      part = 0;
      digits = 0;
      dots++;
    } else if (c >= 48 && c <= 57) {
      // No leading zero ('01' is octal to some parsers, so no address here), at most 3 digits, <= 255.
      if ((digits === 1 && part === 0) || digits === 3) return -1;
      part = part * 10 + (c - 48);
      digits++;
      if (part > 255) return -1;
    } else return -1;
  }
  if (dots !== 3 || digits === 0) return -1;
  return n * 256 + part;
}

/**
 * An address, or a range 'address/bits', or undefined when `s` is neither. An IPv4-mapped IPv6 address
 * (::ffff:a.b.c.d, and a range of 96 bits or more in ::ffff:0:0/96) is its IPv4 one. A zone index is
 * dropped. Host bits of a range are cleared.
 */
export function parseAddress(s: string): Address | undefined {
  const c = s.charCodeAt(0);
  // Neither a digit nor a hex letter or ':' first: not an address (most keys: 'user:42', 'acct_7').
  if (!((c >= 48 && c <= 58) || (c >= 97 && c <= 102) || (c >= 65 && c <= 70))) return undefined;
  // Before node:net's parse, a scan: an IPv6 address has a ':' and, up to a zone's '%', hex digits, ':' and '.' only.
  let colon = false;
  for (let i = 0; i < s.length; i++) {
    const d = s.charCodeAt(i);
    if (d === 37 /* % */ || d === 47 /* / */) break;
    if (d === 58) colon = true;
    else if (!((d >= 48 && d <= 57) || (d >= 97 && d <= 102) || (d >= 65 && d <= 70) || d === 46)) return undefined;
  }
  const slash = s.indexOf('/');
  const body = slash < 0 ? s : s.slice(0, slash);
  let bits = -1;
  if (slash >= 0) {
    const tail = s.slice(slash + 1);
    if (!/^\d{1,3}$/.test(tail)) return undefined;
    bits = Number(tail);
  }
  const n = v4Number(s, slash < 0 ? s.length : slash);
  if (n < 0 && !colon) return undefined;
  let a: Address;
  if (n >= 0) {
    if (bits > 32) return undefined;
    a = { v6: false, words: [n], bits: bits < 0 ? 32 : bits };
  } else {
    const zone = body.indexOf('%');
    const bare = zone < 0 ? body : body.slice(0, zone);
    if (!isIPv6(bare) || bits > 128) return undefined;
    const g = groups(bare);
    const words = [0, 1, 2, 3].map((i) => (((g[2 * i] as number) << 16) | (g[2 * i + 1] as number)) >>> 0);
    const whole = bits < 0 ? 128 : bits;
    if (words[0] === 0 && words[1] === 0 && words[2] === 0xffff && whole >= 96) {
      a = { v6: false, words: [words[3] as number], bits: whole - 96 };
    } else a = { v6: true, words, bits: whole };
  }
  // Clear the host bits: 203.0.113.7/24 is 203.0.113.0/24.
  a.words = a.words.map((w, i) => {
    const left = a.bits - 32 * i;
    if (left >= 32) return w;
    if (left <= 0) return 0;
    return (w & (0xffffffff << (32 - left))) >>> 0;
  });
  return a;
}
