-- decide: many rate-limit decisions in one call. scripts/gen-lua.mjs prepends prelude.lua, the algorithm
-- files and ALGORITHMS, the table of each algorithm's function by its code.
-- KEYS:  one per (decision, policy), in the order of the decisions below.
-- ARGV[1]        now in ms, or '' for the server clock (TIME). Only tests pass a value.
-- ARGV[2]        P, the number of policy specs that follow
-- ARGV[3..2+4P]  per spec: algorithm code (its file's `code:` line), limit, window ms, burst (a calendar
--                quota's window is its candidate period starts, a string: see calendar.lua)
-- then runs of decisions alike: count, op ('c' consume | 'p' peek), cost, n, and n spec numbers
-- (1-based); the run stands for `count` decisions in a row, each with its own n KEYS.
-- Reply: per decision, per policy: remaining, resetMs, retryAfterUs (whole µs, rounded up, so the deny
-- cache can hold a denial to within 1 µs of its end). A decision is allowed when every retryAfterUs
-- is 0: each algorithm answers a denial with retryAfterUs >= 1.
-- A decision passes only if every policy passes, and a denial charges none of them.
local now
if ARGV[1] == '' then
  local t = call('TIME')
  now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
else
  now = tonumber(ARGV[1])
  -- A test clock is not Redis' clock: keep keys past the TTLs it computes.
  SLACK = 3600000
end

local specs = {}
local nspecs = tonumber(ARGV[2])
for s = 1, nspecs do
  local b = 2 + (s - 1) * 4
  specs[s] = { ALGORITHMS[ARGV[b + 1]], tonumber(ARGV[b + 2]), tonumber(ARGV[b + 3]) or ARGV[b + 3], tonumber(ARGV[b + 4]) }
end

local reply = {}
local r = 0
local a = 3 + nspecs * 4
local k = 1
local nargs = #ARGV
while a <= nargs do
  local count = tonumber(ARGV[a])
  local consume = ARGV[a + 1] == 'c'
  local cost = tonumber(ARGV[a + 2])
  local n = tonumber(ARGV[a + 3])
  if n == 1 then
    -- One policy: check and charge in one pass.
    local spec = specs[tonumber(ARGV[a + 4])]
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
    local run = {}
    for i = 1, n do
      run[i] = specs[tonumber(ARGV[a + 3 + i])]
    end
    for _ = 1, count do
      -- Several: check all before charging any.
      local results = {}
      local allowed = true
      for i = 1, n do
        local spec = run[i]
        local ok, remaining, reset, retry = spec[1](KEYS[k + i - 1], now, spec[2], spec[3], spec[4], cost, false)
        results[i] = { remaining, reset, retry }
        allowed = allowed and ok
      end
      if allowed and consume then
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
      k = k + n
    end
  end
  a = a + 4 + n
end
return reply
