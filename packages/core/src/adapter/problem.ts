// The answer to a limited request: by `statusCode` and `message`, RFC 9457 problem+json by default.
import type { Decision } from '../decision.js';
import { retryAfterSeconds } from '../headers.js';
import type { Awaitable } from './user-call.js';

/** A 429 body: a string is sent as text/plain, an object as JSON. */
export type LimitedBody = string | Record<string, unknown>;

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

/** The default body of a request a deny rule or a ban refused (a decision of source 'rule'). */
function denied(decision: Decision, status: number): Record<string, unknown> {
  const lapses = decision.retryAfterMs > 0 ? `; retry in ${retryAfterSeconds(decision)} s` : '';
  return {
    type: 'about:blank',
    title: 'Forbidden',
    status,
    detail: `${decision.rule?.ban ? 'This client is banned for repeated excess' : 'This client is denied by a rule'}${lapses}.`,
  };
}

/**
 * The answer while the store cannot answer and the limiter refuses every request (`fallback: false`, a decision
 * of source 'fail-closed'): 503 problem+json, whatever `statusCode` and `message` say of limited requests (the
 * client did nothing wrong).
 */
export function unavailableResponse(decision: Decision): LimitedResponse {
  const body = {
    type: 'about:blank',
    title: 'Service Unavailable',
    status: 503,
    detail: `The rate limiter cannot reach its store; retry in ${retryAfterSeconds(decision)} s.`,
  };
  return { status: 503, contentType: 'application/problem+json; charset=utf-8', body: JSON.stringify(body) };
}

/**
 * The responder for decisions a deny rule or a ban made (source 'rule'): problem+json with `status`
 * (deniedStatusCode), or what a `message` function returns for the decision (a constant message is
 * a limited response's, not a denial's).
 */
export function deniedResponder<Req>(
  message: LimitedBody | ((decision: Decision, req: Req) => Awaitable<LimitedBody>) | undefined,
  status: number,
): (decision: Decision, req: Req) => Promise<LimitedResponse> {
  const own = typeof message === 'function' ? limitedResponder<Req>(message, status) : undefined;
  return async (decision, req) =>
    own !== undefined
      ? own(decision, req)
      : { status, contentType: 'application/problem+json; charset=utf-8', body: JSON.stringify(denied(decision, status)) };
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
