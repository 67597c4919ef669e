// Rate-limit headers when two sluice middlewares answer one request (an app-level and a route-level one).

/**
 * The headers to set when an earlier sluice middleware already set its own on this response (an app-level
 * and a route-level one, stacked): the RateLimit and RateLimit-Policy lists carry both; the rest is replaced.
 * @example res.set(stackHeaders(verdict.headers, (name) => res.getHeader(name)))
 */
export function stackHeaders(headers: Record<string, string>, existing: (name: string) => unknown): Record<string, string> {
  const out = { ...headers };
  for (const name of ['RateLimit-Policy', 'RateLimit']) {
    const before = existing(name);
    if (out[name] !== undefined && typeof before === 'string' && before !== '') out[name] = `${before}, ${out[name]}`;
  }
  return out;
}
