-- calendar: a quota of `limit` units per calendar period (a day, an ISO week, a month in a time zone),
-- counted like a fixed window whose bounds are the period's.
-- code: ca
-- Contract: calendar(key, now, limit, starts, burst, cost, apply)
--   starts  the candidate period starts, epoch ms ascending, space-separated. Lua has no time-zone
--           database, so the app computes them for the zone around its own clock (the period before
--           its now, its now's and the two after); the period that holds the server's now counts, so no
--           app clock decides. Beyond them (a clock more than a period off) periods go on at the length
--           of the nearest candidate one. burst is unused.
--   key     KEYS entry holding "start end count"
-- Reply: ok, remaining (integer), resetMs (to the period's end, also when unused),
--   retryAfterUs (to the period's end in whole µs, rounded up: 0 when ok, else >= 1)
-- Parsed once per script call and spec: a batch carries one spec per distinct policy.
local calendar_starts = {}
local function calendar(key, now, limit, starts, burst, cost, apply)
  local s = calendar_starts[starts]
  if not s then
    s = {}
    for x in string.gmatch(starts, '%-?%d+') do s[#s + 1] = tonumber(x) end
    calendar_starts[starts] = s
  end
  local n = #s
  local start, finish
  if now < s[1] then
    local len = s[2] - s[1]
    start = s[1] - math.ceil((s[1] - now) / len) * len
    finish = start + len
  elseif now >= s[n] then
    local len = s[n] - s[n - 1]
    start = s[n] + math.floor((now - s[n]) / len) * len
    finish = start + len
  else
    local i = 1
    while s[i + 1] <= now do i = i + 1 end
    start, finish = s[i], s[i + 1]
  end
  local count = 0
  local stored, e, c = fields(call('GET', key))
  -- A clock that steps back stays in the stored period rather than opening a fresh one.
  local same = stored ~= nil and stored >= start
  if same then
    start, finish, count = stored, e, c
  end
  local endsUs = math.max(1, math.ceil((finish - now) * 1000))
  local ends = math.ceil(endsUs / 1000)
  local ok = count + cost <= limit
  if ok and apply then
    count = count + cost
    -- Within the stored period the key already expires at its end.
    put(key, format('%d %d ', start, finish) .. num(count), same, ends)
  end
  local retry = 0
  if not ok then retry = endsUs end
  return ok, math.max(0, math.floor(limit - count)), ends, retry
end
