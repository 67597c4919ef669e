-- decide: many rate-limit decisions in one call. scripts/gen-lua.mjs prepends prelude.lua and
-- algorithm(code), which makes the functions of the algorithm with that code (its file's) and returns its
-- step and its adjustment (an adjustment that returns true was a release).
-- KEYS[1]        the call guard of the store that sends the call (see below)
-- KEYS[2..]      one per (decision, policy), in the order of the decisions below.
-- ARGV[1]        the call's number: the store numbers its calls 1, 2, 3, ...
-- ARGV[2]        now in ms, or '' for the server clock (TIME). Only tests pass a value.
-- ARGV[3]        P, the number of policy specs that follow
-- ARGV[4..3+4P]  per spec: algorithm code (its file's `code:` line), limit, window ms, burst (a calendar
--                quota's window is its candidate period starts, a string: see calendar.lua)
-- then runs of decisions alike: count, op ('c' consume | 'p' peek), cost, n, and n spec numbers
-- (1-based); the run stands for `count` decisions in a row, each with its own n KEYS.
-- Two more ops carry, after the spec numbers, idTtl (ms; '0' for none) and then the run's slots, one per
-- decision, in one argument separated by spaces (a concurrent lease's member; '' when none has one):
--   'x' consume with a slot to take and/or an id: with idTtl > 0 the decision has one more KEYS entry
--       after its n, the id's record. An id already recorded is allowed again and charges nothing
--       (the reply is a peek's with every retry 0); an allowed consume records its id for idTtl ms
--       (the record holds the instant it lapses, and expires then).
--   'a' adjust: `cost` is the delta, applied to every policy without a check by its algorithm's
--       adjustment (a refund never past full; a concurrent policy gives `slot` back); the reply is a
--       peek's after it, but for a release (concurrent policies only, which adjust never mixes with
--       rate ones): zeros.
-- Reply: per decision, per policy: remaining, resetMs, retryAfterUs (whole µs, rounded up, so the deny
-- cache can hold a denial to within 1 µs of its end). A decision is allowed when every retryAfterUs
-- is 0: each algorithm answers a denial with retryAfterUs >= 1.
-- A decision passes only if every policy passes, and a denial charges none of them.
-- Exactly once: a client may send a call again (an ioredis Cluster retries a call that was in flight when
-- its connection reset, after Redis had run it). The guard holds the highest number this store's calls
-- ran under; a call numbered no higher is not run again, and answers the error SLUICE_AGAIN (the store
-- answers its decisions by the fail mode). A call overtaken by a later one (a rare reordering around a
-- reset) is refused too: refusing is safe, running twice is not. One command per call, not per decision.
local last = tonumber(call('SET', KEYS[1], ARGV[1], 'PX', '60000', 'GET'))
if last and last >= tonumber(ARGV[1]) then
  call('SET', KEYS[1], last, 'PX', '60000')
  return redis.error_reply('SLUICE_AGAIN call ' .. ARGV[1] .. ' was already run or overtaken (guard at ' .. last .. ')')
end

local now
if ARGV[2] == '' then
  local t = call('TIME')
  now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
else
  now = tonumber(ARGV[2])
  -- A test clock is not Redis' clock: keep keys past the TTLs it computes.
  SLACK = 3600000
end

-- The algorithms' functions, made once per call and only for the algorithms its specs name.
local made = {}
local specs = {}
local nspecs = tonumber(ARGV[3])
for s = 1, nspecs do
  local b = 3 + (s - 1) * 4
  local code = ARGV[b + 1]
  local fns = made[code]
  if not fns then
    fns = { algorithm(code) }
    made[code] = fns
  end
  -- A calendar quota's window is its list of period starts, a string.
  specs[s] = { fns[1], tonumber(ARGV[b + 2]), tonumber(ARGV[b + 3]) or ARGV[b + 3], tonumber(ARGV[b + 4]), fns[2] }
end

local reply = {}
local r = 0
local a = 4 + nspecs * 4
local k = 2
local nargs = #ARGV

-- Records an allowed consume's id for idTtl ms: the record holds the instant it lapses.
local function record(key, idTtl)
  local ttl = math.ceil(idTtl)
  call('SET', key, format('%.17g', now + ttl), 'PX', format('%d', ttl + SLACK))
end

-- One decision under the n policies `run` (its KEYS from k): checks all before charging any, and charges
-- all when every one passes and `charge`. The reply gets each policy's answer, every retry 0 on a
-- `replay` (an id already charged). Returns whether every policy passed.
local function decide_all(run, n, cost, charge, replay)
  local results = {}
  local allowed = true
  for i = 1, n do
    local spec = run[i]
    local ok, remaining, reset, retry = spec[1](KEYS[k + i - 1], now, spec[2], spec[3], spec[4], cost, false)
    if replay then retry = 0 end
    results[i] = { remaining, reset, retry }
    allowed = allowed and ok
  end
  if allowed and charge then
    for i = 1, n do
      local spec = run[i]
      local _, remaining, reset, retry = spec[1](KEYS[k + i - 1], now, spec[2], spec[3], spec[4], cost, true)
      results[i] = { remaining, reset, retry }
    end
  end
  for i = 1, n do
    reply[r + 1] = results[i][1]
    reply[r + 2] = results[i][2]
    reply[r + 3] = results[i][3]
    r = r + 3
  end
  return allowed
end

-- One 'x' or 'a' decision (see above) of a run whose n specs are `run`.
local function decide_one(op, cost, n, run, idTtl, slot)
  SLOT = slot
  local replay, release = false, false
  if op == 'a' then
    for i = 1, n do
      local spec = run[i]
      release = spec[5](KEYS[k + i - 1], now, spec[2], spec[3], spec[4], cost) or release
    end
    cost = 1
  elseif idTtl > 0 then
    -- The record holds when it lapses (ms, same clock as now), so that a test clock sees it lapse too.
    local lapses = tonumber(call('GET', KEYS[k + n]))
    replay = lapses ~= nil and lapses > now
  end
  if release then
    -- A release (adjust never mixes slots with rate policies): its reply goes unread.
    for _ = 1, n do
      reply[r + 1] = 0
      reply[r + 2] = 0
      reply[r + 3] = 0
      r = r + 3
    end
  elseif n == 1 and not replay then
    -- One policy (here a consume with an id: the run loop decides one-policy runs without one): it checks
    -- and charges in one pass; an adjustment would answer with a peek after it.
    local spec = run[1]
    local ok, remaining, reset, retry = spec[1](KEYS[k], now, spec[2], spec[3], spec[4], cost, op == 'x')
    reply[r + 1] = remaining
    reply[r + 2] = reset
    reply[r + 3] = retry
    r = r + 3
    if op == 'x' and ok and idTtl > 0 then record(KEYS[k + n], idTtl) end
  else
    local charge = op == 'x' and not replay
    if decide_all(run, n, cost, charge, replay) and charge and idTtl > 0 then record(KEYS[k + n], idTtl) end
  end
  k = k + n
  if idTtl > 0 then k = k + 1 end
  SLOT = ''
end

while a <= nargs do
  local count = tonumber(ARGV[a])
  local op = ARGV[a + 1]
  local consume = op == 'c'
  local cost = tonumber(ARGV[a + 2])
  local n = tonumber(ARGV[a + 3])
  local one = op == 'x' or op == 'a'
  -- The run's specs, looked up once for all its decisions.
  local run = {}
  for i = 1, n do
    run[i] = specs[tonumber(ARGV[a + 3 + i])]
  end
  if one then
    local idTtl = tonumber(ARGV[a + 4 + n])
    local slots = ARGV[a + 5 + n]
    local from = 1
    if n == 1 and idTtl == 0 then
      -- One policy and no id: a take charges in one pass, an adjustment answers with a peek after it
      -- (zeros after a release), as decide_one would, without its per-decision branching.
      local spec = run[1]
      local step, limit, window, burst, adjust = spec[1], spec[2], spec[3], spec[4], spec[5]
      local take = op == 'x'
      for _ = 1, count do
        local space = find(slots, ' ', from, true)
        SLOT = space and sub(slots, from, space - 1) or sub(slots, from)
        if space then from = space + 1 end
        local key = KEYS[k]
        local ok, remaining, reset, retry
        if take then
          ok, remaining, reset, retry = step(key, now, limit, window, burst, cost, true)
        elseif adjust(key, now, limit, window, burst, cost) then
          remaining, reset, retry = 0, 0, 0
        else
          ok, remaining, reset, retry = step(key, now, limit, window, burst, 1, false)
        end
        reply[r + 1] = remaining
        reply[r + 2] = reset
        reply[r + 3] = retry
        r = r + 3
        k = k + 1
      end
      SLOT = ''
    else
      for _ = 1, count do
        local space = find(slots, ' ', from, true)
        decide_one(op, cost, n, run, idTtl, space and sub(slots, from, space - 1) or sub(slots, from))
        if space then from = space + 1 end
      end
    end
    a = a + 6 + n
  elseif n == 1 then
    -- One policy: check and charge in one pass.
    local spec = run[1]
    local step, limit, window, burst = spec[1], spec[2], spec[3], spec[4]
    for _ = 1, count do
      local _, remaining, reset, retry = step(KEYS[k], now, limit, window, burst, cost, consume)
      reply[r + 1] = remaining
      reply[r + 2] = reset
      reply[r + 3] = retry
      r = r + 3
      k = k + 1
    end
  else
    for _ = 1, count do
      decide_all(run, n, cost, consume, false)
      k = k + n
    end
  end
  if not one then a = a + 4 + n end
end
return reply
