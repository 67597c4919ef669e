-- token-bucket: capacity `burst`, refilled by `limit` tokens per `window` ms, continuously.
-- Contract: token_bucket(key, now, limit, window, burst, cost, apply, slack)
--   key    KEYS entry holding the string "tokens ts" (both %.17g; a missing key is a full bucket)
--   now    ms on the server clock; window, slack in ms; apply: charge `cost` if it passes
-- Reply: ok, remaining (integer), resetMs (to full), retryAfterMs (0 when ok)
local function token_bucket(key, now, limit, window, burst, cost, apply, slack)
  local tokens, ts = burst, now
  local raw = redis.call('GET', key)
  if raw then
    local sp = string.find(raw, ' ', 1, true)
    tokens = tonumber(string.sub(raw, 1, sp - 1))
    ts = tonumber(string.sub(raw, sp + 1))
  end
  local rate = limit / window
  -- A clock that steps back (fail-over to another server) must not refill twice.
  local t = math.max(now, ts)
  tokens = math.min(burst, tokens + (t - ts) * rate)
  local ok = tokens >= cost
  if ok and apply then
    tokens = tokens - cost
    -- The key expires exactly when the bucket is full again, which equals a missing key.
    redis.call('SET', key, string.format('%.17g %.17g', tokens, t), 'PX', math.ceil((burst - tokens) / rate) + slack)
  end
  local retry = 0
  if not ok then retry = math.max(1, math.ceil((cost - tokens) / rate)) end
  return ok, math.max(0, math.floor(tokens)), math.ceil((burst - tokens) / rate), retry
end
