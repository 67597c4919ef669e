// What the examples print in an outage: one line per breaker change (a change is announced once for every
// limiter on the store, naming their prefixes), and the Redis client's own errors at most once per 5 s
// with a count of the ones left out, instead of one per reconnect attempt.

/** onEvent for every limiter: one line when the store goes down and one when it is back. */
export function logBreaker(event) {
  const on = (event.prefixes ?? [event.prefix]).join(', ');
  if (event.type === 'breaker-open') console.warn(`store down (${event.error?.message}): the fail modes answer for ${on}`);
  if (event.type === 'breaker-close') console.warn(`store back after ${Math.round(event.latencyMs)} ms for ${on}`);
}

/** Logs a Redis client's 'error' events, at most one line per `everyMs`. */
export function quietErrors(client, everyMs = 5000) {
  let last = 0;
  let left = 0;
  client.on('error', (error) => {
    const now = Date.now();
    if (now - last < everyMs) {
      left++;
      return;
    }
    console.error(
      `redis: ${error.message}${left > 0 ? ` (and ${left} more errors in the last ${Math.round((now - last) / 1000)} s)` : ''}`,
    );
    last = now;
    left = 0;
  });
}

/** How many units are left, as the Decision knows it: a fail-open decision counted nothing. */
export const left = (decision) => (decision.source === 'fail-open' ? 'count unknown (store down)' : `${decision.remaining} left`);
