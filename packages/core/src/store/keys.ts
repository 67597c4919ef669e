// Every key sluice builds, in one place. Along the way "key" means:
//   the caller's key    what an app passes to consume() ('203.0.113.7', 'user:42');
//   the scoped key      an adapter's counter for a client: scope (a route or a `scope` name) and caller key;
//   the tag             the hash-tag body a caller's key becomes (itself, or a digest);
//   the shard tag       a tag with its shard ('k~3'), the fallback tag (the local tier's, '!k');
//   the store key       one policy's counters: `prefix:{tag}:policyId`;
//   the id key          the record of an idempotent consume's id: `prefix:{tag}:id:idTag`;
//   the guard key       a store's record of the calls it sent (store/redis/dispatch.ts): `sluice:call:storeId`.
//   the rules keys      a prefix's rules, their version and log (rules/rules.ts): `prefix:{#rules}:set`, `:v`, ...;
//   the ban key         a counter's recent denials (rules/ban.ts): `prefix:{tag}:ban`.
//   the lease keys      a key's lease in a region and its global bucket at the home (regions/): `prefix:{tag}:policyId:lease`, `:home`.
import { createHash } from 'node:crypto';
import calculateSlot from 'cluster-key-slot';

// Kept as is: short printable ASCII (spaces included, as in the adapters' 'GET /login' scopes) without
// '{', '}' (hash tags), '~' (shard suffix) or a leading '#'.
const PLAIN_KEY = /^[ -z|]{1,100}$/;

/**
 * The caller's key an adapter counts a client under: length-prefixed, so that no scope and key pair can
 * spell another. `scope` is a route ('POST /login') or a `scope` option's name.
 * @example scopedKey('POST /login', '203.0.113.7') // '11:POST /login|203.0.113.7'
 */
export function scopedKey(scope: string, key: string): string {
  return `${scope.length}:${scope}|${key}`;
}

/**
 * The hash-tag body for a caller's key: the key itself when short and plain, else '#' and a digest.
 * Any string is a key (unicode, 10 KB, braces, CR, LF); distinct keys never share a tag, no key escapes
 * the prefix or moves the hash tag, and long keys take bounded space in Redis.
 */
export function keyTag(key: string): string {
  if (PLAIN_KEY.test(key) && key.charCodeAt(0) !== 35 /* # */) return key;
  // UTF-16 code units, so that lone surrogates hash apart (UTF-8 would map them all to U+FFFD).
  return `#${createHash('sha256').update(key, 'utf16le').digest('base64url').slice(0, 27)}`;
}

/** The tag of one shard of a key split over `shards` (hot keys): each shard in a Cluster slot of its own. */
export function shardTag(tag: string, shard: number, shards: number): string {
  return shards === 1 ? tag : `${tag}~${shard}`;
}

/** The tag of a key's counters in the local fallback, apart from the prefilter's in the same local store. */
export function fallbackTag(tag: string): string {
  return `!${tag}`;
}

/** The store key of one policy's counters: `prefix:{tag}:policyId`, so a key's policies share a Cluster slot. */
export function storeKey(prefix: string, tag: string, policyId: string): string {
  return `${prefix}:{${tag}}:${policyId}`;
}

/**
 * The keys of one request for `tag`: each policy's counters (storeKey), then the id's record when an
 * idempotent consume has one (idKey). Every key a request sends is built here.
 */
export function requestKeys(prefix: string, tag: string, policies: readonly { id: string }[], id?: string): string[] {
  const n = policies.length;
  const keys: string[] = new Array(id === undefined ? n : n + 1);
  for (let i = 0; i < n; i++) keys[i] = storeKey(prefix, tag, (policies[i] as { id: string }).id);
  if (id !== undefined) keys[n] = idKey(prefix, tag, id);
  return keys;
}

/**
 * The record of an idempotent consume's `id` for a key: in the key's hash tag, so in its Cluster slot,
 * beside its counters (a policy id never starts with 'id:'). The id is tagged as a key is (keyTag), so
 * any string is an id and a long one takes bounded space.
 */
export function idKey(prefix: string, tag: string, id: string): string {
  return `${prefix}:{${tag}}:id:${keyTag(id)}`;
}

/**
 * The guard of one store's script calls (lua/decide.lua: a call the client sends again is not run again),
 * `sluice:call:<storeId>`, on a Cluster one per slot the store calls: `sluice:call:<storeId>:{t}`, where
 * `t` is a short tag that hashes to that slot, so the guard lives beside the call's keys.
 */
export function guardKey(storeId: string, slot?: number): string {
  return slot === undefined ? `sluice:call:${storeId}` : `sluice:call:${storeId}:{${slotTags()[slot]}}`;
}

let tags: string[] | undefined;
/** For each of the 16,384 Cluster slots, the shortest base-36 number that hashes to it (4 characters at most). */
function slotTags(): string[] {
  if (tags === undefined) {
    const found: string[] = new Array(16384);
    for (let n = 0, left = 16384; left > 0; n++) {
      const tag = n.toString(36);
      const slot = calculateSlot(tag);
      if (found[slot] === undefined) {
        found[slot] = tag;
        left--;
      }
    }
    tags = found;
  }
  return tags;
}

/**
 * A prefix's rules (rules/rules.ts, lua/rules.lua): the version counter `prefix:{#rules}:v`, the hash of the
 * rules `:set`, the log of changes `:log`, the expiries `:exp`, the log's floor `:floor` and the mark of
 * a limiter reading them `:seen`. One hash tag, so one Cluster slot: a write, its version bump and its
 * log entry are one script call. '#rules' is no caller key's tag (a digest tag is '#' and 27
 * characters), so no counter shares these keys.
 */
export function rulesKeys(prefix: string): string[] {
  return ['v', 'set', 'log', 'exp', 'floor', 'seen'].map((name) => `${prefix}:{#rules}:${name}`);
}

/** The count of a counter's recent denials (a ban's `after`), in the key's hash tag: `prefix:{tag}:ban`. */
export function banKey(prefix: string, tag: string): string {
  return `${prefix}:{${tag}}:ban`;
}

/**
 * One key's lease in a region (regions/, lua/region.lua), on the region's store: `prefix:{tag}:policyId:lease`.
 * On the home's store, the key's global bucket: `prefix:{tag}:policyId:home` (homeKey), apart from the lease
 * when the home is also a region's store.
 */
export function leaseKey(prefix: string, tag: string, policyId: string): string {
  return `${storeKey(prefix, tag, policyId)}:lease`;
}

/** A key's global bucket on the home's store (leaseKey). */
export function homeKey(prefix: string, tag: string, policyId: string): string {
  return `${storeKey(prefix, tag, policyId)}:home`;
}
