  --------------------------------------------------------------------------------
  -- State on keys (src/codec.rs, src/store): read what a key holds, write with an
  -- absolute expiry exactly what the module writes, so the replicated effects
  -- (SET ... PXAT, DEL, ZADD, ZREM, PEXPIREAT) and the state are byte-identical.
  --------------------------------------------------------------------------------

  -- GET, or the error reply it gave (WRONGTYPE for another type; NOPERM ...).
  local function get(key)
    local v = redis.pcall('GET', key)
    if type(v) == 'table' then fail(v.err or ERR.wrong_type) end
    return v
  end

  -- Strings this short may be int-encoded values, which the module tells apart by
  -- length alone; every string state is longer (store/mod.rs SHORT_STRING).
  local SHORT_STRING = 20

  -- The decimal fields of the string state `kind` wrote, from the key's state `v`
  -- (nil if absent; a value of at most SHORT_STRING bytes was refused before, and a
  -- penalty split off: 09-penalties.lua).
  local function read_string(v, kind, nfields)
    if not v then return nil end
    local parts, pos = {}, 1
    while true do
      local c = find(v, ':', pos, true)
      if not c then
        parts[#parts + 1] = sub(v, pos)
        break
      end
      parts[#parts + 1] = sub(v, pos, c - 1)
      pos = c + 1
      if #parts > nfields + 1 then break end
    end
    if parts[1] ~= kind.tag then
      local found = TAG_LABELS[parts[1]]
      if found then
        fail(ERR.other_algorithm(found, kind.label))
      end
      foreign(kind.label)
    end
    if #parts ~= nfields + 1 then foreign(kind.label) end
    local fields = {}
    for i = 2, nfields + 1 do
      local f = parts[i]
      if f == '' or #f > 38 or find(f, '[^0-9]') then foreign(kind.label) end
      fields[i - 1] = big(f)
    end
    return fields
  end

  -- An absolute time in ns as a Redis expiry in ms: rounded up, capped at 10^15.
  local function expire_ms(at_ns)
    return min(div_ceil(at_ns, NS_PER_MS), MAX_EXPIRE_MS)
  end

  -- Applies a write decided earlier (its expiry: an integer, or its decimal text);
  -- any other than SET and DEL is its own `apply(key, w)`.
  local function commit(key, w)
    if w.op == 'set' then
      local expire = w.expire
      if type(expire) ~= 'string' then expire = str(expire) end
      redis.call('SET', key, w.value, 'PXAT', expire)
    elseif w.op == 'del' then
      redis.call('DEL', key)
    else
      w.apply(key, w)
    end
  end

  -- TIME's seconds as a number, parsed once per second.
  local second_text, second = nil, 0

  -- The server's clock: TIME's seconds, and its microseconds as nanoseconds. The
  -- seconds are parsed once per second, six-digit microseconds from their bytes
  -- (tonumber costs as much as a decision).
  local function clock()
    local t = redis.call('TIME')
    if t[1] ~= second_text then second_text, second = t[1], tonumber(t[1]) end
    local u = t[2]
    if #u == 6 then
      local a, b, c, d, e, f = byte(u, 1, 6)
      return second, (((((a * 10 + b) * 10 + c) * 10 + d) * 10 + e) * 10 + f - 5333328) * NS_PER_US
    end
    return second, tonumber(u) * NS_PER_US
  end

  -- The server's clock in ns, as an exact integer.
  local function now_ns()
    return ns_of_time(clock())
  end

