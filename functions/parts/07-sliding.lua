  -- Sliding window counter (sliding.rs).
  local function decide_sliding(key, req, now)
    local kind, limitn, w = req.kind, req.p[1], req.p[2]
    local limit = int(limitn)
    local stored = read_string(key, kind, 3)
    local stored_start = stored and min(mul(narrow(stored[1]), NS_PER_MS), U64_MAX) or ZERO
    local at = max(now, stored_start)
    local start = sub_(at, mod(at, w))
    local prev, cur = ZERO, ZERO
    if stored then
      if cmp(stored_start, start) >= 0 then
        prev, cur = narrow(stored[2]), narrow(stored[3])
      elseif cmp(add(stored_start, w), start) >= 0 then
        prev = narrow(stored[3])
      end
    end
    local elapsed = sub_(at, start)
    local function decision(allowed, p, c, retry)
      local scaled = add(mul(p, sub_(w, elapsed)), mul(c, w))
      local window_end = sub_(add(start, w), now)
      local reset = ZERO
      if not is_zero(c) then
        reset = add(window_end, w)
      elseif not is_zero(p) then
        reset = window_end
      end
      return {
        allowed = allowed, limit = limitn, retry = retry, reset = reset,
        remaining = num(min(div(satsub(mul(limit, w), scaled), w), U64_MAX)),
      }
    end
    local function write_counts(p, c)
      if is_zero(p) and is_zero(c) then return { op = 'del' } end
      local start_ms = div(start, NS_PER_MS)
      return {
        op = 'set', value = 'sliding:' .. str(start_ms) .. ':' .. str(p) .. ':' .. str(c),
        expire = expire_ms(add(mul(start_ms, NS_PER_MS), add(w, w))),
      }
    end
    local n = int(req.cost)
    if req.refund then
      local from_current = min(n, cur)
      local from_previous = min(sub_(n, from_current), prev)
      local p2, c2 = sub_(prev, from_previous), sub_(cur, from_current)
      local write
      if not is_zero(add(from_current, from_previous)) then write = write_counts(p2, c2) end
      return decision(true, p2, c2, ZERO), write
    end
    if cmp(n, limit) > 0 then return decision(false, prev, cur, NEVER) end
    local weighted_prev = mul(prev, sub_(w, elapsed))
    local cn = add(cur, n)
    if cmp(add(weighted_prev, mul(cn, w)), mul(limit, w)) <= 0 then
      local write
      if not is_zero(n) then write = write_counts(prev, cn) end
      return decision(true, prev, cn, ZERO), write
    end
    local wait
    if cmp(cn, limit) <= 0 then
      -- prev > 0 here: with prev = 0 and cur + n <= limit the request was admitted.
      local e_t = sub_(w, div(mul(sub_(limit, cn), w), prev))
      if cmp(e_t, w) < 0 then wait = sub_(e_t, elapsed) end
    end
    if not wait then
      local e_next = ZERO
      if not is_zero(cur) then e_next = satsub(w, div(mul(sub_(limit, n), w), cur)) end
      wait = add(sub_(w, elapsed), e_next)
    end
    wait = add(wait, sub_(at, now))
    return decision(false, prev, cur, wait)
  end

