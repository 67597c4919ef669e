// The leases part of the Redis store (store/leases.ts): lua/region.lua on a region's Redis, lua/home.lua on the
// home's, each run the one way the store runs scripts off the decision path (scripts.ts runWhenUp). A call about
// many keys is one script call on a standalone server, one per slot on a Cluster.
import calculateSlot from 'cluster-key-slot';
import type { HomeGrant, LeaseStore } from '../leases.js';
import type { ScriptClient } from './script-client.js';
import { HOME, REGION, runWhenUp } from './scripts.js';

/** A reply element as text: ioredis' Buffer variants answer Buffers, node-redis strings, integers as numbers. */
const text = (x: unknown): string => (typeof x === 'string' ? x : Buffer.isBuffer(x) ? x.toString('utf8') : String(x));
const STATUS = ['lease', 'low', 'none', 'share', 'lapsed'] as const;
const GRANT = ['stale', 'granted', 'repeat'] as const;

/** The Redis store's leases. */
export function redisLeases(client: ScriptClient): LeaseStore {
  /** One script call per slot (one in all on a standalone server); the replies in the order of `items`. */
  async function batch<T, R>(
    items: readonly T[],
    keyOf: (item: T) => string,
    call: (keys: string[], group: T[]) => Promise<unknown[]>,
    read: (reply: unknown) => R,
  ): Promise<R[]> {
    const groups = new Map<number, number[]>();
    items.forEach((item, i) => {
      const slot = client.cluster ? calculateSlot(keyOf(item)) : 0;
      groups.set(slot, [...(groups.get(slot) ?? []), i]);
    });
    const out: R[] = new Array(items.length);
    await Promise.all(
      [...groups.values()].map(async (at) => {
        const group = at.map((i) => items[i] as T);
        const replies = await call(group.map(keyOf), group);
        at.forEach((i, j) => {
          out[i] = read(replies[j]);
        });
      }),
    );
    return out;
  }
  const times = (o: { leaseMs: number; timeoutMs: number; count?: number; known?: number }) => [
    String(o.leaseMs),
    String(o.timeoutMs),
    String(o.count ?? 0),
    String(o.known ?? 0),
  ];
  const bucketArgs = (b: { burst: number; ratePerMs: number }) => [String(b.burst), String(b.ratePerMs)];

  return {
    async spend(key, cost, bucket, o) {
      const args = ['s', String(cost), ...bucketArgs(bucket), o.share ? '1' : '0', o.epoch, String(Math.ceil(o.ttlMs))];
      args.push(o.peek ? '1' : '0', String(o.leaseMs), String(o.regions));
      const [ok, remaining, retryUs, status, resetMs] = (await runWhenUp(client, REGION, [key], args)) as number[];
      return {
        allowed: Number(ok) === 1,
        remaining: Number(remaining),
        retryAfterMs: Number(retryUs) / 1000,
        resetMs: Number(resetMs),
        status: STATUS[Number(status)] ?? 'none',
      };
    },
    prepare(keys, o) {
      const args = ['p', String(o.leaseMs), String(o.timeoutMs), String(Math.ceil(o.ttlMs)), o.epoch];
      return batch(
        keys,
        (k) => k,
        (ks) => runWhenUp(client, REGION, ks, args) as Promise<unknown[]>,
        (r) => {
          const [asked, epoch, spent, demand, sentAt] = r as unknown[];
          if (Number(asked) !== 1) return undefined;
          return { epoch: text(epoch), spent: Number(text(spent)), demand: Number(text(demand)), sentAt: Number(sentAt) };
        },
      );
    },
    async deposit(key, grant, o) {
      const args = ['g', grant.epoch, String(grant.total), String(grant.sentAt), String(o.leaseMs), String(grant.regions)];
      args.push(String(Math.ceil(o.ttlMs)), String(o.timeoutMs), String(grant.spent));
      return Number(await runWhenUp(client, REGION, [key], args)) === 1;
    },
    giveBack(keys, o) {
      const args = ['r', o.epoch, String(Math.ceil(o.ttlMs)), String(o.leaseMs)];
      return batch(
        keys,
        (k) => k,
        (ks) => runWhenUp(client, REGION, ks, args) as Promise<unknown[]>,
        (r) => {
          const [given, epoch, spent] = r as unknown[];
          return Number(given) === 1 ? { epoch: text(epoch), spent: Number(text(spent)) } : undefined;
        },
      );
    },
    async lease(key) {
      const raw = (await runWhenUp(client, REGION, [key], ['i'])) as unknown[];
      const out: Record<string, string> = { now: text(raw[0]) };
      for (let i = 1; i < raw.length; i += 2) out[text(raw[i])] = text(raw[i + 1]);
      return out;
    },
    async grant(region, asks, o) {
      // No asks: a probe of the home (a region that lost it), one call all the same.
      if (asks.length === 0) {
        await runWhenUp(client, HOME, [], ['g', region, ...times(o)]);
        return [];
      }
      return batch(
        asks,
        (a) => a.key,
        (keys, group) => {
          const args = ['g', region, ...times(o)];
          for (const a of group) args.push(...bucketArgs(a.bucket), a.epoch, String(a.spent), String(a.demand), String(a.sentAt), a.id);
          return runWhenUp(client, HOME, keys, args) as Promise<unknown[]>;
        },
        (r): HomeGrant => {
          const [status, total, granted, regions, tokens, spent] = r as unknown[];
          return {
            status: GRANT[Number(status)] ?? 'stale',
            total: Number(text(total)),
            granted: Number(granted),
            regions: Number(regions),
            tokens: Number(text(tokens)),
            spent: Number(text(spent)),
          };
        },
      );
    },
    takeBack(region, leases, o) {
      return batch(
        leases,
        (l) => l.key,
        (keys, group) => {
          const args = ['r', region, ...times(o)];
          for (const l of group) args.push(...bucketArgs(l.bucket), l.epoch, String(l.spent));
          return runWhenUp(client, HOME, keys, args) as Promise<unknown[]>;
        },
        (r) => Number(text(r)),
      );
    },
    async view(key, bucket, o) {
      const [r] = (await runWhenUp(client, HOME, [key], ['i', '', ...times(o), ...bucketArgs(bucket)])) as unknown[][];
      const v = r as unknown[];
      const leases: { region: string; granted: number; spent: number; msLeft: number; demand: number }[] = [];
      for (let i = 3; i + 4 < v.length; i += 5) {
        const [granted, spent, msLeft, demand] = v.slice(i + 1, i + 5).map((x) => Number(text(x)));
        leases.push({
          region: text(v[i]),
          granted: granted as number,
          spent: spent as number,
          msLeft: msLeft as number,
          demand: demand as number,
        });
      }
      return { tokens: Number(text(v[0])), regions: Number(v[1]), heldBack: Number(text(v[2])), leases };
    },
  };
}
