  -- A window's count step (fixed.rs, quota.rs): a request of req.cost on the
  -- `count` units a window of `limit` holds, the window ending `until_end` ns
  -- from now; `write_count(c)` is the write that stores count c. Returns the
  -- decision and the write (nil: none). REFUND gives units back (the count never
  -- below 0); DEBIT (fixed.rs debit) passes the limit, up to limit + MAX_DEBT,
  -- and never shrinks the count, a cost of 1 admitted at once below the limit,
  -- else at the window's end; otherwise the cost is admitted when it fits. The
  -- fixed window's and the calendar quota's (07-quota.lua) exact paths.
  local function charge_window(req, limit, count, until_end, write_count)
    local function decision(allowed, c, retry)
      return {
        allowed = allowed, limit = limit, remaining = num(satsub(int(limit), c)),
        retry = retry, reset = is_zero(c) and ZERO or until_end,
      }
    end
    local n = req.cost
    if req.refund then
      local after = satsub(count, int(n))
      return decision(true, after, ZERO), cmp(after, count) < 0 and write_count(after) or nil
    end
    if req.debit then
      local after = max(count, min(add(count, int(n)), int(limit + MAX_DEBT)))
      local retry = cmp(after, int(limit)) < 0 and ZERO or until_end
      return decision(true, after, retry), cmp(after, count) > 0 and write_count(after) or nil
    end
    if n > limit then return decision(false, count, NEVER) end
    local after = add(count, int(n))
    if cmp(after, int(limit)) > 0 then return decision(false, count, until_end) end
    return decision(true, after, ZERO), n > 0 and write_count(after) or nil
  end

  -- Fixed window (fixed.rs).
  local function decide_fixed(v, req, now)
    local kind, limit, w = req.kind, req.p[1], req.p[2]
    local stored = read_string(v, kind, 2)
    local stored_start = stored and min(mul(narrow(stored[1]), NS_PER_MS), U64_MAX) or ZERO
    local at = max(now, stored_start)
    local start = sub_(at, mod(at, w))
    local count = (stored and cmp(stored_start, start) >= 0) and narrow(stored[2]) or ZERO
    return charge_window(req, limit, count, sub_(add(start, w), now), function(c)
      if is_zero(c) then return { op = 'del' } end
      local start_ms = div(start, NS_PER_MS)
      return {
        op = 'set', value = 'fixed:' .. str(start_ms) .. ':' .. str(c),
        expire = expire_ms(add(mul(start_ms, NS_PER_MS), w)),
      }
    end)
  end

  -- Windows in doubles (the fast paths of fixed and sliding windows): the window
  -- of width w_ms that holds `at`, the later of now (s, n) and the start of the
  -- window holding a stored window start (whole ms, or nil; sliding.rs view). Returns the window's start in ms, ns from now to its
  -- end, ns from its start to `at` (elapsed) and from now to `at`; nil when the
  -- end is `bound_ms` or more ahead. (Windows are whole ms, so a window holds
  -- `at` exactly when it holds floor(at / 1 ms).)
  local function fast_window(w_ms, stored_ms, s, n, bound_ms)
    local sub_ms = n % NS_PER_MS
    local now_ms = s * 1000 + (n - sub_ms) / NS_PER_MS
    local at_ms, frac, ahead = now_ms, sub_ms, 0
    local floor_ms = stored_ms and stored_ms - stored_ms % w_ms
    if floor_ms and floor_ms > now_ms then
      at_ms, frac, ahead = floor_ms, 0, (floor_ms - now_ms) * NS_PER_MS - sub_ms
    end
    local start_ms = at_ms - at_ms % w_ms
    local to_end = start_ms + w_ms - now_ms
    if to_end >= bound_ms then return nil end
    return start_ms, to_end * NS_PER_MS - sub_ms, (at_ms - start_ms) * NS_PER_MS + frac, ahead
  end

  -- A stored window start (ms) the fast paths take: no more than 18e12 ms, so
  -- that it is below U64_MAX ns (which the exact path caps it at).
  local FAST_START_MS = 18000000000000

  -- The numbers of the window state v (`pattern` captures them): { start_ms,
  -- counts... }, or nil when one does not fit the fast path.
  local function stored_numbers(kind, v, pattern)
    local known = states[kind]
    local st = known and known[v]
    if st then return st end
    if #v <= SHORT_STRING then return nil end
    local a, b, c = match(v, pattern)
    if not a or #a > 15 or #b > 13 or (c and #c > 13) then return nil end
    a = tonumber(a)
    if a > FAST_START_MS then return nil end
    return remember(kind, v, { a, tonumber(b), c and tonumber(c) })
  end

  -- The fixed window's decision in doubles, as a closure over the request's
  -- constants (see instant_decider). The texts that depend only on the window's
  -- start (the state's prefix, the expiry) are kept for the last window written.
  local function fixed_decider(w_ms, limit, cost, refund)
    local text_start, head, expire = -1, nil, nil
    return function(v, s, n)
      local stored_ms, count = nil, 0
      if v then
        local st = stored_numbers(KINDS.FIXED, v, '^fixed:(%d+):(%d+)$')
        if not st then return nil end
        stored_ms, count = st[1], st[2]
      end
      local start_ms, until_end = fast_window(w_ms, stored_ms, s, n, 8900000000)
      if not start_ms then return nil end
      if stored_ms and stored_ms < start_ms then count = 0 end
      local after
      if refund then
        after = count > cost and count - cost or 0
        if after == count then
          return true, limit > after and limit - after or 0, 0, after > 0 and until_end or 0
        end
      else
        local left = limit > count and limit - count or 0
        local reset = count > 0 and until_end or 0
        if cost > limit then return false, left, NEVER, reset end
        after = count + cost
        if after > limit then return false, left, until_end, reset end
        if cost == 0 then return true, left, 0, reset end
      end
      local left = limit > after and limit - after or 0
      if after == 0 then return true, left, 0, 0, false end
      if start_ms ~= text_start then
        text_start, head, expire = start_ms, 'fixed:' .. dec(start_ms) .. ':', dec(start_ms + w_ms)
      end
      return true, left, 0, until_end, head .. dec(after), expire
    end
  end

  local function prepare_fixed(req)
    local w = req.p[2]
    req.limit = req.p[1]
    if not req.debit and type(w) == 'number' and w < FAST_NS then
      req.fast = fixed_decider(w / NS_PER_MS, req.limit, req.cost, req.refund)
    end
  end

  KINDS.FIXED.prepare = prepare_fixed

