  --------------------------------------------------------------------------------
  -- CL.THROTTLE key max_burst count period [quantity]: redis-cell's GCRA (cell.rs,
  -- commands/throttle.rs), its reply in seconds and its state: the bare TAT in ns.
  --------------------------------------------------------------------------------

  local MAX_PERIOD_S = 3650 * 86400
  local MAX_DVT_NS = mul(int(MAX_PERIOD_S), NS_PER_S)

  -- digits only, 1 to 20 of them, within [lo, hi]
  local function cell_integer(name, s, lo, hi)
    if s == '' or #s > 20 or find(s, '[^0-9]') then bad_integer(name, lo, hi) end
    return count_from(name, s, lo, hi)
  end

  -- redis-cell 0.5's seconds: `as_seconds_f64() as i64` (whole seconds plus the
  -- nanoseconds / 1e9, added in doubles, truncated), plus one if at least 1 ms is
  -- left over; ns >= 0 and at most 3650 days, so every step is exact but the sum's.
  local function reply_seconds(ns)
    local secs, rest = divmod(ns, NS_PER_S)
    local whole = floor(num(secs) + num(rest) / 1e9)
    if cmp(rest, NS_PER_MS) >= 0 then whole = whole + 1 end
    return whole
  end

  -- redis-cell's remaining: (dvt - ttl) / T in whole microseconds, truncated.
  local function cell_remaining(dvt, ttl, t, limit)
    local neg = cmp(ttl, dvt) > 0
    local next_abs = neg and sub_(ttl, dvt) or sub_(dvt, ttl)
    if neg and cmp(next_abs, t) >= 0 then return 0 end
    local r
    local t_us = div(t, NS_PER_US)
    if is_zero(t_us) then
      r = neg and 0 or num(div(next_abs, t))
    else
      -- At most 3.2e17 / 1000 here: exact in doubles, as Rust's `as f64` is.
      local q = num(div(next_abs, NS_PER_US)) / num(t_us)
      if neg then r = -floor(q) else r = floor(q) end
      if r == 0 then r = 0 end -- no negative zero
    end
    return r < limit and r or limit
  end

  -- CL.THROTTLE's arguments, checked, and its constants: the emission interval t
  -- and the delay variation tolerance dvt in ns, and the increment t * quantity;
  -- `fast` when all three are below FAST_NS.
  local function parse_throttle(args)
    if #args < 3 or #args > 4 then wrong_arity('cl.throttle') end
    local max_burst = cell_integer('max_burst', args[1], 0, MAX_COUNT)
    local count = cell_integer('count', args[2], 1, MAX_COUNT)
    local period = cell_integer('period (seconds)', args[3], 1, MAX_PERIOD_S)
    local quantity = args[4] and cell_integer('quantity', args[4], 0, MAX_COST) or 1
    -- redis-cell's float division, truncated: (period * 10^9) as f64 / count as f64.
    local emission = floor(period * 1e9 / count)
    if emission == 0 then
      fail(MSG.throttle_zero_rate)
    end
    local t = big(fmt('%.0f', emission))
    local limit = max_burst + 1
    local dvt = mul(t, int(limit))
    if cmp(dvt, MAX_DVT_NS) > 0 then
      fail(MSG.throttle_burst)
    end
    local increment = mul(t, int(quantity))
    local fast = cmp(dvt, FAST_NS) < 0 and cmp(increment, FAST_NS) < 0 and cmp(t, FAST_NS) < 0
    return { t = t, limit = limit, dvt = dvt, quantity = quantity, increment = increment,
      t_us = div(t, NS_PER_US), fast = fast }
  end

  -- reply_seconds for ns below FAST_NS, in doubles.
  local function cell_seconds(ns)
    local rest = ns % NS_PER_S
    local whole = floor((ns - rest) / NS_PER_S + rest / 1e9)
    if rest >= NS_PER_MS then whole = whole + 1 end
    return whole
  end

  -- redis-cell's GCRA in doubles, on a TAT of more than 9 digits: the reply and
  -- the TAT to write with its expiry (none when nil); nil when the TAT does not
  -- fit the fast path.
  local function fast_throttle(r, v, s, n)
    local debt = 0
    if v then
      local known = states.throttle
      local st = known and known[v]
      if not st then
        local ts, tn = instant19(v, 1)
        if not ts then
          if #v > 19 then return nil end
          local hi, lo = match(v, '^(%d+)(%d%d%d%d%d%d%d%d%d)$')
          if not hi then return nil end
          ts, tn = tonumber(hi), tonumber(lo)
        end
        st = remember('throttle', v, { ts, tn })
      end
      local ts, tn = st[1], st[2]
      if ts > s then
        -- (max(at - now, 0), nil beyond FAST_NS)
        if ts - s >= 8999999 then return nil end
        debt = (ts - s) * NS_PER_S + (tn - n)
      elseif ts == s and tn > n then
        debt = tn - n
      end
    end
    local after = debt + r.increment
    local limited = after > r.dvt
    local ttl, retry = after, nil
    if limited then
      ttl = debt
      if r.increment <= r.dvt then retry = after - r.dvt end
    end
    -- redis-cell's remaining, as cell_remaining computes it.
    local t, limit, left = r.t, r.limit, nil
    local neg = ttl > r.dvt
    local next_abs = neg and ttl - r.dvt or r.dvt - ttl
    if neg and next_abs >= t then
      left = 0
    elseif r.t_us == 0 then
      left = neg and 0 or (next_abs - next_abs % t) / t
    else
      local q = (next_abs - next_abs % NS_PER_US) / NS_PER_US / r.t_us
      left = neg and -floor(q) or floor(q)
      if left == 0 then left = 0 end -- no negative zero
    end
    if left > limit then left = limit end
    local out = { limited and 1 or 0, limit, left, retry and cell_seconds(retry) or -1, cell_seconds(ttl) }
    if limited or r.quantity == 0 then return out end
    local ts, tn = later(s, n, after)
    return out, instant_texts('', ts, tn)
  end

  -- (GET is read inline: this runs on every call.)
  local function throttle_body(keys, args)
    if #keys ~= 1 then one_key('cl_throttle', keys) end
    local key, last = keys[1], #args
    local r = cached_request(roots.throttle, args, 1, last)
    if not r then
      r = parse_throttle(args)
      cache_request('throttle', nil, args, 1, last, r)
    end
    local s, n = clock()
    local v = redis.pcall('GET', key)
    if v and type(v) == 'table' then fail(v.err or ERR.wrong_type) end
    if r.fast and s < FAST_S then
      local out, tat, expire = fast_throttle(r, v, s, n)
      if out then
        if tat then redis.call('SET', key, tat, 'PXAT', expire) end
        return out
      end
    end
    local t, limit, dvt, quantity, increment = r.t, r.limit, r.dvt, r.quantity, r.increment
    local now = ns_of_time(s, n)
    local stored
    if v then
      -- The state is a decimal TAT: at most 20 bytes (store/mod.rs SHORT_STRING).
      if v == '' or #v > SHORT_STRING or find(v, '[^0-9]') then foreign('CL.THROTTLE') end
      stored = big(v)
      if cmp(stored, U64_MAX) > 0 then foreign('CL.THROTTLE') end
    end
    local tat = stored and max(stored, now) or now
    local new_tat = add(tat, increment)
    local limited = cmp(new_tat, add(now, dvt)) > 0
    local ttl, retry, write
    if limited then
      ttl = sub_(tat, now)
      if cmp(increment, dvt) <= 0 then retry = sub_(new_tat, add(dvt, now)) end
    else
      ttl = sub_(new_tat, now)
      if quantity > 0 then write = min(new_tat, U64_MAX) end
    end
    local out = {
      limited and 1 or 0, limit, cell_remaining(dvt, ttl, t, limit),
      retry and reply_seconds(retry) or -1, reply_seconds(ttl),
    }
    if write then redis.call('SET', key, str(write), 'PXAT', str(expire_ms(write))) end
    return out
  end

