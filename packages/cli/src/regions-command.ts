// `sluice inspect KEY --home URL`: a limit across regions, as the home and one region's store hold it.
import { type PolicyInput, redisStore } from '@sluice/core';
import { inspectLeases, type LeasesInspected } from '@sluice/core/adapter';
import type { Cluster, Redis } from 'ioredis';

/** The key's global bucket at the home and each region's lease, and the lease the region's store (--redis) holds. */
export async function inspectRegions(
  command: { client: string; scope: string | undefined; prefix: string; policies: PolicyInput[] },
  region: Redis | Cluster,
  homeUrl: string,
  connect: (url: string) => Redis | Cluster,
): Promise<LeasesInspected & { key: string }> {
  const home = connect(homeUrl);
  try {
    await home.connect();
    const found = await inspectLeases({
      home: redisStore({ client: home }),
      store: redisStore({ client: region }),
      prefix: command.prefix,
      key: command.client,
      scope: command.scope,
      policy: command.policies,
    });
    return { key: command.client, ...found };
  } finally {
    home.disconnect();
  }
}
