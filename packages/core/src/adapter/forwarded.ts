// The X-Forwarded-For warning: a request that carries the header while the framework does not trust
// proxies is keyed on the proxy's address, so every client behind the proxy shares one counter. Reported
// once per middleware, as an event and a console warning naming the fix, never silently. The adapter knows
// its framework: it tells whether a request is such a one, and the fix in its words.

import { reportEvent } from '../events.js';
import type { Limiter } from '../limiter.js';

/** What an adapter tells the kit about proxies. */
export interface ForwardedCheck<Req> {
  /** True when `req` carries X-Forwarded-For and the framework does not trust proxies. */
  untrusted(req: Req): boolean;
  /** The fix in the framework's words, e.g. "app.set('trust proxy', 1)". */
  fix: string;
  /** The docs page that explains it. */
  docs: string;
}

/**
 * A function to call with each request keyed on the client IP: the first one with an untrusted
 * X-Forwarded-For reports a 'forwarded-untrusted' event and a console warning; after that it does nothing.
 */
export function forwardedWarning<Req>(limiter: Limiter, check: ForwardedCheck<Req> | undefined): ((req: Req) => void) | undefined {
  if (check === undefined) return undefined;
  let warned = false;
  return (req) => {
    if (warned || !check.untrusted(req)) return;
    warned = true;
    const message =
      'sluice: a request carries X-Forwarded-For but the framework does not trust proxies, so the rate limit keys every client ' +
      `behind the proxy on the proxy's address. If a proxy is in front of this app: ${check.fix}; else give key(req). See ${check.docs}`;
    reportEvent(limiter, { type: 'forwarded-untrusted', error: new Error(message) });
    console.warn(message);
  };
}
