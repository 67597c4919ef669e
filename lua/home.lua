-- home: the home store's side of one limit across regions (packages/core/src/regions/). Not an algorithm:
-- scripts/gen-lua.mjs ships it as a script of its own (HOME_SCRIPT). The home holds each key's global token
-- bucket and grants its tokens to the regions (lua/region.lua spends them there).
-- KEYS[i]  a key's home hash (store/keys.ts leaseKey, on the home's server), one per key of the batch:
--   t, ts   the bucket's tokens, and when they were counted (server ms); a missing hash is a full bucket
--   h       the share held back when they were counted (below)
--   r:NAME  region NAME's lease: "ep|G|S|e|d|id": its epoch, tokens granted in it (cumulative), tokens it
--           reported spent (cumulative), when the lease lapses, its demand per lease, its last ask's id
--   g:NAME  "amount|e": tokens of an earlier epoch of NAME, counted as out until e (its region's Redis
--           lost its lease while the home still counted it)
-- The ceiling: tokens in the bucket plus every live lease's G - S (what a region may still spend) never
-- exceed the capacity, and the bucket refills at the rate. A lease not renewed lapses two leases after its
-- ask: its region spends nothing of it after that, and what it did not report is taken as spent. A region
-- without a live lease may admit its static share (burst / n, rate / n) when cut off, so the bucket holds
-- back that share for each of the n regions that holds no live lease: capacity and rate both.
-- ARGV[1] op, [2] the region asking, [3] lease (ms), [4] the region's timeout for the home (ms),
--   [5] count (0: the regions this key has seen), [6] the regions the asking process has heard of; then per key:
--   'g' grant (7 each): burst, rate per ms, ep, S, demand, sentAt (the region's server ms), id.
--       Reply per key { status, G, granted, n, tokens, S }: status 1 granted (granted may be 0), 2 the ask
--       was answered already (its id: the same G, nothing granted again), 0 stale (taken after the region's
--       timeout, or of an epoch the home holds no lease of: nothing granted, nothing renewed). S: what the
--       home counts spent in the epoch, the region never fewer (a lease that lapsed here: all it was granted).
--   'r' give back (4 each): burst, rate, ep, S. Reply per key: the tokens back in the bucket.
--   'i' inspect (2 each): burst, rate. Reply per key { tokens, n, held back, NAME, G, S, ms left, demand, ... }
local call = redis.call
local op, region = ARGV[1], ARGV[2]
local lease, timeout, count, known = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local tm = call('TIME')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
local PER = { g = 7, r = 4, i = 2 }
local per = PER[op]
if per == nil then return redis.error_reply('home: unknown op') end

local function fmt(x)
  return string.format('%.17g', x)
end

local function split(s)
  local out = {}
  for part in string.gmatch(s .. '|', '([^|]*)|') do out[#out + 1] = part end
  return out
end

-- The key's state: the bucket, and each region's lease and ghost.
local function load(key)
  local raw = call('HGETALL', key)
  local st = { regions = {}, ghosts = {}, names = {} }
  for i = 1, #raw, 2 do
    local f, v = raw[i], raw[i + 1]
    local kind, name = string.sub(f, 1, 2), string.sub(f, 3)
    if kind == 'r:' then
      local p = split(v)
      st.regions[name] = { ep = p[1], G = tonumber(p[2]), S = tonumber(p[3]), e = tonumber(p[4]), d = tonumber(p[5]), id = p[6] }
      st.names[#st.names + 1] = name
    elseif kind == 'g:' then
      local p = split(v)
      st.ghosts[name] = { amount = tonumber(p[1]), e = tonumber(p[2]) }
    else
      st[f] = tonumber(v)
    end
  end
  return st
end

local function live(r)
  return r ~= nil and r.e > now
end

-- What live leases may still spend, the regions counted, and the share held back now (self counts as live
-- when it is being granted).
local function outlook(st, self)
  local out, alive, seen = 0, 0, 0
  for _, name in ipairs(st.names) do
    local r = st.regions[name]
    seen = seen + 1
    if live(r) or name == self then
      alive = alive + 1
      if live(r) then out = out + math.max(0, r.G - r.S) end
    end
  end
  for _, g in pairs(st.ghosts) do
    if g.e > now then out = out + g.amount end
  end
  local n = math.max(count, seen, known, 1)
  local hold = (n - alive) / n
  if hold < 0 then hold = 0 end
  return out, n, hold
end

-- Refills the bucket to now: at the rate less what was held back (the larger of then and now), never past
-- the capacity less the share held back and what live leases hold.
local function refill(st, burst, rate, out, hold)
  local cap = burst * (1 - hold) - out
  if st.t == nil then
    st.t = cap
  else
    local kept = math.max(hold, st.h or 0)
    st.t = math.min(cap, st.t + rate * (1 - kept) * math.max(0, now - (st.ts or now)))
  end
  st.ts, st.h = now, hold
end

local function record(r)
  return table.concat({ r.ep, fmt(r.G), fmt(r.S), r.e, fmt(r.d), r.id }, '|')
end

local function save(key, st, burst, rate, name)
  local args = { 't', fmt(st.t), 'ts', st.ts, 'h', fmt(st.h) }
  if name ~= nil then
    args[#args + 1] = 'r:' .. name
    args[#args + 1] = record(st.regions[name])
  end
  call('HSET', key, unpack(args))
  -- Past every lease and a refill from empty: a missing hash is then what it held, a full bucket.
  call('PEXPIRE', key, math.ceil(burst / rate + 2 * lease + timeout + 1000))
end

local reply = {}
for i = 1, #KEYS do
  local key, b = KEYS[i], 6 + (i - 1) * per
  local burst, rate = tonumber(ARGV[b + 1]), tonumber(ARGV[b + 2])
  local st = load(key)
  local mine = st.regions[region]
  if op == 'g' then
    local ep, S, demand, sentAt, id = ARGV[b + 3], tonumber(ARGV[b + 4]), tonumber(ARGV[b + 5]), tonumber(ARGV[b + 6]), ARGV[b + 7]
    if mine ~= nil and mine.id == id then
      local _, n = outlook(st, region)
      reply[i] = { 2, fmt(mine.G), 0, n, fmt(st.t or burst), fmt(mine.S) }
    elseif now > sentAt + timeout then
      reply[i] = { 0, 0, 0, 0, 0, 0 }
    else
      if mine == nil or mine.ep ~= ep then
        -- Another epoch: what the earlier one still held stays out until its lease would have lapsed.
        if live(mine) and mine.G > mine.S then
          call('HSET', key, 'g:' .. region, fmt(mine.G - mine.S) .. '|' .. mine.e)
          st.ghosts[region] = { amount = mine.G - mine.S, e = mine.e }
        end
        if mine == nil then st.names[#st.names + 1] = region end
        mine = { ep = ep, G = 0, S = 0, e = 0, d = 0, id = '' }
        st.regions[region] = mine
      elseif not live(mine) then
        -- A lease that lapsed: what it did not report is spent, here and in the region (the reply's S).
        mine.S = mine.G
      end
      mine.S = math.max(mine.S, S)
      local out, n, hold = outlook(st, region)
      refill(st, burst, rate, out, hold)
      -- Demand shares among the live leases: each region's part of the tokens in play (the bucket's, and
      -- those the other leases may still hold: what they did not report spent, less what their demand took
      -- since their grant), and never more than it asks for over two leases (to start, two leases' refill,
      -- at most its static share). A region that took much lately leaves the others theirs.
      mine.d = demand
      local sum, others = demand, 0
      for _, name in ipairs(st.names) do
        local r = st.regions[name]
        if name ~= region and live(r) then
          sum = sum + r.d
          others = others + math.max(0, r.G - r.S - r.d * (now - r.e + 2 * lease) / lease)
        end
      end
      local alive = n * (1 - hold)
      local w = sum > 0 and demand / sum or 1 / math.max(1, alive)
      local held = math.max(0, mine.G - mine.S)
      local fair = w * (st.t + others)
      local need = math.max(2 * demand, math.min(burst / n, 2 * rate * lease)) - held
      local g = math.floor(math.max(0, math.min(st.t, fair, need)))
      mine.G, mine.e, mine.id = mine.G + g, now + 2 * lease, id
      st.t = st.t - g
      save(key, st, burst, rate, region)
      reply[i] = { 1, fmt(mine.G), g, n, fmt(st.t), fmt(mine.S) }
    end
  elseif op == 'r' then
    local ep, S = ARGV[b + 3], tonumber(ARGV[b + 4])
    if mine ~= nil and mine.ep == ep and live(mine) then
      local out, _, hold = outlook(st, nil)
      refill(st, burst, rate, out, hold)
      local back = math.max(0, mine.G - math.max(mine.S, S))
      mine.S, mine.e = mine.G, 0
      out, _, hold = outlook(st, nil)
      st.t = math.min(burst * (1 - hold) - out, st.t + back)
      save(key, st, burst, rate, region)
      reply[i] = back
    else
      reply[i] = 0
    end
  else
    local out, n, hold = outlook(st, nil)
    refill(st, burst, rate, out, hold)
    local r = { fmt(st.t), n, fmt(hold) }
    for _, name in ipairs(st.names) do
      local x = st.regions[name]
      local left = live(x) and x.e - now or 0
      r[#r + 1] = name
      r[#r + 1] = fmt(x.G)
      r[#r + 1] = fmt(x.S)
      r[#r + 1] = left
      r[#r + 1] = fmt(x.d)
    end
    reply[i] = r
  end
end
return reply
