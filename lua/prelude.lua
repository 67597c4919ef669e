-- prelude: what every algorithm shares, prepended to the script before the algorithms and decide.lua.
local call, format, find, sub = redis.call, string.format, string.find, string.sub
local pack, unpack_state, byte = struct.pack, struct.unpack, string.byte
-- Extra ms every TTL gets: 0 on the server clock; decide.lua raises it when a test passes its own
-- clock, which is not Redis' clock, so that keys outlive the TTLs computed on it.
local SLACK = 0
-- The lease (a concurrent slot's member) that the decision being decided takes or gives back, '' for
-- none. decide.lua sets it per decision: the algorithms' signatures stay alike, and only concurrent.lua
-- reads it.
local SLOT = ''

-- A stored state (token bucket, fixed and sliding window) is one, two or three numbers, written packed:
-- each a big-endian double (struct.pack '>d'), exact for every value a state holds. Writing and reading
-- text costs Redis a sprintf per write and two strtod per number read (tonumber parses twice), which
-- bench/lua-instructions.mjs shows in every decision. Text states ("q r", numbers separated by spaces:
-- what earlier versions wrote) are read as well, so that counters live through an upgrade: text starts
-- with a digit, a packed state never does (its first number is a time or a window index, 0 or >= 1,
-- whose first byte is 0x00 or >= 0x3F).

-- The numbers of a stored state (nil for a missing key).
local function fields(raw)
  if not raw then return nil end
  local n, first = #raw, byte(raw)
  if first < 48 or first > 57 then
    -- struct.unpack answers the next position after the numbers: not a number of the state.
    if n == 8 then return (unpack_state('>d', raw)) end
    if n == 16 then
      local a, b = unpack_state('>dd', raw)
      return a, b
    end
    local a, b, c = unpack_state('>ddd', raw)
    return a, b, c
  end
  local s1 = find(raw, ' ', 1, true)
  if not s1 then return raw + 0 end
  local s2 = find(raw, ' ', s1 + 1, true)
  if not s2 then return sub(raw, 1, s1 - 1) + 0, sub(raw, s1 + 1) + 0 end
  return sub(raw, 1, s1 - 1) + 0, sub(raw, s1 + 1, s2 - 1) + 0, sub(raw, s2 + 1) + 0
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
