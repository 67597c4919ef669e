// SluiceGuard: the kit decides for the context (@sluice/core/adapter); the guard sets the headers and
// request.rateLimit, and refuses by an exception, so Nest's error path answers.
import type { CanActivate, ExecutionContext } from '@nestjs/common';
import { Inject, Injectable } from '@nestjs/common';
import { targetOf } from './context.js';
import { RateLimitedException, wsRefusal } from './exception.js';
import { SluiceLimits } from './limits.js';

/** The limit that already decided an HTTP request. */
const decided = new WeakMap<object, unknown>();

/**
 * The guard: global by default (SluiceModule.forRoot), or `@UseGuards(SluiceGuard)` with `global: false`, and on
 * WebSocket gateways (Nest applies no global guard to them). For each HTTP request, resolver or message it charges
 * the handler's limit; over it, it throws RateLimitedException (a message: a WsException, the client's
 * `exception` event `{ status: 429, retryAfterMs }`). A `key` that throws reaches Nest's error path as a SluiceError.
 * @example @UseGuards(SluiceGuard) @WebSocketGateway() class Events {}
 */
export class SluiceGuard implements CanActivate {
  constructor(private readonly limits: SluiceLimits) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    const found = this.limits.of(ctx.getClass(), ctx.getHandler());
    if (found === null) return true;
    const { limit, routed } = found;
    const target = targetOf(ctx);
    // The guard twice on one handler (global, and @UseGuards(SluiceGuard) too) decides once.
    const { req } = target;
    if (req !== undefined && ctx.getType() === 'http') {
      if (decided.get(req) === limit) return true;
      decided.set(req, limit);
    }
    const verdict = await limit.check(ctx, routed ? target.scope() : '*', target.ip, undefined, target.raw);
    if (verdict === undefined) return true;
    const { decision } = verdict;
    if (target.req !== undefined) target.req.rateLimit = decision;
    const { header } = target;
    if (header !== undefined) for (const [name, value] of Object.entries(verdict.headers)) header(name, value);
    if (!verdict.limited) {
      if (target.raw !== undefined) limit.track(verdict, ctx, undefined, target.raw);
      else void decision.release?.();
      return true;
    }
    const response = await limit.limitedResponse(decision, ctx);
    if (ctx.getType() === 'ws') throw await wsRefusal(target.client, { status: response.status, retryAfterMs: decision.retryAfterMs });
    // No Content-Type of ours: Nest's Express adapter (11.2) replaces one that is not application/json on an
    // error's body, with a warning logged for each response. The body is the problem object, sent as JSON.
    throw new RateLimitedException(decision, response);
  }
}

Injectable()(SluiceGuard);
Inject(SluiceLimits)(SluiceGuard, undefined, 0);
