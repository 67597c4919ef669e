// The one place that loads an optional peer (prom-client, @opentelemetry/api). A .cts file is CommonJS in
// both builds, so `require` is there in the ESM build too: a peer loads only when its function is called, and
// the package root imports without either one installed.
export function loadPeer(name: string): unknown {
  return require(name);
}
