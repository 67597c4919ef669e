-- token-bucket: capacity `burst`, refilled by `limit` tokens per `window` ms, continuously.
-- code: tb
-- Stored as GCRA: the key holds TAT, the instant (µs, server clock) at which the bucket is full again,
-- so tokens(now) = burst - max(0, TAT - now) * limit / window. TAT is kept exactly as q + r / limit
-- (q whole µs, 0 <= r < limit): the state is q alone when r is 0 (any limit that divides cost * window
-- in µs), else q and r. Arithmetic is on tokens scaled by the window in µs (W), where whole costs, limits and
-- windows stay exact integers, so no rounding drifts the count.
-- The key expires at the first multiple of Q, 1/64 of the time to refill from empty, at or after TAT
-- (a missing key is a full bucket). Most writes then fall in the expiry already set and keep it, and a
-- key outlives its full bucket by less than Q.
-- Contract: token_bucket(key, now, limit, window, burst, cost, apply)
--   now    ms on the server clock; window in ms; apply: charge `cost` if it passes
-- Reply: ok, remaining (integer), resetMs (to full), retryAfterUs (whole µs, rounded up: 0 when ok, else >= 1)
-- Arithmetic stays inline, without math.floor, ceil or max: a C call costs the Lua VM more than
-- all of this function's operators, and this runs once per decision. For any number x, x - x % 1 is
-- floor(x) exactly, and x % m - x is -x rounded up to a multiple of m.
local function token_bucket(key, now, limit, window, burst, cost, apply)
  local t = now * 1000 + 0.5
  t = t - t % 1
  local w = window * 1000
  local full = burst * w
  -- debt = (TAT - t) * limit = (burst - tokens) * W; a missing key is a full bucket.
  local debt = 0
  local raw = get(key)
  local q, r
  -- A bucket in use mostly holds TAT alone, packed in 8 bytes: read inline (fewer Redis instructions
  -- than fields()). A text TAT is never 8 bytes long: µs on the server clock take 16 digits.
  if raw and #raw == 8 then q, r = unpack_state('>d', raw), 0 else q, r = fields(raw) end
  if q then
    r = r or 0
    -- A clock that steps back (fail-over to another server) sees fewer tokens, never a second refill.
    debt = (q - t) * limit + r
    if debt < 0 then debt = 0 end
  end
  local need = cost * w
  local ok = full - debt >= need
  if ok and apply then
    debt = debt + need
    local dq = debt / limit
    dq = dq - dq % 1
    local rest = debt - dq * limit
    local value = rest == 0 and pack('>d', t + dq) or pack('>dd', t + dq, rest)
    -- The key's expiry (µs) for TAT q + r / limit is the first multiple of `quantum` at or after it
    -- (from q + 1 when r > 0): x % quantum - x for x = -TAT. Exact while TAT < 2^53 µs (the year 2255).
    local quantum = full / limit / 64
    quantum = quantum - quantum % 1
    if quantum < 1 then quantum = 1 end
    local after = -(rest > 0 and t + dq + 1 or t + dq)
    local expiry = after % quantum - after
    local before = q and -(r > 0 and q + 1 or q)
    put(key, value, before and expiry == before % quantum - before, (expiry - t) / 1000)
  end
  -- The shortfall, (cost - tokens) * W, refills at `limit` per µs (rounded up, at least 1).
  local retry = 0
  if not ok then
    retry = (full - debt - need) / limit
    retry = retry % 1 - retry
    if retry < 1 then retry = 1 end
  end
  local remaining = (full - debt) / w
  remaining = remaining - remaining % 1
  if remaining < 0 then remaining = 0 end
  local reset = -debt / (limit * 1000)
  return ok, remaining, reset % 1 - reset, retry
end

-- Charges `delta` units without a check (delta > 0: the debt may pass the capacity, and later requests
-- wait it out) or refunds them (delta < 0), never past a full bucket, which is a missing key.
local function token_bucket_adjust(key, now, limit, window, burst, delta)
  local t = now * 1000 + 0.5
  t = t - t % 1
  local w = window * 1000
  local q, r = fields(get(key))
  local debt = 0
  if q then
    debt = (q - t) * limit + (r or 0)
    if debt < 0 then debt = 0 end
  end
  debt = debt + delta * w
  if debt <= 0 then
    if q then drop(key) end
    return
  end
  -- A debt waits out at most 10000 days past a full refill (the policies' longest window), however many
  -- adjustments add to it: TAT stays an exact integer, and its TTL a valid one.
  local most = 864e12 * limit + burst * w
  if debt > most then debt = most end
  local dq = debt / limit
  dq = dq - dq % 1
  local rest = debt - dq * limit
  local value = rest == 0 and pack('>d', t + dq) or pack('>dd', t + dq, rest)
  local quantum = burst * w / limit / 64
  quantum = quantum - quantum % 1
  if quantum < 1 then quantum = 1 end
  local after = -(rest > 0 and t + dq + 1 or t + dq)
  local expiry = after % quantum - after
  -- As in the step: a key that already expires at this instant keeps its TTL.
  local before = q and -((r or 0) > 0 and q + 1 or q)
  put(key, value, before and expiry == before % quantum - before, (expiry - t) / 1000)
end

-- A reservation (decide.lua's op 'w'): the cost is charged now, past a full debt if need be, so the
-- request holds its place in line and the next reservation's wait counts it; decide.lua found its
-- turn, `at` (ms), from the step's retry. GCRA charges a place in line the same however far ahead it is.
local function token_bucket_reserve(key, now, limit, window, burst, cost, at)
  token_bucket_adjust(key, now, limit, window, burst, cost)
end
