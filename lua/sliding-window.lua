-- sliding-window: the two-counter approximation. used = previous * overlap + current, where overlap
-- is the share of the previous window still inside (now - window, now].
-- code: sw
-- Contract: sliding_window(key, now, limit, window, burst, cost, apply)
--   key    KEYS entry holding the window index, its count and the previous window's; burst is unused
-- Reply: ok, remaining (integer), resetMs (until both counters weigh nothing),
--   retryAfterUs (whole µs, rounded up: 0 when ok, else >= 1)
-- The window counted in, its count and the previous window's; `same`: the key holds that window.
local function sliding_window_state(key, now, window)
  local idx = now / window
  idx = idx - idx % 1
  local stored, c, p = fields(get(key))
  if stored ~= nil and stored >= idx then return stored, c, p, true end
  if stored == idx - 1 then return idx, 0, c, false end
  return idx, 0, 0, false
end

local function sliding_window(key, now, limit, window, burst, cost, apply)
  local idx, cur, prev, same = sliding_window_state(key, now, window)
  local start = idx * window
  local into = now - start
  if into < 0 then into = 0 end
  local used = prev * ((window - into) / window) + cur
  local ok = used + cost <= limit
  if ok and apply then
    cur = cur + cost
    used = used + cost
    -- Within the stored window the key already expires when it stops weighing: the same instant.
    put(key, pack('>ddd', idx, cur, prev), same, start + 2 * window - now)
  end
  local reset, retry = 0, 0
  if cur > 0 then
    reset = now - start - 2 * window
    reset = reset % 1 - reset
  elseif prev > 0 then
    reset = now - start - window
    reset = reset % 1 - reset
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
    retry = math.max(1, math.ceil((at - now) * 1000))
  end
  local remaining = limit - used
  remaining = remaining - remaining % 1
  if remaining < 0 then remaining = 0 end
  return ok, remaining, reset, retry
end

-- Charges `delta` to the current window without a check, or refunds it from the current window
-- (delta < 0), never below 0: what the previous window holds is already weighed.
local function sliding_window_adjust(key, now, limit, window, burst, delta)
  local idx, cur, prev, same = sliding_window_state(key, now, window)
  local after = cur + delta
  if after < 0 then after = 0 end
  if after == cur then return end
  if after == 0 and prev == 0 then
    drop(key)
    return
  end
  put(key, pack('>ddd', idx, after, prev), same, idx * window + 2 * window - now)
end

-- A reservation (decide.lua's op 'w') whose turn is `at` (ms; the step's retry told when): its cost is
-- counted in the window its turn falls in. When that is the next window, the key moves on to it now
-- (its previous count is this window's), so the next reservation's wait counts it at the right weight.
local function sliding_window_reserve(key, now, limit, window, burst, cost, at)
  local idx, cur, prev, same = sliding_window_state(key, now, window)
  local turn = math.floor(at / window)
  if turn > idx then
    prev = turn == idx + 1 and cur or 0
    idx, cur, same = turn, 0, false
  end
  put(key, pack('>ddd', idx, cur + cost, prev), same, idx * window + 2 * window - now)
end
