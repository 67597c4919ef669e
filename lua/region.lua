-- region: a region's side of one limit across regions (packages/core/src/regions/), on the region's own Redis.
-- Not an algorithm: scripts/gen-lua.mjs ships it as a script of its own (REGION_SCRIPT). A region holds,
-- per key, the tokens the home granted it (lua/home.lua) and spends them here, one call per decision.
-- KEYS[i]  a key's lease hash in this region (store/keys.ts leaseKey), one per key the call is about:
--   ep  the lease's epoch: the home's grants count from 0 in each one. A fresh hash, or a lease given
--       back, starts an epoch of its own, so that a late grant of an earlier one adds nothing.
--   G   tokens received in this epoch (the home's cumulative grant: a duplicated or late reply adds nothing)
--   S   tokens spent in this epoch; what the region holds is G - S
--   x   when the lease lapses (server ms): the time of the ask the last grant answered, plus two leases
--   a   when this region last asked the home (server ms)
--   f   the static share may be used from then on: no grant the home may still count as live is left
--   d, dt  units asked for (allowed or not), decaying by e every half lease, and when they were counted: the
--          region's demand, recent requests weighing most
--   u   units the static share admitted since the last ask: charged to the next grant
--   n   the regions the home counts, for the static share
--   l   1 once this region has held a lease of the key: a lapsed lease takes its static share unasked
--   sb, st  the static share's bucket: its tokens, and when they were counted. Empty at f whenever f is set:
--           the home holds the share back (capacity and rate) only while it counts no grant of this region live
-- ARGV[1] op:
--   's' spend: ARGV[2] cost, [3] burst, [4] refill per ms, [5] '1' when the static share may be used
--       (the home is away, or noLease 'share'), [6] a fresh epoch's name, [7] the hash's ttl floor (ms),
--       [8] '1' for a peek (nothing charged, no demand counted), [9] the lease (ms), [10] the regions the
--       process has heard the home count (the static share before this key heard it).
--       Reply { allowed, remaining, retryAfterUs, status, resetMs }; status 0 the lease paid, 1 the lease
--       is live but holds too little, 2 no lease yet (none held since the key's record began), 3 the
--       static share decided, 4 the lease lapsed. A lapsed lease's region may use its static share from f
--       on; one that never held a lease only when told (`share`: noLease 'share', or the home away).
--   'p' prepare an ask: ARGV[2] lease (ms), [3] the home's timeout (ms), [4] ttl floor, [5] epoch name.
--       Per key { asked, ep, S, d, sentAt }: asked 0 when this region asked within the lease (any process).
--   'g' deposit a grant: KEYS[1]; ARGV[2] ep, [3] the home's cumulative grant, [4] sentAt of the ask,
--       [5] lease (ms), [6] the regions the home counts, [7] ttl floor, [8] the home's timeout (ms), [9] what
--       the home counts spent in the epoch.
--       Reply 1, or 0 for another epoch.
--   'r' give back: ARGV[2] epoch name, [3] ttl floor, [4] lease (ms). Per key { given, ep, S }: given 0
--       when the lease is in use (a request, or an ask, within the last lease) or there is nothing to give.
--   'i' inspect: KEYS[1]; reply { now, field, value, ... }
local call = redis.call
local op = ARGV[1]
local tm = call('TIME')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)

local function read(key)
  local raw = call('HGETALL', key)
  local h = {}
  for i = 1, #raw, 2 do h[raw[i]] = raw[i + 1] end
  return h
end

local function num(h, f)
  return tonumber(h[f] or '0') or 0
end

-- The hash lives past its lease, its static share's refill and the time its static share waits for.
local function keep(key, h, floor)
  local last = math.max(num(h, 'x'), num(h, 'f'), now)
  call('PEXPIRE', key, math.ceil(last - now + floor))
end

local function fmt(x)
  return string.format('%.17g', x)
end

-- The units asked for, decayed to now: at a steady demand, what comes in over half a lease.
local function demand(h, lease)
  return num(h, 'd') * math.exp((num(h, 'dt') - now) * 2 / lease)
end

if op == 's' then
  local key = KEYS[1]
  local cost, burst, rate = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
  local share, peek, lease, regions = ARGV[5] == '1', ARGV[8] == '1', tonumber(ARGV[9]), tonumber(ARGV[10])
  local h = read(key)
  local fresh = h.ep == nil
  if fresh then h.ep = ARGV[6] end
  local G, S, x = num(h, 'G'), num(h, 'S'), num(h, 'x')
  local ok, status, remaining, retry = false, 2, 0, 1000
  if now < x then
    remaining = G - S
    if remaining >= cost then
      ok, status = true, 0
      if not peek then S = S + cost end
      remaining = remaining - (peek and 0 or cost)
    else
      status = 1
      retry = math.max(1, num(h, 'a') + lease - now) * 1000
    end
  elseif (share or num(h, 'l') > 0) and math.max(num(h, 'n'), regions) > 0 and now >= num(h, 'f') then
    local n = math.max(num(h, 'n'), regions)
    local cap, r = burst / n, rate / n
    local sb = h.sb and math.min(cap, num(h, 'sb') + (now - num(h, 'st')) * r) or cap
    status = 3
    if sb >= cost then
      ok = true
      if not peek then
        sb = sb - cost
        h.u = num(h, 'u') + cost
      end
    else
      retry = math.ceil((cost - sb) / r * 1000)
    end
    remaining = sb
    if not peek then h.sb, h.st = fmt(sb), now end
  elseif now < num(h, 'f') then
    retry = (num(h, 'f') - now) * 1000
  end
  if status == 2 and num(h, 'l') > 0 then status = 4 end
  if not peek then
    h.S, h.d = S, fmt(demand(h, lease) + cost)
    if h.sb then
      call('HSET', key, 'ep', h.ep, 'S', h.S, 'd', h.d, 'dt', now, 'u', h.u or 0, 'sb', h.sb, 'st', h.st)
    else
      call('HSET', key, 'ep', h.ep, 'S', h.S, 'd', h.d, 'dt', now)
    end
    keep(key, h, tonumber(ARGV[7]))
  end
  if remaining < 0 then remaining = 0 end
  remaining = math.floor(remaining)
  return { ok and 1 or 0, remaining, ok and 0 or math.ceil(retry), status, math.ceil((burst - remaining) / rate) }
elseif op == 'p' then
  local lease, timeout, floor = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
  local reply = {}
  for i = 1, #KEYS do
    local key = KEYS[i]
    local h = read(key)
    if h.ep == nil then h.ep = ARGV[5] .. ':' .. i end
    local a = num(h, 'a')
    -- A lease that lapsed is gone, and so are the tokens it held (the home counts them spent): a new epoch.
    if num(h, 'x') > 0 and now >= num(h, 'x') then
      h.ep, h.x, h.l = ARGV[5] .. ':' .. i, 0, 1
      call('HSET', key, 'ep', h.ep, 'G', 0, 'S', 0, 'x', 0, 'l', 1)
    end
    if a > 0 and now - a < lease then
      reply[#reply + 1] = { 0, h.ep, 0, 0, now }
    else
      -- Demand per lease, the latest half lease weighing most: a region whose demand moved says so at its next ask.
      local d = 2 * demand(h, lease)
      -- The static share stops until no grant this ask may bring can be live at the home: a grant lasts two
      -- leases from an ask the home takes within its timeout. What the static share admitted before (noLease
      -- 'share', a key's first requests) is charged to the grant.
      h.f = math.max(num(h, 'f'), now + timeout + 2 * lease)
      call('HSET', key, 'ep', h.ep, 'a', now, 'f', h.f, 'sb', 0, 'st', h.f)
      keep(key, h, floor)
      reply[#reply + 1] = { 1, h.ep, num(h, 'S'), fmt(d), now }
    end
  end
  return reply
elseif op == 'g' then
  local key = KEYS[1]
  local h = read(key)
  if h.ep == nil or h.ep ~= ARGV[2] then return 0 end
  local G = math.max(num(h, 'G'), tonumber(ARGV[3]))
  local x = math.max(num(h, 'x'), tonumber(ARGV[4]) + 2 * tonumber(ARGV[5]))
  -- What the home counts spent is spent here too (a lease the home let lapse: all of it, though this region
  -- held it on), and what the static share admitted while the ask was out is paid from the grant.
  local S = math.max(num(h, 'S'), tonumber(ARGV[9])) + num(h, 'u')
  h.x = x
  -- Its static share waits until this grant cannot be live at the home any more (a first lease's ask did not say).
  h.f = math.max(num(h, 'f'), tonumber(ARGV[4]) + tonumber(ARGV[8]) + 2 * tonumber(ARGV[5]))
  call('HSET', key, 'G', G, 'S', S, 'u', 0, 'x', x, 'f', h.f, 'sb', 0, 'st', h.f, 'n', ARGV[6], 'l', 1)
  keep(key, h, tonumber(ARGV[7]))
  return 1
elseif op == 'r' then
  local reply = {}
  for i = 1, #KEYS do
    local key = KEYS[i]
    local h = read(key)
    if h.ep == nil or num(h, 'dt') >= num(h, 'a') or now - num(h, 'a') < tonumber(ARGV[4]) or num(h, 'G') == 0 then
      reply[#reply + 1] = { 0, '', 0 }
    else
      reply[#reply + 1] = { 1, h.ep, num(h, 'S') }
      call('HSET', key, 'ep', ARGV[2] .. ':' .. i, 'G', 0, 'S', 0, 'x', 0)
      h.x = 0
      keep(key, h, tonumber(ARGV[3]))
    end
  end
  return reply
elseif op == 'i' then
  local raw = call('HGETALL', KEYS[1])
  table.insert(raw, 1, now)
  return raw
end
return redis.error_reply('region: unknown op')
