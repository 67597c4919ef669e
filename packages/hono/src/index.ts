// @sluice/hono: rateLimit() and shed() for Hono 4, webSocketLimit() for its WebSocket events.
export type { Decision } from '@sluice/core';
export type { GetIP } from './client.js';
export type { HonoRateLimiterOptions, HonoRateLimiterSpellings } from './peer.js';
export { type HonoOwnOptions, type HonoRateLimitOptions, type RateLimitVariables, rateLimit, rateLimit as default } from './rate-limit.js';
export { type HonoShedOptions, shed, shedGuard } from './shed.js';
export { type WebSocketLimitOptions, webSocketLimit } from './web-socket.js';
