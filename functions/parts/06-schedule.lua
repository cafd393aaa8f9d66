  --------------------------------------------------------------------------------
  -- The algorithms (src/algorithm). A decision is
  -- { allowed, limit (number), remaining (number), retry (big, or false: never),
  --   reset (big ns) }; an outcome adds `write` (nil when nothing changes).
  --------------------------------------------------------------------------------

  local NEVER = false

  local function narrow(v) return min(v, U64_MAX) end

  -- Virtual scheduling (schedule.rs): GCRA, token bucket and leaky bucket.
  local function sched_remaining(s, capacity, debt)
    return num(div(satsub(capacity, mul(debt, s.rate)), s.period))
  end

  local function sched_unchanged(s, capacity, debt, allowed, retry)
    return { allowed = allowed, queued = debt, remaining = sched_remaining(s, capacity, debt), retry = retry, reset = debt }
  end

  local function sched_step(s, tat, now, cost)
    local debt = satsub(tat, now)
    local capacity = mul(s.burst, s.period)
    if cost > s.burstn then return sched_unchanged(s, capacity, debt, false, NEVER) end
    if cost == 0 then return sched_unchanged(s, capacity, debt, true, ZERO) end
    local spend = mul(int(cost), s.period)
    local room = sub_(capacity, spend)
    if cmp(mul(debt, s.rate), room) <= 0 then
      local debt_after = add(debt, div(spend, s.rate))
      return {
        allowed = true, queued = debt, remaining = sched_remaining(s, capacity, debt_after),
        retry = ZERO, reset = debt_after, new_tat = add(now, debt_after),
      }
    end
    return sched_unchanged(s, capacity, debt, false, sub_(debt, div(room, s.rate)))
  end

  local function sched_refund(s, tat, now, units)
    local debt = satsub(tat, now)
    local back = div(mul(int(units), s.period), s.rate)
    local debt_after = satsub(debt, back)
    local step = sched_unchanged(s, mul(s.burst, s.period), debt_after, true, ZERO)
    if not is_zero(debt) and units > 0 then step.new_tat = add(now, debt_after) end
    return step
  end

  -- Charges `units` whatever the debt (DEBIT, schedule.rs debit): it grows by
  -- floor(units * T), saturating at (burst + MAX_DEBT) units' worth, and never
  -- shrinks (a debt already past the cap stays). Admitted; the retry is when a
  -- request of cost 1 is.
  local function sched_debit(s, tat, now, units)
    local debt = satsub(tat, now)
    local cap = div(mul(add(s.burst, MAX_DEBT), s.period), s.rate)
    local charged = add(debt, div(mul(int(units), s.period), s.rate))
    local debt_after = max(debt, min(charged, cap))
    -- A cost of 1 fits once debt * rate <= burst * T - T (as in sched_step).
    local room = mul(sub_(s.burst, ONE), s.period)
    local retry = ZERO
    if cmp(mul(debt_after, s.rate), room) > 0 then retry = sub_(debt_after, div(room, s.rate)) end
    local step = sched_unchanged(s, mul(s.burst, s.period), debt_after, true, retry)
    if cmp(debt_after, debt) > 0 then step.new_tat = add(now, debt_after) end
    return step
  end

  -- GCRA, token bucket, leaky bucket on one key (decision/limiter.rs decide_instant).
  local function decide_instant(v, req, now)
    local kind, p = req.kind, req.p
    local s
    if kind.name == 'GCRA' then
      s = { period = p[2], rate = int(p[1]), burst = int(req.burst), burstn = req.burst }
    else
      s = { period = p[3], rate = int(p[2]), burst = int(p[1]), burstn = p[1] }
    end
    local stored = read_string(v, kind, 1)
    local tat = stored and stored[1] or ZERO
    local step
    if req.refund then
      step = sched_refund(s, tat, now, req.cost)
    elseif req.debit then
      step = sched_debit(s, tat, now, req.cost)
    else
      step = sched_step(s, tat, now, req.cost)
      if kind.name == 'LEAKY' and step.allowed then step.retry = step.queued end
    end
    local write
    if step.new_tat then
      if cmp(step.new_tat, now) <= 0 then
        write = { op = 'del' }
      else
        write = { op = 'set', value = kind.tag .. ':' .. str(step.new_tat), expire = expire_ms(step.new_tat) }
      end
    end
    step.limit = s.burstn
    return step, write
  end

  -- The same in doubles (the fast path), for a period below FAST_NS.

  local function below_fast(x)
    if type(x) == 'number' and x < FAST_NS then return x end
    return HUGE
  end

  -- The stored instant of the value v, a state `kind` wrote, parsed and remembered
  -- (the decider looks it up first): { s, n }, or nil when it does not fit the fast
  -- path (including any value the exact path refuses).
  local function stored_instant(kind, v)
    if #v <= SHORT_STRING or sub(v, 1, #kind.prefix) ~= kind.prefix then return nil end
    local ts, tn = instant19(v, #kind.prefix + 1)
    if not ts then
      local hi, lo = match(v, kind.fast_pattern)
      if not hi or #hi > 15 then return nil end
      ts, tn = tonumber(hi), tonumber(lo)
    end
    return remember(kind, v, { ts, tn })
  end

  -- The fast decision of a request, as a closure over its constants (set once, when
  -- the request is parsed): P, R, B (period, rate, burst) and, for its cost n,
  -- L = floor((B - n) * P / R), the largest debt that admits it (HUGE when beyond
  -- any debt held here), and Q = floor(n * P / R), the debt admitting it adds (a
  -- refund's: the debt it gives back, HUGE when beyond any). Called with the key's
  -- value v and the instant (s, n), it returns allowed, remaining, retry (ns, or
  -- NEVER), reset (ns), and the write: nil (none), false (DEL), or the state's and
  -- its expiry's text; or nil when a value does not fit the fast path.
  local function instant_decider(kind, P, R, B, cost, refund)
    local L, Q
    if refund then
      Q = below_fast(div(mul(cost, P), R))
    elseif cost > 0 and cost <= B then
      L = below_fast(div(mul(B - cost, P), R))
      Q = below_fast(div(mul(cost, P), R))
      if Q == HUGE then return nil end
    end
    -- T, the ns one unit costs, when it is whole: the common case, where the
    -- remaining units need no product.
    local T = P % R == 0 and P / R or nil
    local prefix, leaky = kind.prefix, kind.name == 'LEAKY'

    -- floor(max(B * P - x * R, 0) / P) = B - ceil(x * R / P), at least 0: whole
    -- units admissible at debt x.
    local function left_at(x)
      if x == 0 then return B end
      local q
      if T then
        local r = x % T
        q = (x - r) / T
        if r > 0 then q = q + 1 end
      else
        q = muldiv_ceil(x, R, P)
        if not q then return 0 end
      end
      if q >= B then return 0 end
      return B - q
    end

    -- The texts of the state (s, n) + after ns, and of its expiry.
    local function written(s, n, after)
      return instant_texts(prefix, later(s, n, after))
    end

    return function(v, s, n)
      local debt = 0
      if v then
        local known = states[kind]
        local st = known and known[v] or stored_instant(kind, v)
        if not st then return nil end
        local ts, tn = st[1], st[2]
        if ts > s then
          -- (max(at - now, 0), nil beyond FAST_NS: inline, this runs on every call)
          if ts - s >= 8999999 then return nil end
          debt = (ts - s) * NS_PER_S + (tn - n)
        elseif ts == s and tn > n then
          debt = tn - n
        end
      end
      if refund then
        local after = debt - Q
        if after < 0 then after = 0 end
        if debt == 0 or cost == 0 then return true, left_at(after), 0, after end
        if after == 0 then return true, B, 0, 0, false end
        return true, left_at(after), 0, after, written(s, n, after)
      end
      if cost > B then return false, left_at(debt), NEVER, debt end
      if cost == 0 then return true, left_at(debt), leaky and debt or 0, debt end
      if debt <= L then
        local after = debt + Q
        if after >= FAST_NS then return nil end
        return true, left_at(after), leaky and debt or 0, after, written(s, n, after)
      end
      return false, left_at(debt), debt - L, debt
    end
  end

  local function prepare_instant(req)
    local p, gcra = req.p, req.kind.name == 'GCRA'
    local period, rate = p[gcra and 2 or 3], p[gcra and 1 or 2]
    local burst = gcra and req.burst or p[1]
    req.limit = burst
    -- (a debit is decided exactly: no fast path)
    if not req.debit and type(period) == 'number' and period < FAST_NS then
      req.fast = instant_decider(req.kind, period, rate, burst, req.cost, req.refund)
    end
  end

  for _, name in ipairs({ 'GCRA', 'TOKENBUCKET', 'LEAKY' }) do
    local kind = KINDS[name]
    kind.prepare = prepare_instant
    kind.prefix = kind.tag .. ':'
    kind.fast_pattern = '^' .. kind.tag .. ':(%d+)(%d%d%d%d%d%d%d%d%d)$'
  end

