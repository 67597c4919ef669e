-- rules: the store's side of the rules operators change at run time (packages/core/src/store/redis/rules.ts).
-- Not an algorithm: scripts/gen-lua.mjs ships it as a script of its own (RULES_SCRIPT). One script, an op
-- per call, so that every client the store takes runs it the one way it runs scripts (EVALSHA).
-- KEYS, a prefix's rules, one hash tag (store/keys.ts rulesKeys), so one slot: Cluster runs each call on one node.
--   [1] v      the version: bumped by every write
--   [2] set    hash: field = the rule's identity (kind, scope, pattern as a JSON array),
--              value = "<expiresAt ms, 0 for none>|<the rest of the rule as JSON>"
--   [3] log    sorted set: identity -> the version of its last change (written, removed, or swept once
--              lapsed). What a copy at version s lacks is the members scored above s: a read costs the
--              changes, not the rules. Trimmed from its oldest once it outgrows the rules by LOG_SLACK.
--   [4] exp    sorted set: identity -> expiresAt, of the rules with a ttl, so that a write finds lapsed ones
--   [5] floor  the log holds every change above this version: a copy older than it reads every rule
--   [6] seen   a limiter's copy read these rules lately: the store's time it did, for as long as it asked
-- ARGV[1]  op:
--   'd'  changes: ARGV[2] the copy's version (-1 for none), ARGV[3] ms to mark `seen` for ('0': do not).
--        Reply { version, now, full, id1, value1, ... }: full 1, every rule in force (a copy older than the
--        floor, or further behind than there are rules, or ahead of a store that was emptied); full 0,
--        the rules changed since, value '' for one removed or lapsed.
--   'w'  write: ARGV[2] identity, ARGV[3] the rule's JSON ('' deletes), ARGV[4] ttl ms ('0' for none):
--        the expiry is reckoned here, on the server clock, so every process reads one instant. Up to
--        SWEEP lapsed rules go with it, logged as removed. Reply { existed (1 when the rule was there and
--        in force), version, expiresAt }
--   's'  seen: reply the ms the `seen` mark has left (0 or less: no limiter read these rules lately)
--   'c'  count a denial (bans): KEYS[1] is then the counter, ARGV[2] the denials to add, ARGV[3] the
--        window in ms. The window starts at the first denial counted. Reply: the count after it.
-- `now` is the server's TIME in ms, the clock every rule's expiresAt is on.
-- Every op costs O(log rules) but a full read: a write, and a read of the changes since, do not depend
-- on how many rules there are.
local call = redis.call
local op = ARGV[1]
local t = call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local SWEEP = 100
local LOG_SLACK = 1024

if op == 'c' then
  local count = call('INCRBY', KEYS[1], ARGV[2])
  if count == tonumber(ARGV[2]) then call('PEXPIRE', KEYS[1], ARGV[3]) end
  return count
elseif op == 's' then
  return call('PTTL', KEYS[6])
end

local version = tonumber(call('GET', KEYS[1]) or '0')

-- A stored value is in force at `now` (its expiry is 0, none, or later).
local function live(value)
  local at = tonumber(string.sub(value, 1, string.find(value, '|', 1, true) - 1))
  return at == 0 or at > now
end

-- The version of the latest change the log holds (0: none). Below the version, writes were made by a
-- script that kept no log: only a full read has them.
local function logged()
  local top = call('ZREVRANGE', KEYS[3], 0, 0, 'WITHSCORES')
  return tonumber(top[2] or '0')
end

if op == 'd' then
  local since, mark = tonumber(ARGV[2]), tonumber(ARGV[3])
  if mark > 0 and call('PTTL', KEYS[6]) < mark then call('SET', KEYS[6], now, 'PX', mark) end
  if since == version then return { version, now, 0 } end
  local floor = tonumber(call('GET', KEYS[5]) or '0')
  if logged() < version then floor = version end
  local after = '(' .. since
  local full = since < floor or since > version or call('ZCOUNT', KEYS[3], after, '+inf') > call('HLEN', KEYS[2])
  local reply = { version, now, full and 1 or 0 }
  if full then
    local all = call('HGETALL', KEYS[2])
    for i = 1, #all, 2 do
      if live(all[i + 1]) then
        reply[#reply + 1] = all[i]
        reply[#reply + 1] = all[i + 1]
      end
    end
  else
    for _, id in ipairs(call('ZRANGEBYSCORE', KEYS[3], after, '+inf')) do
      local value = call('HGET', KEYS[2], id)
      reply[#reply + 1] = id
      reply[#reply + 1] = (value and live(value)) and value or ''
    end
  end
  return reply
elseif op == 'w' then
  local id, rule, ttl = ARGV[2], ARGV[3], tonumber(ARGV[4])
  local old = call('HGET', KEYS[2], id)
  local existed = (old and live(old)) and 1 or 0
  local at = 0
  if rule == '' then
    call('HDEL', KEYS[2], id)
    call('ZREM', KEYS[4], id)
  else
    if ttl > 0 then
      at = now + ttl
      call('ZADD', KEYS[4], at, id)
    else
      call('ZREM', KEYS[4], id)
    end
    call('HSET', KEYS[2], id, string.format('%d', at) .. '|' .. rule)
  end
  if logged() < version then call('SET', KEYS[5], version) end
  version = call('INCR', KEYS[1])
  call('ZADD', KEYS[3], version, id)
  local lapsed = call('ZRANGEBYSCORE', KEYS[4], '-inf', now, 'LIMIT', 0, SWEEP)
  if #lapsed > 0 then
    for _, gone in ipairs(lapsed) do
      call('HDEL', KEYS[2], gone)
      call('ZADD', KEYS[3], version, gone)
    end
    call('ZREM', KEYS[4], unpack(lapsed))
  end
  -- The log's oldest entries go, two a write, once it holds LOG_SLACK more than the rules: a copy that far
  -- behind reads every rule anyway, which costs no more.
  local excess = call('ZCARD', KEYS[3]) - call('HLEN', KEYS[2]) - LOG_SLACK
  if excess > 0 then
    local oldest = call('ZRANGE', KEYS[3], 0, math.min(excess, 2) - 1, 'WITHSCORES')
    call('ZREMRANGEBYRANK', KEYS[3], 0, #oldest / 2 - 1)
    call('SET', KEYS[5], oldest[#oldest])
  end
  return { existed, version, at }
end
return redis.error_reply('SLUICE_RULES unknown op ' .. tostring(op))
