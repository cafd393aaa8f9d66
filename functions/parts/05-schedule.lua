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

  -- GCRA, token bucket, leaky bucket on one key (decision/limiter.rs decide_instant).
  local function decide_instant(key, req, now)
    local kind, p = req.kind, req.p
    local s
    if kind.name == 'GCRA' then
      s = { period = p[2], rate = int(p[1]), burst = int(req.burst), burstn = req.burst }
    else
      s = { period = p[3], rate = int(p[2]), burst = int(p[1]), burstn = p[1] }
    end
    local stored = read_string(key, kind, 1)
    local tat = stored and stored[1] or ZERO
    local step
    if req.refund then
      step = sched_refund(s, tat, now, req.cost)
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

