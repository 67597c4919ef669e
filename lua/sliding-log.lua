-- sliding-log: exact. A sorted set holds one member per admitted unit, scored by its time;
-- the live units are those scored in (now - window, now].
-- code: sl
-- Contract: sliding_log(key, now, limit, window, burst, cost, apply)
--   key    KEYS entry of a sorted set; burst is unused; cost is a whole number
-- Reply: ok, remaining (integer), resetMs (until the newest unit leaves),
--   retryAfterUs (whole µs, rounded up: 0 when ok, else >= 1)
-- The clock the log counts on: now, or its newest score when a clock stepped back. Scores never go
-- back, so names made from (score, live count) below stay unique. Also that newest score (or nil).
local function sliding_log_now(key, now)
  local newest = call('ZRANGE', key, '-1', '-1', 'WITHSCORES')[2]
  newest = newest and tonumber(newest)
  if newest and newest > now then now = newest end
  return now, newest
end

-- Adds `units` members at `now` past the `count` live ones, drops those out of the window, and
-- renews the key's TTL. Every unit is its own member: "now:n" with n past the live count, which at
-- one `now` only grows. (A random suffix, as in the source article, collides and under-counts.)
local function sliding_log_add(key, now, window, count, units)
  call('ZREMRANGEBYSCORE', key, '-inf', now - window)
  local stamp = string.format('%.17g', now)
  local i = 1
  while i <= units do
    local args = {}
    for j = i, math.min(units, i + 999) do
      args[#args + 1] = stamp
      args[#args + 1] = stamp .. ':' .. (count + j)
    end
    call('ZADD', key, unpack(args))
    i = i + 1000
  end
  call('PEXPIRE', key, format('%d', math.ceil(window) + SLACK))
end

local function sliding_log(key, now, limit, window, burst, cost, apply)
  local newest
  now, newest = sliding_log_now(key, now)
  local floor = string.format('(%.17g', now - window)
  local count = call('ZCOUNT', key, floor, '+inf')
  local ok = count + cost <= limit
  if ok and apply then
    sliding_log_add(key, now, window, count, cost)
    count = count + cost
    newest = now
  end
  local reset, retry = 0, 0
  if count > 0 then reset = math.max(1, math.ceil(newest + window - now)) end
  if not ok then
    if cost > limit then
      retry = math.max(1, reset) * 1000
    else
      local nth = call('ZRANGEBYSCORE', key, floor, '+inf', 'WITHSCORES', 'LIMIT', count + cost - limit - 1, 1)
      retry = math.max(1, math.ceil((tonumber(nth[2]) + window - now) * 1000))
    end
  end
  return ok, math.max(0, limit - count), reset, retry
end

-- The number after the ':' of a member "stamp:n".
local function suffix(member)
  return tonumber(sub(member, find(member, ':', 1, true) + 1))
end

-- Charges `delta` units without a check (delta > 0: members as a consume adds them, past the limit if
-- need be), or refunds them (delta < 0): the newest members go. Among members of one score the highest
-- n go first, so that the names left there stay a run 1..count and a later unit's name stays unique.
local function sliding_log_adjust(key, now, limit, window, burst, delta)
  if delta > 0 then
    now = sliding_log_now(key, now)
    sliding_log_add(key, now, window, call('ZCOUNT', key, string.format('(%.17g', now - window), '+inf'), delta)
    return
  end
  local left = -delta
  while left > 0 do
    local top = call('ZRANGE', key, '-1', '-1', 'WITHSCORES')[2]
    if not top then return end
    local tied = call('ZRANGEBYSCORE', key, top, top)
    table.sort(tied, function(x, y) return suffix(x) > suffix(y) end)
    local gone = {}
    for i = 1, math.min(left, #tied) do gone[i] = tied[i] end
    call('ZREM', key, unpack(gone))
    left = left - #gone
  end
end
