-- rules: the store's side of the rules operators change at run time (packages/core/src/redis-rules.ts).
-- Not an algorithm: scripts/gen-lua.mjs ships it as a script of its own (RULES_SCRIPT). One script, an op
-- per call, so that every client the store takes runs it the one way it runs scripts (EVALSHA).
-- KEYS[1]  the version counter of a prefix's rules; bumped by every write, read every `refresh`
-- KEYS[2]  the hash of the rules: field = the rule's identity (kind, scope, pattern as a JSON array),
--          value = "<expiresAt ms, 0 for none>|<the rest of the rule as JSON>"
--          Both keys share one hash tag (keys.ts rulesKeys), so one slot: Cluster runs this as one call.
-- ARGV[1]  op:
--   'v'  version: reply { version, now }
--   'l'  load: reply { version, now, field1, value1, ... } of the rules still in force; the lapsed ones
--        are deleted on the way (no version bump: each copy already drops a rule at its expiresAt)
--   'w'  write: ARGV[2] field, ARGV[3] the rule's JSON ('' deletes), ARGV[4] ttl ms ('0' for none):
--        the expiry is reckoned here, on the server clock, so every process reads one instant.
--        Reply { existed (1 when the field was there and in force), version, expiresAt }
--   'c'  count a denial (bans): KEYS[1] is then the counter, ARGV[2] the denials to add, ARGV[3] the
--        window in ms. The window starts at the first denial counted. Reply: the count after it.
-- `now` is the server's TIME in ms, the clock every rule's expiresAt is on.
local call = redis.call
local op = ARGV[1]
local t = call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

if op == 'c' then
  local count = call('INCRBY', KEYS[1], ARGV[2])
  if count == tonumber(ARGV[2]) then call('PEXPIRE', KEYS[1], ARGV[3]) end
  return count
end

local version = tonumber(call('GET', KEYS[1]) or '0')

-- The instant a stored value lapses (0: never).
local function expiry(value)
  local bar = string.find(value, '|', 1, true)
  return tonumber(string.sub(value, 1, bar - 1))
end

if op == 'v' then
  return { version, now }
elseif op == 'l' then
  local all = call('HGETALL', KEYS[2])
  local reply, lapsed = { version, now }, {}
  for i = 1, #all, 2 do
    local at = expiry(all[i + 1])
    if at > 0 and at <= now then
      lapsed[#lapsed + 1] = all[i]
    else
      reply[#reply + 1] = all[i]
      reply[#reply + 1] = all[i + 1]
    end
  end
  -- HDEL in bounded batches: unpack has a limit on the number of arguments.
  for i = 1, #lapsed, 1000 do
    call('HDEL', KEYS[2], unpack(lapsed, i, math.min(i + 999, #lapsed)))
  end
  return reply
elseif op == 'w' then
  local old = call('HGET', KEYS[2], ARGV[2])
  local existed = 0
  if old then
    local at = expiry(old)
    if at == 0 or at > now then existed = 1 end
  end
  local at = 0
  if ARGV[3] == '' then
    call('HDEL', KEYS[2], ARGV[2])
  else
    local ttl = tonumber(ARGV[4])
    if ttl > 0 then at = now + ttl end
    call('HSET', KEYS[2], ARGV[2], string.format('%d', at) .. '|' .. ARGV[3])
  end
  version = call('INCR', KEYS[1])
  return { existed, version, at }
end
return redis.error_reply('SLUICE_RULES unknown op ' .. tostring(op))
