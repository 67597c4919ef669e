-- concurrent: at most `limit` requests in flight. A sorted set of leases: member = the slot (SLOT, a
-- random id the caller sends), score = when the lease ends on the server clock. A slot not given back
-- (a crashed process) stops counting when its lease ends, so no slot leaks for want of a release.
-- code: cc
-- Contract: concurrent(key, now, limit, window, burst, cost, apply)
--   key    KEYS entry of a sorted set; window is the lease in ms; burst and cost are unused (a request
--          holds one slot whatever it costs); apply: take slot SLOT if one is free
-- Reply: ok, remaining (free slots), resetMs (0: a slot frees when a request ends, which no clock
--   predicts), retryAfterUs (0 when ok, else 1: any moment; also too short for the deny cache to hold)
-- A take's lease end and its key's TTL, formatted: `now` is the call's, so they are alike for every take
-- of a call with one lease length, and formatted once per call rather than twice per take.
local lease_of, lease_end, lease_ttl
local function concurrent(key, now, limit, window, burst, cost, apply)
  -- The held leases first: a missing key (the usual case between a release and the next take) costs
  -- one call; the oldest is read only when there are some, and lapsed ones counted out and purged only then.
  local held = call('ZCARD', key)
  local lapsed = false
  if held > 0 then
    lapsed = tonumber(call('ZRANGE', key, '0', '0', 'WITHSCORES')[2]) <= now
    if lapsed then held = call('ZCOUNT', key, format('(%.17g', now), '+inf') end
  end
  local ok = held + 1 <= limit
  if ok and apply then
    if lapsed then call('ZREMRANGEBYSCORE', key, '-inf', format('%.17g', now)) end
    if window ~= lease_of then
      -- The lease ends on a whole ms (rounded up): Redis is passed and stores an integer, which it
      -- formats and parses far more cheaply than a fraction (a number argument costs it a '%.17g').
      -- Every lease is as long, so the newest ends last: the key lives as long as it.
      local ends = now + window
      local whole = ends - ends % 1
      if whole < ends then whole = whole + 1 end
      lease_of, lease_end, lease_ttl = window, format('%d', whole), format('%d', whole - now + (now - whole) % 1 + SLACK)
    end
    call('ZADD', key, lease_end, SLOT)
    held = held + 1
    call('PEXPIRE', key, lease_ttl)
  end
  local retry = 0
  if not ok then retry = 1 end
  return ok, math.max(0, limit - held), 0, retry
end

-- Gives slot SLOT back (idempotent: a slot already given back or expired is no longer there).
-- delta is unused: a release (op 'r' in decide.lua) is the only adjustment of a concurrent policy.
local function concurrent_adjust(key, now, limit, window, burst, delta)
  if SLOT ~= '' then call('ZREM', key, SLOT) end
end
