// createLimiter's `regions`: every bad value is refused at construction, naming the option.
import { createLimiter } from '../limiter.js';
import type { Store } from '../store/contract.js';
import type { LeaseStore } from '../store/leases.js';
import { memoryStore } from '../store/memory-store.js';

/** A store as the options see one: it decides, and has leases (never called here). */
const withLeases = (): Store => ({ ...memoryStore(), local: false, leases: {} as LeaseStore });

describe('regions options', () => {
  const store = withLeases();
  const home = withLeases();
  const make =
    (regions: unknown, extra: object = {}) =>
    () =>
      createLimiter({ policy: '100/1m', store, regions, ...extra } as Parameters<typeof createLimiter>[0]);

  it.each([
    ['not an object', 'x', /^regions must be \{ home, region/],
    ['no home', { region: 'eu' }, /^regions\.home must be a Store with leases/],
    ['no region', { home }, /^regions\.region must be a region name/],
    ['a home without leases', { home: memoryStore(), region: 'eu' }, /^regions\.home must be a Store with leases.*this store has none/],
    ['a region name with the separator', { home, region: 'eu|west' }, /^regions\.region must be a name of 1 to 64 printable/],
    ['an empty region name', { home, region: '' }, /^regions\.region must be a name/],
    ['a lease that is no duration', { home, region: 'eu', lease: 'soon' }, /^regions\.lease must be a positive number of ms/],
    ['a zero lease', { home, region: 'eu', lease: 0 }, /^regions\.lease must be/],
    ['noLease of another kind', { home, region: 'eu', noLease: 'deny' }, /^regions\.noLease must be 'wait' or 'share'/],
    ['a count of 0', { home, region: 'eu', count: 0 }, /^regions\.count must be a positive integer/],
    ['a timeout that is no duration', { home, region: 'eu', timeout: -1 }, /^regions\.timeout must be a positive number/],
    ['a misspelt option', { home, region: 'eu', leese: '1s' }, /^regions\.leese must be absent.*did you mean lease\?/],
  ])('%s is refused, ERR_SLUICE_OPTION', (_, regions, message) => {
    expect(make(regions)).toThrow(expect.objectContaining({ code: 'ERR_SLUICE_OPTION', message: expect.stringMatching(message) }));
  });

  it.each([
    ['the default memory store', { store: undefined }, /^store must be a Store with leases when `regions` is given/],
    ['a store without leases', { store: memoryStore() }, /^store must be a Store with leases/],
    ['the home as the region’s store', { store: home }, /^regions\.home must be a store apart from `store`/],
    ['two policies', { policy: ['100/1m', '10/1s'] }, /^policy must be one token-bucket policy when `regions` is given/],
    ['a fixed window', { policy: { limit: 100, window: '1m', algorithm: 'fixed-window' } }, /^policy must be one token-bucket policy/],
    ['shards', { shards: 2 }, /^shards must be 1 when `regions` is given/],
  ])('what `regions` asks of the other options: %s is refused', (_, extra, message) => {
    expect(make({ home, region: 'eu' }, extra)).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_OPTION', message: expect.stringMatching(message) }),
    );
  });

  it('wait and adjust, which are not leased, are refused rather than decided on counters no region shares', async () => {
    const limiter = createLimiter({ policy: '100/1m', store, regions: { home, region: 'eu' } });
    await expect(limiter.wait('k')).rejects.toMatchObject({
      code: 'ERR_SLUICE_OPTION',
      message: expect.stringMatching(/^wait is not leased/),
    });
    await expect(limiter.adjust('k', 1)).rejects.toMatchObject({
      code: 'ERR_SLUICE_OPTION',
      message: expect.stringMatching(/^adjust is not leased/),
    });
    await limiter.close();
  });

  it('a region with every option given is made, and closes', async () => {
    const limiter = createLimiter({
      policy: '100/1m',
      store,
      regions: { home, region: 'eu-west', lease: '500ms', noLease: 'share', count: 3, timeout: '2s' },
    });
    await limiter.close();
  });
});
