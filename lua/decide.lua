-- decide: many rate-limit decisions in one call. scripts/gen-lua.mjs prepends prelude.lua and
-- algorithm(code), which makes the functions of the algorithm with that code (its file's) and returns its
-- step and its adjustment. The layout is packages/core/src/store/protocol.ts's (its one encoder and decoder):
-- KEYS[1]        the call guard of the store that sends the call (see below)
-- KEYS[2..]      per decision, one per policy, then for a consume with an id (idTtl > 0) the id's record
-- ARGV[1]        the call's number: the store numbers its calls 1, 2, 3, ...
-- ARGV[2]        now in ms, or '' for the server clock (TIME): a test clock (redisStore({ clock })) sends it
-- ARGV[3]        P, the number of policy specs that follow
-- ARGV[4..3+5P]  per spec: algorithm code (its file's `code:` line), limit, window ms, burst, and a
--                calendar quota's candidate period starts ('' for the others: see calendar.lua, which
--                takes them as its window)
-- then runs of decisions alike: count, op, cost, idTtl, slots, n, and n spec numbers (1-based); the run
-- stands for `count` decisions in a row, each with its own KEYS.
--   op     'c' consume: every policy is checked, and all are charged `cost` when all pass, else none
--          'p' peek: checked at cost 1, nothing charged
--          'a' adjust: `cost` is the delta, applied to every policy by its algorithm's adjustment without
--              a check (a refund never past full); the reply is a peek's after it
--          'r' release: an adjustment that gives the decision's slot back; its reply is zeros (unread)
--          'w<µs>' reserve (limiter.wait), the most it may wait in whole µs after the 'w': every
--              policy is checked at `cost` as a peek; when the longest retry is within it, each policy is
--              charged its place in line by its <name>_reserve and answers its retry negated (the wait
--              until its turn: the decision passes); else nothing is charged, and the retries stand
--   idTtl  ms, '0' for none: an id already recorded is allowed again and charges nothing (a peek's reply
--          with every retry 0); an allowed consume records its id for idTtl ms (the record holds the
--          instant it lapses, and expires then)
--   slots  one per decision, separated by spaces (a concurrent lease's member), '' when none has one
-- Reply: per decision, per policy: remaining, resetMs, retryAfterUs (whole µs, rounded up, so the deny
-- cache can hold a denial to within 1 µs of its end). A decision is allowed when every retryAfterUs
-- is 0: each algorithm answers a denial with retryAfterUs >= 1. A decision refused for want of memory
-- (below) answers -1, 0, 0 in each of its policies: remaining is never negative otherwise.
-- Exactly once: a client may send a call again (an ioredis Cluster retries a call that was in flight when
-- its connection reset, after Redis had run it). The guard holds the highest number this store's calls
-- ran under; a call numbered no higher is not run again, and answers the error SLUICE_AGAIN (the store
-- answers its decisions by the fail mode). A call overtaken by a later one (a rare reordering around a
-- reset) is refused too: refusing is safe, running twice is not. One command per call, not per decision.
-- Out of memory: under maxmemory-policy noeviction a full Redis refuses the guard's write (OOM). A script
-- that has written nothing since it started out of memory is refused every write that may take memory,
-- and one that has written anything is refused none (Redis 7 and Valkey 8, scriptVerifyOOM): so the call
-- then writes nothing at all, and runs read-only. The guard is read instead of written (a call already
-- run is still refused); a decision that writes nothing (a denial, a peek, an id's replay, a reservation
-- past its most wait) is answered as ever, and one that would write (an admission, an adjustment, a
-- place in line) answers -1, 0, 0 per policy, uncharged, for the store to answer it by the fail mode. A
-- call that wrote nothing may run again harmlessly.
-- KEYS and ARGV are globals: a local each saves a lookup in the globals table per read. A number
-- argument is read as `ARGV[i] + 0`: one strtod, where tonumber() is a C call that parses it twice.
local KEYS, ARGV = KEYS, ARGV
local guard = redis.pcall('SET', KEYS[1], ARGV[1], 'PX', '60000', 'GET')
local last = tonumber(guard)
-- The reply of a refused write is a table {err = ...}: tonumber makes nil of it, as of a missing guard.
local full = false
if not last and guard then
  if sub(guard.err, 1, 4) ~= 'OOM ' then return guard end
  full = true
  last = tonumber(call('GET', KEYS[1]))
end
if last and last >= tonumber(ARGV[1]) then
  if not full then call('SET', KEYS[1], last, 'PX', '60000') end
  return redis.error_reply('SLUICE_AGAIN call ' .. ARGV[1] .. ' was already run or overtaken (guard at ' .. last .. ')')
end

local now
if ARGV[2] == '' then
  local t = call('TIME')
  now = t[1] * 1000 + t[2] / 1000
else
  now = ARGV[2] + 0
  -- A test clock is not Redis' clock: keep keys past the TTLs it computes.
  SLACK = 3600000
end

-- Decode, once: the specs (the algorithms' functions made once per call, and only for the algorithms
-- named), then each run as the loop comes to it.
local made, specs = {}, {}
local nspecs = ARGV[3] + 0
for s = 1, nspecs do
  local b = 3 + (s - 1) * 5
  local code = ARGV[b + 1]
  local fns = made[code]
  if not fns then
    fns = { algorithm(code) }
    made[code] = fns
  end
  local starts = ARGV[b + 5]
  local window = starts ~= '' and starts or ARGV[b + 3] + 0
  specs[s] = { fns[1], ARGV[b + 2] + 0, window, ARGV[b + 4] + 0, fns[2], fns[3] }
end

local reply, r, k = {}, 0, 2
local a, nargs = 4 + nspecs * 5, #ARGV
-- Then one loop: every decision of every run.
while a <= nargs do
  local count, op, cost, idTtl, slots = ARGV[a] + 0, ARGV[a + 1], ARGV[a + 2] + 0, ARGV[a + 3] + 0, ARGV[a + 4]
  local n = ARGV[a + 5] + 0
  -- The run's specs, looked up once for all its decisions.
  local run = {}
  for i = 1, n do
    run[i] = specs[ARGV[a + 5 + i] + 0]
  end
  a = a + 6 + n
  local consume, release, adjust = op == 'c', op == 'r', op == 'a' or op == 'r'
  -- A reservation's most wait (µs), or false: it takes the general body below.
  local reserve = not (consume or adjust or op == 'p') and sub(op, 2) + 0
  local from = 1
  if full then
    -- Out of memory: every decision read-only, checked as a peek at its cost. One that would write is
    -- refused (-1 per policy); the others answer as below.
    for _ = 1, count do
      local replay, allowed, most = false, true, 0
      if not adjust then
        if idTtl > 0 then
          local lapses = tonumber(call('GET', KEYS[k + n]))
          replay = lapses ~= nil and lapses > now
        end
        for i = 1, n do
          local spec = run[i]
          local ok, remaining, reset, retry = spec[1](KEYS[k + i - 1], now, spec[2], spec[3], spec[4], cost, false)
          if replay then retry = 0 end
          if retry > most then most = retry end
          local at = r + 3 * i
          reply[at - 2], reply[at - 1], reply[at] = remaining, reset, retry
          allowed = allowed and ok
        end
      end
      if adjust or not replay and (consume and allowed or reserve and most <= reserve) then
        for i = 1, n do
          local at = r + 3 * i
          reply[at - 2], reply[at - 1], reply[at] = -1, 0, 0
        end
      end
      r, k = r + 3 * n, k + n
      if idTtl > 0 then k = k + 1 end
    end
    count = 0
  end
  -- Two fast paths for runs of one policy and no id, each kept because it takes fewer Redis instructions
  -- than the general body below (bench/lua-instructions.mjs, 16 decisions per call, with and without it):
  if n == 1 and idTtl == 0 and not reserve then
    local spec = run[1]
    local step, limit, window, burst, adjustment = spec[1], spec[2], spec[3], spec[4], spec[5]
    if not adjust and slots == '' then
      -- A consume or a peek, no slot (most decisions): one step per decision, which checks and charges
      -- in one pass.
      for _ = 1, count do
        local _, remaining, reset, retry = step(KEYS[k], now, limit, window, burst, cost, consume)
        reply[r + 1] = remaining
        reply[r + 2] = reset
        reply[r + 3] = retry
        r = r + 3
        k = k + 1
      end
    else
      -- A slot taken or given back, or an adjustment (--pair, --settle).
      local checked = adjust and 1 or cost
      for _ = 1, count do
        local key = KEYS[k]
        if slots ~= '' then
          local space = find(slots, ' ', from, true)
          SLOT = space and sub(slots, from, space - 1) or sub(slots, from)
          if space then from = space + 1 end
        end
        if adjust then adjustment(key, now, limit, window, burst, cost) end
        local _, remaining, reset, retry = true, 0, 0, 0
        if not release then _, remaining, reset, retry = step(key, now, limit, window, burst, checked, consume) end
        reply[r + 1] = remaining
        reply[r + 2] = reset
        reply[r + 3] = retry
        r = r + 3
        k = k + 1
      end
    end
    count = 0
  end
  for _ = 1, count do
    if slots ~= '' then
      local space = find(slots, ' ', from, true)
      SLOT = space and sub(slots, from, space - 1) or sub(slots, from)
      if space then from = space + 1 end
    end
    local take, checked, replay = consume, cost, false
    if adjust then
      for i = 1, n do
        local spec = run[i]
        spec[5](KEYS[k + i - 1], now, spec[2], spec[3], spec[4], cost)
      end
      checked = 1
    elseif idTtl > 0 then
      -- The record holds when it lapses (ms, same clock as now), so that a test clock sees it lapse too.
      local lapses = tonumber(call('GET', KEYS[k + n]))
      replay = lapses ~= nil and lapses > now
      take = take and not replay
    end
    -- Every policy is checked before any is charged; one policy checks and charges in one pass.
    local apply, allowed = take and n == 1, true
    repeat
      local again = false
      allowed = true
      for i = 1, n do
        local ok, remaining, reset, retry = true, 0, 0, 0
        if not release then
          local spec = run[i]
          ok, remaining, reset, retry = spec[1](KEYS[k + i - 1], now, spec[2], spec[3], spec[4], checked, apply)
          if replay then retry = 0 end
        end
        local at = r + 3 * i
        reply[at - 2], reply[at - 1], reply[at] = remaining, reset, retry
        allowed = allowed and ok
      end
      if allowed and take and not apply then
        apply, again = true, true
      end
    until not again
    -- A reservation: checked above as a peek at its cost. Its turn is the longest wait (µs) of its policies.
    local reserved = false
    if reserve and not replay then
      local most = 0
      for i = 1, n do
        if reply[r + 3 * i] > most then most = reply[r + 3 * i] end
      end
      if most <= reserve then
        reserved = true
        for i = 1, n do
          local spec, at = run[i], r + 3 * i
          spec[6](KEYS[k + i - 1], now, spec[2], spec[3], spec[4], cost, now + most / 1000)
          local left = reply[at - 2] - cost
          reply[at - 2], reply[at] = left > 0 and left - left % 1 or 0, -reply[at]
        end
      end
    end
    r, k = r + 3 * n, k + n
    if idTtl > 0 then
      if allowed and take or reserved then
        local ttl = math.ceil(idTtl)
        call('SET', KEYS[k], format('%.17g', now + ttl), 'PX', format('%d', ttl + SLACK))
      end
      k = k + 1
    end
  end
  SLOT = ''
end
return reply
