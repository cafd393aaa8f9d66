  -- Lease sets: members `lease:<id>`, scores the lapse times in microseconds,
  -- handled as Lua numbers (exact below 2^53 us, the year 2255).
  local LEASE_PREFIX = 'lease:'
  local TWO64 = 18446744073709551616

  -- A score as Rust's `score as u64` reads it.
  local function score_u64(s)
    s = tonumber(s)
    if not s or s ~= s or s <= 0 then return 0 end
    if s >= TWO64 then return TWO64 end
    return floor(s)
  end

  local function bignum(x)
    if x >= TWO64 then return U64_MAX end
    return big(fmt('%.0f', x))
  end

  local function open_leases(key)
    local first = first_entry(key)
    if not first[1] then return nil end
    local function is_lease(r)
      local s = tonumber(r[2])
      return sub(r[1], 1, #LEASE_PREFIX) == LEASE_PREFIX and s >= 0 and s % 1 == 0 and s < TWO64
    end
    if not is_lease(first)
      or not is_lease(redis.call('ZRANGE', key, '-1', '-1', 'WITHSCORES')) then
      foreign('RL.ACQUIRE')
    end
    local v = {}
    function v.held_at(now_us)
      local len = redis.call('ZCARD', key)
      local lapsed = redis.call('ZCOUNT', key, '-inf', fmt('%.0f', now_us))
      return len > lapsed and len - lapsed or 0
    end
    function v.lapse_of(member)
      local s = redis.call('ZSCORE', key, member)
      return s and score_u64(s) or nil
    end
    function v.nth_lapse_after(now_us, k)
      local r = redis.call('ZRANGEBYSCORE', key, '(' .. fmt('%.0f', now_us), '+inf', 'WITHSCORES', 'LIMIT', k, 1)
      return r[1] and score_u64(r[2]) or nil
    end
    function v.nth_latest(k)
      local r = redis.call('ZRANGE', key, -1 - k, -1 - k, 'WITHSCORES')
      return r[1] and score_u64(r[2]) or nil
    end
    return v
  end

  local NO_LEASES = {
    held_at = function() return 0 end,
    lapse_of = function() return nil end,
    nth_lapse_after = function() return nil end,
    nth_latest = function() return nil end,
  }

  local function latest_other(view, own, now_us)
    local latest = view.nth_latest(0)
    local other = latest
    if own and latest == own then other = view.nth_latest(1) end
    if other and other > now_us then return other end
    return nil
  end

  local function check_id(id)
    if #id < 1 or #id > MAX_LEASE_ID then fail(MSG.lease_id) end
  end

  -- RL.ACQUIRE key limit timeout lease_id [PEEK] [BLOCK ms] (lease.rs): the
  -- parameters, then the options left to right.
  local function parse_acquire(args, first)
    local limit = count_from('limit', args[first], 1, SLIDING_LOG_MAX)
    local timeout_ms = duration('timeout', args[first + 1])
    check_id(args[first + 2])
    local peek, block = false, nil
    local i = first + 3
    while i <= #args do
      local up = upper(args[i])
      if up == 'PEEK' then
        if peek then fail(ERR.repeated_option('PEEK')) end
        peek = true
      elseif up == 'BLOCK' then
        -- A script cannot wait: BLOCK is validated and the call decides at once.
        if block then fail(ERR.repeated_option('BLOCK')) end
        if i + 1 > #args then fail(ERR.missing_value('BLOCK')) end
        i = i + 1
        block = count_from('BLOCK', args[i], 0, MAX_DURATION_MS)
      else
        fail(ERR.unknown_option(sanitize(args[i]), 'rl.acquire', 'PEEK or BLOCK'))
      end
      i = i + 1
    end
    return { limit = limit, timeout_us = timeout_ms * 1000, id = args[first + 2], peek = peek }
  end

  local function acquire(key, req, now)
    local view = open_leases(key) or NO_LEASES
    local member = LEASE_PREFIX .. req.id
    local now_us = num(div(now, NS_PER_US))
    local function until_(l) return satsub(mul(bignum(l), NS_PER_US), now) end
    local held = view.held_at(now_us)
    local own = view.lapse_of(member)
    local renewal = own ~= nil and own > now_us
    if renewal or held < req.limit then
      local lapse = now_us + req.timeout_us
      if renewal and own > lapse then lapse = own end
      local latest = latest_other(view, own, now_us)
      if not latest or latest < lapse then latest = lapse end
      local held_after = renewal and held or held + 1
      local d = { allowed = true, limit = req.limit, retry = ZERO, reset = until_(latest),
        remaining = req.limit > held_after and req.limit - held_after or 0 }
      local cut, lapse_s = fmt('%.0f', now_us), fmt('%.0f', lapse)
      local expire = str(expire_ms(mul(bignum(latest), NS_PER_US)))
      return d, { op = 'log', apply = function(k)
        trim_through(k, cut)
        redis.call('ZADD', k, lapse_s, member)
        redis.call('PEXPIREAT', k, expire)
      end }
    end
    local retry = view.nth_lapse_after(now_us, held - req.limit)
    local latest = view.nth_latest(0)
    if latest and latest <= now_us then latest = nil end
    return { allowed = false, limit = req.limit, remaining = 0,
      retry = retry and until_(retry) or NEVER, reset = latest and until_(latest) or ZERO }
  end

  local function acquire_body(keys, args)
    local key = one_key('rl_acquire', keys)
    if #args < 3 then wrong_arity('rl.acquire') end
    local req = parse_acquire(args, 1)
    local d, write = acquire(key, req, now_ns())
    if write and not req.peek then commit(key, write) end
    return reply(d)
  end

  peek_acquire = function(key, args)
    return reply((acquire(key, parse_acquire(args, 2), now_ns())))
  end

  -- RL.RELEASE key lease_id: 1 if the lease was held (and is now released), else 0.
  local function release_body(keys, args)
    local key = one_key('rl_release', keys)
    if #args ~= 1 then wrong_arity('rl.release') end
    check_id(args[1])
    local member = LEASE_PREFIX .. args[1]
    local now = now_ns()
    local view = open_leases(key) or NO_LEASES
    local now_us = num(div(now, NS_PER_US))
    local own = view.lapse_of(member)
    if not (own and own > now_us) then return 0 end
    local latest = view.held_at(now_us) > 1 and latest_other(view, own, now_us)
    if not latest then
      redis.call('DEL', key)
    else
      trim_through(key, fmt('%.0f', now_us))
      redis.call('ZREM', key, member)
      redis.call('PEXPIREAT', key, str(expire_ms(mul(bignum(latest), NS_PER_US))))
    end
    return 1
  end

