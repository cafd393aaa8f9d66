  -- Sliding window counter (sliding.rs). `fields`, if given, are the state's
  -- fields in place of the value v's (a debit's state after its charge).
  local function decide_sliding(v, req, now, fields)
    local kind, limitn, w = req.kind, req.p[1], req.p[2]
    local limit = int(limitn)
    local stored = fields or read_string(v, kind, 3)
    local stored_start = stored and min(mul(narrow(stored[1]), NS_PER_MS), U64_MAX) or ZERO
    -- A clock behind the stored start decides at the start of the window holding
    -- it (sliding.rs view): what a write here stores, so the reply describes it.
    local at = max(now, sub_(stored_start, mod(stored_start, w)))
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
    if req.debit then
      -- DEBIT (sliding.rs debit): the current window's count passes the limit, up
      -- to limit + MAX_DEBT, and never shrinks; the retry is the wait a denied cost
      -- of 1 would get on the state after the charge.
      local c2 = max(cur, min(add(cur, n), add(limit, MAX_DEBT)))
      local start_ms = div(start, NS_PER_MS)
      local one = decide_sliding(nil, { kind = kind, p = req.p, cost = 1 }, now, { start_ms, prev, c2 })
      local write
      if cmp(c2, cur) > 0 then write = write_counts(prev, c2) end
      return decision(true, prev, c2, one.allowed and ZERO or one.retry), write
    end
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

  -- The same in doubles (the fast path), for windows below SLIDING_FAST_MS, whose
  -- sums of up to four waits and windows stay below FAST_NS.
  local SLIDING_FAST_MS = 2000000000

  -- Remaining at weights p (previous window) and c (current), `elapsed` into the
  -- window: floor(max(limit * w - p * (w - elapsed) - c * w, 0) / w).
  local function sliding_left(limit, w, p, c, elapsed)
    if c >= limit then return 0 end
    local q = muldiv_ceil(p, w - elapsed, w)
    if q >= limit - c then return 0 end
    return limit - c - q
  end

  -- The sliding window's decision in doubles, as a closure over the request's
  -- constants (see instant_decider).
  local function sliding_decider(w, limit, cost, refund)
    local w_ms = w / NS_PER_MS
    return function(v, s, n)
      local stored_ms, sp, sc
      if v then
        local st = stored_numbers(KINDS.SLIDING, v, '^sliding:(%d+):(%d+):(%d+)$')
        if not st then return nil end
        stored_ms, sp, sc = st[1], st[2], st[3]
      end
      local start_ms, window_end, elapsed, ahead =
        fast_window(w_ms, stored_ms, s, n, SLIDING_FAST_MS)
      if not start_ms then return nil end
      local prev, cur = 0, 0
      if stored_ms then
        if stored_ms >= start_ms then
          prev, cur = sp, sc
        elseif stored_ms + w_ms >= start_ms then
          prev = sc
        end
      end
      local allowed, retry, p2, c2, write = true, 0, prev, cur, false
      if refund then
        local from_current = cost < cur and cost or cur
        local from_previous = cost - from_current
        if from_previous > prev then from_previous = prev end
        p2, c2 = prev - from_previous, cur - from_current
        write = from_current + from_previous > 0
      elseif cost > limit then
        allowed, retry = false, NEVER
      else
        local cn = cur + cost
        if cn <= limit and mul_cmp(prev, w - elapsed, limit - cn, w) <= 0 then
          c2, write = cn, cost > 0
        else
          -- The first instant the estimate admits it, in this window or the next
          -- (prev > 0 here: with prev = 0 and cur + n <= limit it was admitted).
          allowed, retry = false, nil
          if cn <= limit then
            local q = muldiv(limit - cn, w, prev)
            if q > 0 then retry = w - q - elapsed end
          end
          if not retry then
            local e_next = 0
            if cur > 0 then
              local q = muldiv(limit - cost, w, cur)
              if q and q < w then e_next = w - q end
            end
            retry = w - elapsed + e_next
          end
          retry = retry + ahead
        end
      end
      local reset = c2 > 0 and window_end + w or (p2 > 0 and window_end or 0)
      local left = sliding_left(limit, w, p2, c2, elapsed)
      if not write then return allowed, left, retry, reset end
      if p2 == 0 and c2 == 0 then return true, left, 0, reset, false end
      return true, left, 0, reset, 'sliding:' .. dec(start_ms) .. ':' .. dec(p2) .. ':' .. dec(c2),
        dec(start_ms + 2 * w_ms)
    end
  end

  local function prepare_sliding(req)
    local w = req.p[2]
    req.limit = req.p[1]
    if not req.debit and type(w) == 'number' and w < SLIDING_FAST_MS * NS_PER_MS then
      req.fast = sliding_decider(w, req.limit, req.cost, req.refund)
    end
  end

  KINDS.SLIDING.prepare = prepare_sliding
