-- calendar: a quota of `limit` units per calendar period (a day, an ISO week, a month in a time zone),
-- counted like a fixed window whose bounds are the period's.
-- code: ca
-- Contract: calendar(key, now, limit, starts, burst, cost, apply)
--   starts  the candidate period starts, epoch ms ascending, space-separated: a field of the spec of
--           its own (packages/core/src/store/protocol.ts), which decide.lua passes in the window's place. Lua
--           has no time-zone database, so the app computes them for the zone around its own clock (the
--           period before its now, its now's and the two after); the period that holds the server's now
--           counts, so no app clock decides. Beyond them (a clock more than a period off) periods go
--           on at the length of the nearest candidate one. burst is unused.
--   key     KEYS entry holding "start end count"
-- Reply: ok, remaining (integer), resetMs (to the period's end, also when unused),
--   retryAfterUs (to the period's end in whole µs, rounded up: 0 when ok, else >= 1)
-- Parsed once per script call and spec: a batch carries one spec per distinct policy.
local calendar_starts = {}
-- The period [start, finish) that holds `now`, among the candidate starts (a string, parsed once).
local function calendar_period(now, starts)
  local s = calendar_starts[starts]
  if not s then
    s = {}
    for x in string.gmatch(starts, '%-?%d+') do s[#s + 1] = tonumber(x) end
    calendar_starts[starts] = s
  end
  local n = #s
  if now < s[1] then
    local len = s[2] - s[1]
    local start = s[1] - math.ceil((s[1] - now) / len) * len
    return start, start + len
  elseif now >= s[n] then
    local len = s[n] - s[n - 1]
    local start = s[n] + math.floor((now - s[n]) / len) * len
    return start, start + len
  end
  local i = 1
  while s[i + 1] <= now do i = i + 1 end
  return s[i], s[i + 1]
end

-- The period counted in and its count: the stored one when a clock stepped back into it.
local function calendar_state(key, now, starts)
  local start, finish = calendar_period(now, starts)
  local raw = get(key)
  if raw then
    -- "start end count" in one match: cheaper than the prelude's general fields() for three fields.
    local s, e, c = string.match(raw, '^(%S+) (%S+) (%S+)$')
    s = tonumber(s)
    if s and s >= start then return s, tonumber(e), tonumber(c), true end
  end
  return start, finish, 0, false
end

-- The state string of a period and its count.
local function calendar_value(start, finish, count)
  if count == count - count % 1 then return format('%d %d %d', start, finish, count) end
  return format('%d %d %.17g', start, finish, count)
end

-- The period's end from now, in whole µs (at least 1) and in whole ms from that, so that retry and
-- reset round alike. Arithmetic inline, as in token_bucket: for any number y, y + (-y) % 1 is y
-- rounded up.
local function calendar_ends(finish, now)
  local endsUs = (finish - now) * 1000
  endsUs = endsUs + (-endsUs) % 1
  if endsUs < 1 then endsUs = 1 end
  local ends = endsUs / 1000
  return endsUs, ends + (-ends) % 1
end

local function calendar(key, now, limit, starts, burst, cost, apply)
  local start, finish, count, same = calendar_state(key, now, starts)
  local endsUs, ends = calendar_ends(finish, now)
  local ok = count + cost <= limit
  if ok and apply then
    count = count + cost
    -- Within the stored period the key already expires at its end.
    put(key, calendar_value(start, finish, count), same, ends)
  end
  local retry = 0
  if not ok then retry = endsUs end
  local remaining = limit - count
  remaining = remaining - remaining % 1
  if remaining < 0 then remaining = 0 end
  return ok, remaining, ends, retry
end

-- adjust: the current period's count moves by delta, never below 0.
local function calendar_adjust(key, now, limit, starts, burst, delta)
  local start, finish, count, same = calendar_state(key, now, starts)
  local after = count + delta
  if after < 0 then after = 0 end
  if after == count then return end
  if after == 0 then
    drop(key)
    return
  end
  local _, ends = calendar_ends(finish, now)
  put(key, calendar_value(start, finish, after), same, ends)
end
