-- fixed-window: at most `limit` units per window. By default windows are aligned to the server clock
-- (floor(now / window)); with start 'first-hit' (sent as burst 0: a burst is >= 1 otherwise) a window
-- opens at the key's first hit and a new one at the first hit after it ends, as express-rate-limit's
-- and @fastify/rate-limit's stores count.
-- code: fw
-- Contract: fixed_window(key, now, limit, window, burst, cost, apply)
--   key    KEYS entry holding index and count (aligned) or start and count (first-hit: the window's start, ms)
--   burst  0 for start 'first-hit', else unused
-- Reply: ok, remaining (integer), resetMs (to the window's end, 0 when unused),
--   retryAfterUs (to the window's end in whole µs, rounded up: 0 when ok, else >= 1)
-- The window counted in (its index, or its start when first-hit), its count, and the ms from now to its
-- end; `same`: the key holds that window (a clock that steps back stays in the stored window rather
-- than opening a fresh one).
local function fixed_window_state(key, now, window, burst)
  local stored, n = fields(get(key))
  if burst == 0 then
    if stored ~= nil and now < stored + window then return stored, n, true, stored + window - now end
    return now, 0, false, window
  end
  local idx = now / window
  idx = idx - idx % 1
  if stored ~= nil and stored >= idx then return stored, n, true, (stored + 1) * window - now end
  return idx, 0, false, (idx + 1) * window - now
end

local function fixed_window(key, now, limit, window, burst, cost, apply)
  local idx, count, same, left = fixed_window_state(key, now, window, burst)
  -- The window's end in whole µs, and in whole ms from that, so that retry and reset round alike.
  local endsUs = -left * 1000
  endsUs = endsUs % 1 - endsUs
  if endsUs < 1 then endsUs = 1 end
  local ends = -endsUs / 1000
  ends = ends % 1 - ends
  local ok = count + cost <= limit
  if ok and apply then
    count = count + cost
    -- Within the stored window the key already expires at its end.
    put(key, pack('>dd', idx, count), same, ends)
  end
  local reset, retry = 0, 0
  if count > 0 then reset = ends end
  if not ok then retry = endsUs end
  local remaining = limit - count
  remaining = remaining - remaining % 1
  if remaining < 0 then remaining = 0 end
  return ok, remaining, reset, retry
end

-- Charges `delta` to the current window without a check, or refunds it (delta < 0), never below 0.
local function fixed_window_adjust(key, now, limit, window, burst, delta)
  local idx, count, same, left = fixed_window_state(key, now, window, burst)
  local after = count + delta
  if after < 0 then after = 0 end
  if after == count then return end
  if after == 0 then
    drop(key)
    return
  end
  put(key, pack('>dd', idx, after), same, math.ceil(math.max(1, math.ceil(left * 1000)) / 1000))
end
