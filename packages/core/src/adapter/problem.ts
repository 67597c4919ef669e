// The answer to a limited request: by `statusCode` and `message`, RFC 9457 problem+json by default.
import type { Decision } from '../decision.js';
import { retryAfterSeconds } from '../headers.js';
import type { Awaitable, LimitedBody } from './options.js';

/** A limited response, ready to send. */
export interface LimitedResponse {
  status: number;
  contentType: string;
  body: string;
}

/** The default body of a limited response: RFC 9457 problem details naming the violated policies. */
function problem(decision: Decision, status: number): Record<string, unknown> {
  const violated = decision.policies.filter((p) => p.retryAfterMs > 0).map((p) => p.name);
  const names = violated.length > 0 ? violated : [decision.policy];
  return {
    type: 'about:blank',
    title: 'Too Many Requests',
    status,
    detail: `Rate limit ${names.map((n) => `"${n}"`).join(', ')} exceeded; retry in ${retryAfterSeconds(decision)} s.`,
    'violated-policies': names,
  };
}

/**
 * The responder for limited decisions: `message` (a string as text/plain, an object as JSON, or a
 * function of the decision that returns either) with `status`; problem+json when there is no message.
 */
export function limitedResponder<Req>(
  message: LimitedBody | ((decision: Decision, req: Req) => Awaitable<LimitedBody>) | undefined,
  status: number,
): (decision: Decision, req: Req) => Promise<LimitedResponse> {
  return async (decision, req) => {
    const body = typeof message === 'function' ? await message(decision, req) : (message ?? problem(decision, status));
    if (typeof body === 'string') return { status, contentType: 'text/plain; charset=utf-8', body };
    const contentType = message === undefined ? 'application/problem+json; charset=utf-8' : 'application/json; charset=utf-8';
    return { status, contentType, body: JSON.stringify(body) };
  };
}
