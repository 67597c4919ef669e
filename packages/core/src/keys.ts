import { createHash } from 'node:crypto';

// Kept as is: short printable ASCII (spaces included, as in the adapters' 'GET /login' scopes) without
// '{', '}' (hash tags), '~' (shard suffix) or a leading '#'.
const PLAIN_KEY = /^[ -z|]{1,100}$/;

/**
 * The hash-tag body for a caller's key: the key itself when short and plain, else '#' and a digest.
 * Any string is a key (empty, unicode, 10 KB, braces, CR, LF); distinct keys never share a tag, no
 * key escapes the prefix or moves the hash tag, and long keys take bounded space in Redis.
 */
export function keyTag(key: string): string {
  if (PLAIN_KEY.test(key) && key.charCodeAt(0) !== 35 /* # */) return key;
  // UTF-16 code units, so that lone surrogates hash apart (UTF-8 would map them all to U+FFFD).
  return `#${createHash('sha256').update(key, 'utf16le').digest('base64url').slice(0, 27)}`;
}

/** The store key of one policy's counters: `prefix:{tag}:policyId`, so a key's policies share a Cluster slot. */
export function storeKey(prefix: string, tag: string, policyId: string): string {
  return `${prefix}:{${tag}}:${policyId}`;
}
