-- fixed-window: at most `limit` units per window aligned to the server clock (floor(now / window)).
-- code: fw
-- Contract: fixed_window(key, now, limit, window, burst, cost, apply)
--   key    KEYS entry holding "index count"; burst is unused
-- Reply: ok, remaining (integer), resetMs (to the window's end, 0 when unused),
--   retryAfterUs (to the window's end in whole µs, rounded up: 0 when ok, else >= 1)
-- The window counted in and its count; `same`: the key holds that window (a clock that steps back
-- stays in the stored window rather than opening a fresh one).
local function fixed_window_state(key, now, window)
  local idx = math.floor(now / window)
  local stored, n = fields(get(key))
  if stored ~= nil and stored >= idx then return stored, n, true end
  return idx, 0, false
end

local function fixed_window(key, now, limit, window, burst, cost, apply)
  local idx, count, same = fixed_window_state(key, now, window)
  -- The window's end in whole µs, and in whole ms from that, so that retry and reset round alike.
  local endsUs = math.max(1, math.ceil(((idx + 1) * window - now) * 1000))
  local ends = math.ceil(endsUs / 1000)
  local ok = count + cost <= limit
  if ok and apply then
    count = count + cost
    -- Within the stored window the key already expires at its end.
    put(key, format('%d ', idx) .. num(count), same, ends)
  end
  local reset, retry = 0, 0
  if count > 0 then reset = ends end
  if not ok then retry = endsUs end
  return ok, math.max(0, math.floor(limit - count)), reset, retry
end

-- Charges `delta` to the current window without a check, or refunds it (delta < 0), never below 0.
local function fixed_window_adjust(key, now, limit, window, burst, delta)
  local idx, count, same = fixed_window_state(key, now, window)
  local after = count + delta
  if after < 0 then after = 0 end
  if after == count then return end
  if after == 0 then
    drop(key)
    return
  end
  put(key, format('%d ', idx) .. num(after), same, math.ceil(math.max(1, math.ceil(((idx + 1) * window - now) * 1000)) / 1000))
end
