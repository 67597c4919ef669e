-- sliding-window: the two-counter approximation. used = previous * overlap + current, where overlap
-- is the share of the previous window still inside (now - window, now].
-- Contract: sliding_window(key, now, limit, window, burst, cost, apply, slack)
--   key    KEYS entry holding the string "index current previous" (%d, or %.17g for fractional counts);
--          burst is unused
-- Reply: ok, remaining (integer), resetMs (until both counters weigh nothing),
--   retryAfterUs (whole µs, rounded up: 0 when ok, else >= 1)
local floor, ceil, max, format, call = math.floor, math.ceil, math.max, string.format, redis.call
local function sliding_window(key, now, limit, window, burst, cost, apply, slack)
  local idx = floor(now / window)
  local cur, prev = 0, 0
  local same = false
  local raw = call('GET', key)
  if raw then
    local a = string.find(raw, ' ', 1, true)
    local b = string.find(raw, ' ', a + 1, true)
    local stored = tonumber(string.sub(raw, 1, a - 1))
    if stored >= idx then
      idx = stored
      cur = tonumber(string.sub(raw, a + 1, b - 1))
      prev = tonumber(string.sub(raw, b + 1))
      same = true
    elseif stored == idx - 1 then
      prev = tonumber(string.sub(raw, a + 1, b - 1))
    end
  end
  local start = idx * window
  local weight = (window - max(0, now - start)) / window
  local used = prev * weight + cur
  local ok = used + cost <= limit
  if ok and apply then
    cur = cur + cost
    used = used + cost
    -- Whole numbers format with %d, far cheaper than %.17g; both read back exactly.
    local value
    if cur == floor(cur) and prev == floor(prev) then
      value = format('%d %d %d', idx, cur, prev)
    else
      value = format('%d %.17g %.17g', idx, cur, prev)
    end
    if same then
      -- The key already expires when this window stops weighing: the same instant as below.
      call('SET', key, value, 'KEEPTTL')
    else
      call('SET', key, value, 'PX', format('%d', ceil(start + 2 * window - now) + slack))
    end
  end
  local reset, retry = 0, 0
  if cur > 0 then
    reset = ceil(start + 2 * window - now)
  elseif prev > 0 then
    reset = ceil(start + window - now)
  end
  if not ok then
    local at
    if cost > limit then
      at = start + 2 * window
    elseif cur + cost <= limit then
      -- still in this window, once the previous window's weight has fallen far enough
      at = start + window * (1 - (limit - cost - cur) / prev)
    else
      -- in the next window, where this window's count becomes the weighted one
      at = start + window + window * (1 - (limit - cost) / cur)
    end
    retry = max(1, ceil((at - now) * 1000))
  end
  return ok, max(0, floor(limit - used)), reset, retry
end
