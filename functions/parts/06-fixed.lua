  -- Fixed window (fixed.rs).
  local function decide_fixed(key, req, now)
    local kind, limit, w = req.kind, req.p[1], req.p[2]
    local stored = read_string(key, kind, 2)
    local stored_start = stored and min(mul(narrow(stored[1]), NS_PER_MS), U64_MAX) or ZERO
    local at = max(now, stored_start)
    local start = sub_(at, mod(at, w))
    local count = (stored and cmp(stored_start, start) >= 0) and narrow(stored[2]) or ZERO
    local until_end = sub_(add(start, w), now)
    local function decision(allowed, c, retry)
      return {
        allowed = allowed, limit = limit, remaining = num(satsub(int(limit), c)),
        retry = retry, reset = is_zero(c) and ZERO or until_end,
      }
    end
    local function write_count(c)
      if is_zero(c) then return { op = 'del' } end
      local start_ms = div(start, NS_PER_MS)
      return {
        op = 'set', value = 'fixed:' .. str(start_ms) .. ':' .. str(c),
        expire = expire_ms(add(mul(start_ms, NS_PER_MS), w)),
      }
    end
    local n = req.cost
    if req.refund then
      local after = satsub(count, int(n))
      return decision(true, after, ZERO), cmp(after, count) < 0 and write_count(after) or nil
    end
    if n > limit then return decision(false, count, NEVER) end
    local after = add(count, int(n))
    if cmp(after, int(limit)) > 0 then return decision(false, count, until_end) end
    return decision(true, after, ZERO), n > 0 and write_count(after) or nil
  end

