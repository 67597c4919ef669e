// Module hooks for the benchmark servers: load the sluice packages' dist from the snapshot bench/http.mjs
// took when it started (SLUICE_BENCH_SNAPSHOT, holding <package>/dist), so that every server of a run
// measures the same build even when a `pnpm build` elsewhere rewrites packages/*/dist meanwhile.
// A snapshot file resolves its dependencies from its original package.
// Used as: node --import ./snapshot-hooks.mjs server.mjs ... (registers itself).
import { register } from 'node:module';
import { isMainThread } from 'node:worker_threads';

const PACKAGES = new URL('../../packages/', import.meta.url).href;
const SNAPSHOT = process.env.SLUICE_BENCH_SNAPSHOT && new URL(`${process.env.SLUICE_BENCH_SNAPSHOT}/`, 'file:///').href;

// The snapshot holds <name>/package.json and <name>/dist/ of every packages/<name>.
export async function resolve(specifier, context, nextResolve) {
  // A package's subpath too (@sluice/core/adapter): the adapters' kit must be the snapshot's, as the adapters are.
  const sluice = /^@sluice\/([a-z]+)(?:\/([a-z]+))?$/.exec(specifier);
  if (sluice) return { url: new URL(`${sluice[1]}/dist/esm/${sluice[2] ?? 'index'}.js`, SNAPSHOT).href, shortCircuit: true };
  const parent = context.parentURL;
  const relative = specifier.startsWith('.') || specifier.startsWith('/');
  if (relative || !parent?.startsWith(SNAPSHOT)) return nextResolve(specifier, context);
  // A dependency of a snapshot file: looked up from the original package, whose node_modules it uses.
  const name = parent.slice(SNAPSHOT.length).split('/')[0];
  return nextResolve(specifier, { ...context, parentURL: `${PACKAGES}${name}/package.json` });
}

if (isMainThread && SNAPSHOT) register(import.meta.url);
