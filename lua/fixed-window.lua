-- fixed-window: at most `limit` units per window aligned to the server clock (floor(now / window)).
-- Contract: fixed_window(key, now, limit, window, burst, cost, apply, slack)
--   key    KEYS entry holding the string "index count" (%d, or %.17g for a fractional count); burst is unused
-- Reply: ok, remaining (integer), resetMs (to the window's end, 0 when unused),
--   retryAfterUs (to the window's end in whole µs, rounded up: 0 when ok, else >= 1)
local floor, ceil, max, format, call = math.floor, math.ceil, math.max, string.format, redis.call
local function fixed_window(key, now, limit, window, burst, cost, apply, slack)
  local idx = floor(now / window)
  local count = 0
  local same = false
  local raw = call('GET', key)
  if raw then
    local sp = string.find(raw, ' ', 1, true)
    local stored = tonumber(string.sub(raw, 1, sp - 1))
    -- A clock that steps back stays in the stored window rather than opening a fresh one.
    if stored >= idx then
      idx = stored
      count = tonumber(string.sub(raw, sp + 1))
      same = true
    end
  end
  -- The window's end in whole µs, and in whole ms from that, so that retry and reset round alike.
  local endsUs = max(1, ceil(((idx + 1) * window - now) * 1000))
  local ends = ceil(endsUs / 1000)
  local ok = count + cost <= limit
  if ok and apply then
    count = count + cost
    -- Whole numbers format with %d, far cheaper than %.17g; both read back exactly.
    local value = count == floor(count) and format('%d %d', idx, count) or format('%d %.17g', idx, count)
    if same then
      -- The key already expires at this window's end: rewriting the TTL would set the same instant.
      call('SET', key, value, 'KEEPTTL')
    else
      call('SET', key, value, 'PX', format('%d', ends + slack))
    end
  end
  local reset, retry = 0, 0
  if count > 0 then reset = ends end
  if not ok then retry = endsUs end
  return ok, max(0, floor(limit - count)), reset, retry
end
