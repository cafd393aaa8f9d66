  --------------------------------------------------------------------------------
  -- RL.BAN key ms (commands/ban.rs): the key's penalty set by hand, ending ms from
  -- now (0 lifts it), whatever limiter the key holds, or on an absent key (which then
  -- holds only the ban). Nothing is written on an error.
  --------------------------------------------------------------------------------

  local function ban_body(keys, args)
    local key = one_key('rl_ban', keys)
    if #args ~= 1 then wrong_arity('rl.ban') end
    -- (decimal.rs parse_u64: 1 to 38 digits)
    local ms = #args[1] <= 38 and digits(args[1])
    if not ms or ms > MAX_DURATION_MS then bad_integer('ms', 0, MAX_DURATION_MS) end
    local now = now_ns()
    -- What the key holds, refused unless a limiter wrote it (ban.rs held_penalty).
    local held = {}
    local v = redis.pcall('GET', key)
    if type(v) == 'string' then
      if #v <= SHORT_STRING then foreign('RL.BAN') end
      local state, p = PEN.split(v, 'RL.BAN')
      -- A state starts as a string limiter's does: `<tag>:`.
      if state and not TAG_LABELS[match(state, '^([^:]*):')] then foreign('RL.BAN') end
      held = { exists = true, state = state, p = p }
    elseif v then
      if not find(v.err, '^WRONGTYPE') then fail(v.err) end
      -- Not a string: a sorted set that is a sliding log (store/log.rs as_log), or WRONGTYPE.
      held = PEN.log_held(key, 'RL.BAN')
      local first = held.first or redis.call('ZRANGE', key, '1', '1', 'WITHSCORES')
      if first[1] then
        local oldest = parse_entry(first[1], first[2])
        local last = redis.call('ZRANGE', key, '-1', '-1', 'WITHSCORES')
        local newest = parse_entry(last[1], last[2])
        if not oldest or not newest or oldest.sum and not newest.sum then foreign('RL.BAN') end
      end
    end
    if ms > 0 then
      local p = PEN.from_now(now, ms, held.p and held.p.k or ZERO)
      PEN.penalize(key, held, p, held.exists and PEN.expiry(key))
    elseif held.p then
      PEN.lift(key, held)
    end
    return held.exists and 1 or 0
  end
