// The rules part of the Redis store (store/contract.ts RuleStore): lua/rules.lua, run the one way the store runs
// scripts (scripts.ts) on every client it takes (script-client.ts: ioredis, node-redis, Cluster, Sentinel). The keys of a prefix's rules share a hash tag (store/keys.ts
// rulesKeys), so on a Cluster each call goes to one slot. None of this is on a decision's path: a process
// reads the changes every `refresh` (none, mostly), and writes when an operator (or a ban) changes a rule.
import type { RuleStore } from '../contract.js';
import { rulesKeys } from '../keys.js';
import type { ScriptClient } from './script-client.js';
import { RULES, runWhenUp } from './scripts.js';

/** A reply element as text: ioredis' Buffer variants answer Buffers, node-redis strings, integers as numbers. */
const text = (x: unknown): string => (typeof x === 'string' ? x : Buffer.isBuffer(x) ? x.toString('utf8') : String(x));

/** The Redis store's rules: one script call per read or write. */
export function redisRules(client: ScriptClient): RuleStore {
  // A refresh retries on its next tick, and a write must tell its operator it did not land; rules/rules.ts
  // bounds a wait for a connection being made.
  const run = (keys: string[], args: string[]): Promise<unknown> => runWhenUp(client, RULES, keys, args);
  return {
    async changes(prefix, since, markMs) {
      const reply = (await run(rulesKeys(prefix), ['d', String(since), String(Math.ceil(markMs))])) as unknown[];
      const entries: [string, string | null][] = [];
      for (let i = 3; i < reply.length; i += 2) {
        const value = text(reply[i + 1]);
        entries.push([text(reply[i]), value === '' ? null : value]);
      }
      return { version: Number(reply[0]), now: Number(reply[1]), full: Number(reply[2]) === 1, entries };
    },
    async write(prefix, id, value, ttlMs) {
      const [existed, version, expiresAt] = (await run(rulesKeys(prefix), ['w', id, value ?? '', String(Math.ceil(ttlMs))])) as unknown[];
      return { existed: Number(existed) === 1, expiresAt: Number(expiresAt), version: Number(version) };
    },
    async seen(prefix) {
      return Number(await run(rulesKeys(prefix), ['s'])) > 0;
    },
    async countDenials(key, n, withinMs) {
      return Number(await run([key], ['c', String(n), String(Math.ceil(withinMs))]));
    },
  };
}
