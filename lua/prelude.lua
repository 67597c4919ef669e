-- prelude: what every algorithm shares, prepended to the script before the algorithms and decide.lua.
-- A stored state is one string of up to three numbers separated by spaces; numbers are written with
-- %d when whole (far cheaper for Redis than %.17g; both read back exactly).
local call, format, find, sub, match = redis.call, string.format, string.find, string.sub, string.match
-- Extra ms every TTL gets: 0 on the server clock; decide.lua raises it when a test passes its own
-- clock, which is not Redis' clock, so that keys outlive the TTLs computed on it.
local SLACK = 0
-- The lease (a concurrent slot's member) that the decision being decided takes or gives back, '' for
-- none. decide.lua sets it per decision: the algorithms' signatures stay alike, and only concurrent.lua
-- reads it.
local SLOT = ''

-- The numbers of a stored state string (nil for a missing key): one, two or three of them.
local function fields(raw)
  if not raw then return nil end
  local a = tonumber(raw)
  if a then return a end
  local s1 = find(raw, ' ', 1, true)
  local s2 = find(raw, ' ', s1 + 1, true)
  if not s2 then return tonumber(sub(raw, 1, s1 - 1)), tonumber(sub(raw, s1 + 1)) end
  return tonumber(sub(raw, 1, s1 - 1)), tonumber(sub(raw, s1 + 1, s2 - 1)), tonumber(sub(raw, s2 + 1))
end

-- The three numbers of a state string written as three (nil for a missing key): one pattern match
-- splits them, fewer C calls than finding and cutting each (sliding-window: 30,055 -> 29,360 Redis
-- instructions per decision, bench/lua-instructions.mjs --algorithm sw).
local function fields3(raw)
  if not raw then return nil end
  local x, y, z = match(raw, '^(%S+) (%S+) (%S+)$')
  return tonumber(x), tonumber(y), tonumber(z)
end

-- A number as a state field: %d when whole, else %.17g.
local function num(x)
  if x == x - x % 1 then return format('%d', x) end
  return format('%.17g', x)
end

-- The state this call last wrote (put) or deleted (drop), false for deleted, and its key: a read of that
-- key (the peek that answers an adjustment, say) takes it instead of a GET.
local written_key, written = nil, false

-- A key's state string, or false for a missing key.
local function get(key)
  if key == written_key then return written end
  return call('GET', key)
end

-- Writes a state. `keep`: the key already expires at the right instant, so keep its TTL (SET KEEPTTL:
-- a TTL rewrite costs Redis about a sixth of a decision); else it expires in `ttl` ms (rounded up).
local function put(key, value, keep, ttl)
  if keep then
    call('SET', key, value, 'KEEPTTL')
  else
    call('SET', key, value, 'PX', format('%d', ttl + (-ttl) % 1 + SLACK))
  end
  written_key, written = key, value
end

-- Deletes a state: the key is back to its start (a full bucket, an empty window).
local function drop(key)
  call('DEL', key)
  written_key, written = key, false
end
