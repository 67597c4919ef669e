// The version of @sluice/cli, read from its package.json when asked. A .cts file is CommonJS in both builds,
// so `__dirname` is there in the ESM build too; the package.json is found by walking up from it, since the
// source (src/) and the builds (dist/esm/, dist/cjs/, each with a package.json of its own that only names
// the module type) sit at different depths.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** The `version` of the nearest package.json named @sluice/cli above this file. */
export function cliVersion(): string {
  for (let dir = __dirname; ; ) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: unknown; version?: unknown };
      if (pkg.name === '@sluice/cli' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      // none here, or not JSON: go on up
    }
    const up = dirname(dir);
    if (up === dir) throw new Error('the package.json of @sluice/cli was not found');
    dir = up;
  }
}
