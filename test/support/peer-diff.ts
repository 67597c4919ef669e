// The drop-in tests' comparison (dropin.express, dropin.fastify): the same request sequence goes to a server
// with the real peer library and to one with sluice in its place, and every answer is compared: status,
// the rate-limit headers (names and values; reset seconds within 1 s), content type and body.

/** One request of a sequence: a path, a client (x-user), or 'wait' past both windows' ends. */
export type Step = { path?: string; user?: string; fail?: boolean };

/** What a server answered a step: its status, the compared headers (null when absent) and its body. */
interface Answer {
  status: number;
  headers: Record<string, string | null>;
  body: string;
}

async function answer(url: string, path: string, user: string | undefined, names: readonly string[]): Promise<Answer> {
  const res = await fetch(`${url}${path}`, { headers: user ? { 'x-user': user } : {} });
  const headers: Record<string, string | null> = {};
  for (const h of names) headers[h] = res.headers.get(h);
  return { status: res.status, headers, body: await res.text() };
}

/**
 * Whether header `name` agrees: exactly, or, for the `timed` ones (seconds that depend on when the request
 * came) and a draft-7/8 list's reset, within 1 s.
 */
function sameHeader(name: string, a: string | null, b: string | null, timed: ReadonlySet<string>): boolean {
  if (a === b) return true;
  if (a === null || b === null) return false;
  if (timed.has(name)) return Math.abs(Number(a) - Number(b)) <= 1;
  // draft-7 and draft-8 carry the reset inside a list: compare the rest exactly, the seconds within 1.
  const [ta, tb] = [a, b].map((v) => v.replace(/(reset=|t=)(\d+)/, '$1#'));
  const [sa, sb] = [a, b].map((v) => Number(/(?:reset=|t=)(\d+)/.exec(v)?.[1]));
  return ta === tb && Math.abs((sa as number) - (sb as number)) <= 1;
}

/**
 * Sends `steps` to the peer's server and to sluice's, each request to both at about the same instant, and
 * expects the same answers; `pathOf` maps a step to its path, `between` runs after each step. Returns
 * the count of comparisons made.
 */
export async function compareSteps(
  name: string,
  steps: readonly Step[],
  urls: { peer: string; ours: string },
  o: { headers: readonly string[]; timed: ReadonlySet<string>; pathOf: (step: Step) => string; between?: () => Promise<void> },
): Promise<number> {
  let comparisons = 0;
  for (const [i, step] of steps.entries()) {
    if (step.path === 'wait') {
      // After both answered the request before: past both windows' ends, whenever each first hit came.
      await new Promise((r) => setTimeout(r, 2_100));
      continue;
    }
    const path = o.pathOf(step);
    const [a, b] = await Promise.all([answer(urls.peer, path, step.user, o.headers), answer(urls.ours, path, step.user, o.headers)]);
    const where = `${name}, request ${i + 1}`;
    expect({ where, status: b.status }).toEqual({ where, status: a.status });
    comparisons++;
    for (const h of o.headers) {
      if (!sameHeader(h, a.headers[h] ?? null, b.headers[h] ?? null, o.timed)) {
        expect({ where, header: h, value: b.headers[h] }).toEqual({ where, header: h, value: a.headers[h] });
      }
      comparisons++;
    }
    expect({ where, body: b.body }).toEqual({ where, body: a.body });
    comparisons++;
    await o.between?.();
  }
  return comparisons;
}
