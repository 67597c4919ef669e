-- token-bucket: capacity `burst`, refilled by `limit` tokens per `window` ms, continuously.
-- Stored as GCRA: the key holds TAT, the instant (µs, server clock) at which the bucket is full again,
-- so tokens(now) = burst - max(0, TAT - now) * limit / window. TAT is kept exactly as q + r / limit
-- (q whole µs, 0 <= r < limit): the value is the integer string "q" when r is 0 (any limit that divides
-- cost * window in µs), else "q r". Arithmetic is on tokens scaled by the window in µs (W), where
-- whole costs, limits and windows stay exact integers, so no rounding drifts the count.
-- The key expires at the first multiple of Q, 1/64 of the time to refill from empty, at or after TAT
-- (a missing key is a full bucket). Most writes then fall in the expiry already set and keep it
-- (SET KEEPTTL: a TTL rewrite costs Redis about a sixth of a decision), and a key outlives its full
-- bucket by less than Q.
-- Contract: token_bucket(key, now, limit, window, burst, cost, apply, slack)
--   now    ms on the server clock; window, slack in ms; apply: charge `cost` if it passes
-- Reply: ok, remaining (integer), resetMs (to full), retryAfterUs (whole µs, rounded up: 0 when ok, else >= 1)
local floor, ceil, max, format, call = math.floor, math.ceil, math.max, string.format, redis.call
-- The key's expiry (µs) for TAT q + r / limit: the first multiple of `quantum` at or after it. Exact
-- while TAT < 2^53 µs (the year 2255): the quotient then never rounds to a whole number it is not.
local function expiry_of(q, r, quantum)
  return ceil((r > 0 and q + 1 or q) / quantum) * quantum
end
local function token_bucket(key, now, limit, window, burst, cost, apply, slack)
  local t = floor(now * 1000 + 0.5)
  local w = window * 1000
  -- debt = (TAT - t) * limit = (burst - tokens) * W; a missing key is a full bucket.
  local debt = 0
  local raw = call('GET', key)
  local q, r
  if raw then
    q, r = tonumber(raw), 0
    if q == nil then
      local sp = string.find(raw, ' ', 1, true)
      q = tonumber(string.sub(raw, 1, sp - 1))
      r = tonumber(string.sub(raw, sp + 1))
    end
    -- A clock that steps back (fail-over to another server) sees fewer tokens, never a second refill.
    debt = max(0, (q - t) * limit + r)
  end
  local need = cost * w
  local ok = burst * w - debt >= need
  if ok and apply then
    debt = debt + need
    local dq = floor(debt / limit)
    local rest = debt - dq * limit
    local value = rest == 0 and format('%d', t + dq) or format('%d %.17g', t + dq, rest)
    local quantum = max(1, floor(burst * w / limit / 64))
    local expiry = expiry_of(t + dq, rest, quantum)
    if raw and expiry == expiry_of(q, r, quantum) then
      call('SET', key, value, 'KEEPTTL')
    else
      -- A %d string: Redis would format a Lua number with %.17g, far slower.
      call('SET', key, value, 'PX', format('%d', ceil((expiry - t) / 1000) + slack))
    end
  end
  -- The shortfall, (cost - tokens) * W, refills at `limit` per µs.
  local retry = 0
  if not ok then retry = max(1, ceil((need - (burst * w - debt)) / limit)) end
  return ok, max(0, floor((burst * w - debt) / w)), ceil(debt / (limit * 1000)), retry
end
