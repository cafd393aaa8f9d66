  --------------------------------------------------------------------------------
  -- Errors and the grammar (src/grammar, src/error.rs): the same checks in the same
  -- order, the same texts (ERR, the kinds and the bounds: 04-facts.lua).
  --------------------------------------------------------------------------------

  -- Raises an error reply: the handler catches it and `failed` replies it.
  local function fail(msg)
    error({ rl = msg }, 0)
  end

  local function wrong_arity(command)
    fail(ERR.wrong_arity(command))
  end

  local function bad_integer(name, lo, hi)
    fail(ERR.bad_integer(name, lo, hi))
  end

  local function foreign(label)
    fail(ERR.foreign_value(label))
  end

  -- A client's bytes made safe to echo: at most 32, printable ASCII, else '?'.
  local function sanitize(s)
    local shown = gsub(sub(s, 1, 32), '[^\33-\126]', '?')
    if #s > 32 then shown = shown .. '...' end
    return shown
  end

  -- A run of ASCII digits as a number, saturated at 10^16 (every range checked
  -- here ends below that); nil unless non-empty and all digits.
  local function digits(s)
    if s == '' or find(s, '[^0-9]') then return nil end
    if #s <= 15 then return tonumber(s) end
    local t = gsub(s, '^0+', '')
    if t == '' then return 0 end
    if #t > 16 then return 1e16 end
    return tonumber(t)
  end

  local function count_from(name, s, lo, hi)
    local v = digits(s)
    if not v or v < lo or v > hi then bad_integer(name, lo, hi) end
    return v
  end

  -- A duration in milliseconds: digits with an optional unit, 1 ms to 3650 d.
  local function duration(name, s)
    local at = find(s, '[^0-9]')
    local n = digits(at and sub(s, 1, at - 1) or s)
    local unit = UNIT_MS[upper(at and sub(s, at) or '')]
    local ms = n and unit and n * unit
    if not ms or ms < 1 or ms > MAX_DURATION_MS then
      fail(ERR.bad_duration(name))
    end
    return ms
  end

  for name, k in pairs(KINDS) do k.name = name end
  local TAG_LABELS = {}
  for _, k in pairs(KINDS) do TAG_LABELS[k.tag] = k.label end

  -- The position of the rate among the positionals (the period follows it).
  local RATE_PARAM = { GCRA = 1, TOKENBUCKET = 2, LEAKY = 2 }

  -- `PENALTY d [ESCALATE max]` with PENALTY at args[i] (grammar/form.rs parse_penalty,
  -- each value checked as it is read): the rule { d = ms, max = ms or nil } and the
  -- index of its last word.
  local function read_penalty(args, i, last)
    if i + 1 > last then fail(ERR.missing_value('PENALTY')) end
    local d = duration('PENALTY', args[i + 1])
    if i + 2 > last or upper(args[i + 2]) ~= 'ESCALATE' then return { d = d }, i + 1 end
    if i + 3 > last then fail(ERR.missing_value('ESCALATE')) end
    local m = duration('ESCALATE', args[i + 3])
    if m < d then fail(ERR.escalate_below_penalty) end
    return { d = d, max = m }, i + 3
  end

  -- Parses the arguments after the key, `args[first..last]`. `form` is 'command',
  -- 'clause' (an RL.ALL clause: BURST, COST, REFUND or DEBIT and PENALTY), 'peek'
  -- (rl_peek: BURST and COST) or 'policy' (a policy's definition: BURST and PENALTY;
  -- never cached).
  local parse
  function parse(kind, args, first, last, form)
    local names = kind.params
    local np = #names
    if last - first + 1 < np then
      if form == 'clause' then
        fail(ERR.clause_arity(kind.name))
      end
      wrong_arity(form == 'peek' and 'rl.peek' or form == 'policy' and 'rl.policy|set'
        or kind.command)
    end
    local command = form == 'command'
    -- (REFUND and DEBIT: the forms that take any amount, grammar/amount.rs)
    local any_amount = command or form == 'clause'
    local req = { kind = kind, peek = form == 'peek' }
    local cost, refund, debit, burst, block, peek, penalty
    local quota, calendar = kind.name == 'QUOTA', {}
    local i = first + np
    local function once(current, option)
      if current ~= nil then fail(ERR.repeated_option(option)) end
      if i + 1 > last then fail(ERR.missing_value(option)) end
      i = i + 1
      return args[i]
    end
    while i <= last do
      local option = args[i]
      local up = upper(option)
      if up == 'COST' and form ~= 'policy' then
        cost = count_from('COST', once(cost, 'COST'), 0, MAX_COST)
      elseif any_amount and up == 'REFUND' then
        refund = count_from('REFUND', once(refund, 'REFUND'), 0, MAX_COST)
      elseif any_amount and up == 'DEBIT' then
        debit = count_from('DEBIT', once(debit, 'DEBIT'), 1, MAX_COST)
      elseif command and up == 'PEEK' then
        if peek then fail(ERR.repeated_option('PEEK')) end
        peek = true
      elseif command and up == 'BLOCK' then
        -- A script cannot wait: BLOCK is validated and the call decides at once.
        block = count_from('BLOCK', once(block, 'BLOCK'), 0, MAX_DURATION_MS)
      elseif quota and (up == 'TZ' or up == 'ANCHOR') then
        calendar[up] = once(calendar[up], up)
      elseif form ~= 'peek' and up == 'PENALTY' then
        if penalty then fail(ERR.repeated_option('PENALTY')) end
        penalty, i = read_penalty(args, i, last)
      elseif kind.name == 'GCRA' and up == 'BURST' then
        burst = count_from('BURST', once(burst, 'BURST'), 1, MAX_COUNT)
      else
        -- The options this form takes, exactly (grammar/form.rs expected_options).
        local expected
        if quota then
          expected = form == 'command' and 'TZ, ANCHOR, COST, REFUND, DEBIT, PEEK, BLOCK or PENALTY'
            or form == 'clause' and 'TZ, ANCHOR, COST, REFUND, DEBIT or PENALTY'
            or form == 'policy' and 'TZ, ANCHOR, PENALTY or SHADOW' or 'TZ, ANCHOR or COST'
        elseif form == 'command' then
          expected = kind.name == 'GCRA' and 'BURST, COST, REFUND, DEBIT, PEEK, BLOCK or PENALTY'
            or 'COST, REFUND, DEBIT, PEEK, BLOCK or PENALTY'
        elseif form == 'clause' then
          expected = kind.name == 'GCRA' and 'BURST, COST, REFUND, DEBIT or PENALTY'
            or 'COST, REFUND, DEBIT or PENALTY'
        elseif form == 'policy' then
          expected = kind.name == 'GCRA' and 'BURST, PENALTY or SHADOW' or 'PENALTY or SHADOW'
        else -- rl_peek: BURST and COST only
          expected = kind.name == 'GCRA' and 'BURST or COST' or 'COST'
        end
        if form == 'clause' then
          fail(ERR.unknown_clause_option(sanitize(option), kind.name, expected))
        end
        local command_name = form == 'peek' and 'rl.peek' or form == 'policy' and 'rl.policy|set'
          or kind.command
        fail(ERR.unknown_option(sanitize(option), command_name, expected))
      end
      i = i + 1
    end
    -- A debit is charged at once: never with another amount, PEEK or BLOCK (the
    -- first of them given is named; grammar/amount.rs finish).
    if debit then
      local with = cost and 'COST' or refund and 'REFUND' or peek and 'PEEK' or block and 'BLOCK'
      if with then fail(ERR.debit_with(with)) end
    elseif cost and refund then
      fail(ERR.cost_with_refund)
    end
    local p = {}
    for j = 1, np do
      local name, s = names[j], args[first + j - 1]
      if name == 'period' or name == 'window' then
        p[j] = mul(duration(name, s), NS_PER_MS) -- ns; up to 3.2e17: a limb table above 2^53
      elseif name == 'unit' then
        p[j] = upper(s)
        if p[j] ~= 'DAY' and p[j] ~= 'WEEK' and p[j] ~= 'MONTH' then fail(ERR.bad_unit) end
      elseif kind.name == 'SLIDINGLOG' and j == 1 then
        p[j] = count_from(name, s, 1, SLIDING_LOG_MAX)
      else
        p[j] = count_from(name, s, 1, MAX_COUNT)
      end
    end
    -- The GCRA family: one unit must cost at least 1 ns (period_ns >= rate), as
    -- the stored instant has nanosecond resolution (algorithm/schedule.rs checked_rate).
    local rate_at = RATE_PARAM[kind.name]
    if rate_at and cmp(p[rate_at], p[rate_at + 1]) > 0 then
      local rate, period = names[rate_at], names[rate_at + 1]
      fail(ERR.rate_too_high(rate, period))
    end
    -- RL.QUOTA's calendar: its zone, then its anchor (kinds/quota.rs).
    if quota then p[3] = kind.calendar(p[2], calendar.TZ, calendar.ANCHOR) end
    req.p = p
    req.burst = burst or 1
    req.cost = debit or refund or cost or 1
    req.refund = refund ~= nil
    req.debit = debit ~= nil
    req.peek = req.peek or peek or false
    -- (BLOCK decides at once; a denial it would wait out starts no penalty)
    req.block, req.penalty = block, penalty
    return req
  end

  -- Parsed requests by their arguments: an application sends the same few limiter
  -- configurations over and over. The cache is a trie per form and kind, one level
  -- per argument (no string is built to look a request up); a node holds its
  -- request under the key REQ. Invariant: a cached request is never modified;
  -- errors, and requests with an argument over CACHED_ARG_MAX bytes, are never
  -- cached; the cache is emptied when it reaches CACHE_MAX.
  -- A kind's `prepare` (set by its algorithm's section) adds the constants its
  -- fast path needs, once per request.
  local CACHE_MAX = 512
  local REQ = {}
  local roots, cached
  local function empty_cache()
    roots, cached = { command = {}, clause = {}, peek = {}, throttle = {} }, 0
    for _, form in pairs({ roots.command, roots.clause, roots.peek }) do
      for name in pairs(KINDS) do form[name] = {} end
    end
  end
  empty_cache()

  -- The request cached under args[first..last] in the trie `node`, or nil.
  local function cached_request(node, args, first, last)
    for i = first, last do
      node = node[args[i]]
      if not node then return nil end
    end
    return node[REQ]
  end

  -- An argument longer than this (a valid one is a number, a duration or an option
  -- word, unless padded with zeros) keeps its request out of the cache, so that the
  -- cache's memory stays bounded whatever clients send.
  local CACHED_ARG_MAX = 64

  -- Caches `req` under args[first..last] in the trie roots[a][b] (roots[a] when
  -- b is nil), first emptying the cache if it is full.
  local function cache_request(a, b, args, first, last, req)
    for i = first, last do
      if #args[i] > CACHED_ARG_MAX then return end
    end
    if cached >= CACHE_MAX then empty_cache() end
    local node = roots[a]
    if b then node = node[b] end
    for i = first, last do
      local arg = args[i]
      local child = node[arg]
      if not child then
        child = {}
        node[arg] = child
      end
      node = child
    end
    node[REQ], cached = req, cached + 1
  end

  local uncached_parse = parse
  parse = function(kind, args, first, last, form)
    local req = cached_request(roots[form][kind.name], args, first, last)
    if req then return req end
    req = uncached_parse(kind, args, first, last, form)
    if kind.prepare then kind.prepare(req) end
    cache_request(form, kind.name, args, first, last, req)
    return req
  end

