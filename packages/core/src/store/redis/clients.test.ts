import { EventEmitter } from 'node:events';
import { describe as describeValue } from '../../errors.js';
import { looksLikeClient, scriptClient } from './clients.js';

const OWN = 'own-sha';
const isOwn = (first: unknown) => first === OWN;

/** A queue with the part of ioredis' internal Deque that the store reads. */
function queue(items: Array<{ command: { args: unknown[]; reject: (e: Error) => void } }>) {
  return {
    items,
    get length() {
      return items.length;
    },
    peekAt: (i: number) => items[i],
    remove: (i: number, n: number) => void items.splice(i, n),
  };
}

function ioredisShaped(status: string) {
  const client = Object.assign(new EventEmitter(), {
    status,
    connects: 0,
    evalsha: async () => [],
    eval: async () => [],
    del: async () => 0,
    connect: async () => {
      client.connects++;
    },
    prevCommandQueue: null as ReturnType<typeof queue> | null,
    offlineQueue: queue([]),
  });
  return client;
}

describe('scriptClient (unit, on client-shaped objects)', () => {
  it('an ioredis client that never connected (lazyConnect) is asked to connect, and the call is refused', () => {
    const client = ioredisShaped('wait');
    const wrapped = scriptClient(client, isOwn);
    expect(wrapped.down()).toBe('Redis connection is wait');
    expect(client.connects).toBe(1);
    client.status = 'ready';
    expect(wrapped.down()).toBeUndefined();
  });

  it("on close, the store's own calls leave ioredis' resend and offline queues, rejected; others stay", async () => {
    const client = ioredisShaped('ready');
    scriptClient(client, isOwn);
    const rejected: string[] = [];
    const item = (first: string) => ({ command: { args: [first, 1, 'k'], reject: () => rejected.push(first) } });
    client.prevCommandQueue = queue([item(OWN), item('user-get'), item(OWN)]);
    client.offlineQueue = queue([item('user-set'), item(OWN)]);
    client.emit('close');
    expect(rejected).toEqual([OWN, OWN, OWN]);
    expect(client.prevCommandQueue.items.map((x) => x.command.args[0])).toEqual(['user-get']);
    expect(client.offlineQueue.items.map((x) => x.command.args[0])).toEqual(['user-set']);
  });

  it('a node-redis client refuses calls until it is open and ready (its offline queue would replay them)', () => {
    const client = { isOpen: false, isReady: false, evalSha: async () => [], sendCommand: async () => [] };
    const wrapped = scriptClient(client, isOwn);
    expect(wrapped.cluster).toBe(false);
    expect(wrapped.down()).toMatch(/not open/);
    client.isOpen = true;
    expect(wrapped.down()).toMatch(/reconnecting/);
    client.isReady = true;
    expect(wrapped.down()).toBeUndefined();
  });

  it('a node-redis Cluster routes by the first key and refuses a slot whose master connection is down', async () => {
    const sent: unknown[][] = [];
    const node = { isReady: false };
    const client = {
      isOpen: true,
      slots: [{ master: { client: node } }],
      evalSha: async () => [],
      sendCommand: async (...args: unknown[]) => {
        sent.push(args);
        return [];
      },
    };
    const wrapped = scriptClient(client, isOwn);
    expect(wrapped.cluster).toBe(true);
    expect(wrapped.down(0)).toMatch(/slot 0/);
    node.isReady = true;
    expect(wrapped.down(0)).toBeUndefined();
    await wrapped.evalsha('sha', ['{a}x', '{a}y'], ['1']);
    expect(sent).toEqual([['{a}x', false, ['EVALSHA', 'sha', '2', '{a}x', '{a}y', '1']]]);
  });

  it('many stores on one client add one close listener, removed when the last one closes', () => {
    const client = ioredisShaped('ready');
    const before = client.listenerCount('close');
    const wrapped = Array.from({ length: 20 }, () => scriptClient(client, isOwn));
    expect(client.listenerCount('close')).toBe(before + 1);
    for (const w of wrapped) {
      w.detach();
      w.detach();
    }
    expect(client.listenerCount('close')).toBe(before);
  });

  it('tells clients from other values by shape, and describes a value by type or constructor only', () => {
    expect(looksLikeClient(ioredisShaped('ready'))).toBe(true);
    expect(looksLikeClient({ status: 'ready' })).toBe(false);
    expect(describeValue(new (class Secretive {})())).toBe('an instance of Secretive');
    expect(describeValue({ password: 'x' })).toBe('an object');
    expect(describeValue('redis://:x@h')).toBe('a string of 12 characters');
  });
});
