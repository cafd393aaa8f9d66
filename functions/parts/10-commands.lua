  --------------------------------------------------------------------------------
  -- The commands.
  --------------------------------------------------------------------------------

  local DECIDE = {
    GCRA = decide_instant, TOKENBUCKET = decide_instant, LEAKY = decide_instant,
    FIXED = decide_fixed, SLIDING = decide_sliding, QUOTA = decide_quota,
  }

  -- Filled in below the sliding log section.
  local decide_log
  -- Filled in with the lease sets: RL.ACQUIRE ... PEEK for rl_peek.
  local peek_acquire

  -- Every key is gone, and its limiter idle, at the expiry cap at the latest: no
  -- decision promises a wait beyond it (decision/limiter.rs, within_expiry_cap).
  local MAX_EXPIRE_NS = mul(MAX_EXPIRE_MS, NS_PER_MS)

  local function within_cap(d, write, now)
    local horizon = satsub(MAX_EXPIRE_NS, now)
    d.reset = min(d.reset, horizon)
    if d.retry then d.retry = min(d.retry, horizon) end
    return d, write
  end

  -- The exact decision of `req` on `key` at (s, n), `v` its value (a string state's
  -- kinds: read already, nil if absent), `peek` the call's PEEK: the limiter's own
  -- decision, as the key's penalty answers it (decision/limiter.rs decide).
  local function decide_exactly(key, req, v, s, n, peek)
    local now = ns_of_time(s, n)
    local name, held = req.kind.name, nil
    local function own(r)
      if name == 'SLIDINGLOG' then return decide_log(key, r, now, held) end
      return DECIDE[name](held.state, r, now)
    end
    if name == 'SLIDINGLOG' then
      held = PEN.log_held(key, 'RL.SLIDINGLOG') or {}
    elseif v then
      -- (a string this short is not read: store/mod.rs SHORT_STRING)
      if #v <= SHORT_STRING then foreign(req.kind.label) end
      local state, p = PEN.split(v, req.kind.label)
      held = { exists = true, state = state, p = p }
    else
      held = {}
    end
    local d, write = own(req)
    if held.p or req.penalty then d, write = PEN.judge(key, req, held, d, write, now, peek, own) end
    return within_cap(d, write, now)
  end

  -- Decides `req` on `key` at the instant (s, n) (`peek`: RL.ALL's PEEK): the
  -- decision and its write (see commit), in doubles where every value fits (the
  -- kind's fast path, unless its denial may start a penalty), else exactly.
  local function decide(key, req, s, n, peek)
    if req.kind.name == 'SLIDINGLOG' then
      if req.fast and s < FAST_S then
        local allowed, left, retry, reset, score, member, expire = req.fast(key, s, n)
        if allowed ~= nil and (allowed or not req.penalty or peek or req.peek) then
          local write = score and { op = 'log', apply = function(k)
            redis.call('ZADD', k, score, member)
            redis.call('PEXPIREAT', k, expire)
          end }
          return { allowed = allowed, limit = req.limit, remaining = left, retry = retry, reset = reset }, write
        end
      end
      return decide_exactly(key, req, nil, s, n, peek)
    end
    local v = get(key)
    if req.fast and s < FAST_S then
      local allowed, left, retry, reset, value, expire = req.fast(v, s, n)
      if allowed ~= nil and (allowed or not req.penalty or peek or req.peek) then
        local write
        if value then
          write = { op = 'set', value = value, expire = expire }
        elseif value == false then
          write = { op = 'del' }
        end
        return { allowed = allowed, limit = req.limit, remaining = left, retry = retry, reset = reset }, write
      end
    end
    return decide_exactly(key, req, v, s, n, peek)
  end

  -- The reply for a call whose body raised `err` (registration runs every body
  -- under pcall): its error reply, or for any other Lua error the module's
  -- internal-error reply (never a Lua runtime error).
  local function failed(label, err)
    if type(err) == 'table' and err.rl then return redis.error_reply(err.rl) end
    -- A command the library called was refused (an ACL without the commands it
    -- uses, OOM): that error, as Redis gave it.
    if type(err) == 'table' and type(err.err) == 'string' then return redis.error_reply(err.err) end
    if type(err) == 'string' and find(err, '^[A-Z]+ ') then return redis.error_reply(err) end
    return redis.error_reply(ERR.internal(label))
  end

  local function one_key(fname, keys)
    if #keys ~= 1 then
      fail(fmt('ERR %s takes exactly one key: FCALL %s 1 key ...', fname, fname))
    end
    return keys[1]
  end

  -- RL.<ALGO> key params... as FCALL rl_<algo> 1 key params...: the body and its
  -- label. A call decided on the fast path replies without building a decision;
  -- the parsed-request cache is looked up inline (this runs on every call).
  local function decision_command(kind, fname)
    local log, name = kind.name == 'SLIDINGLOG', kind.name
    local function body(keys, args)
      if #keys ~= 1 then one_key(fname, keys) end
      local key, last = keys[1], #args
      local node = roots.command[name]
      for i = 1, last do
        node = node[args[i]]
        if not node then break end
      end
      local req = node and node[REQ] or parse(kind, args, 1, last, 'command')
      local s, n = clock()
      local fast, v = req.fast, nil
      if not log then
        v = redis.pcall('GET', key)
        if v and type(v) == 'table' then fail(v.err or ERR.wrong_type) end
      end
      if fast and s < FAST_S then
        local allowed, left, retry, reset, value, expire, more
        if log then
          -- (a sorted set: the decider reads it; its write is the new entry)
          allowed, left, retry, reset, value, expire, more = fast(key, s, n)
        else
          allowed, left, retry, reset, value, expire = fast(v, s, n)
        end
        -- (a denial that may start a penalty is decided again, exactly)
        if allowed ~= nil and (allowed or not req.penalty or req.peek) then
          if value ~= nil and not req.peek then
            if log then
              redis.call('ZADD', key, value, expire)
              redis.call('PEXPIREAT', key, more)
            elseif value then
              redis.call('SET', key, value, 'PXAT', expire)
            else
              redis.call('DEL', key)
            end
          end
          local r = reset % NS_PER_MS
          reset = (reset - r) / NS_PER_MS
          if r > 0 then reset = reset + 1 end
          if retry then
            r = retry % NS_PER_MS
            retry = (retry - r) / NS_PER_MS
            if r > 0 then retry = retry + 1 end
          else
            retry = -1
          end
          return { allowed and 1 or 0, req.limit, left, retry, reset }
        end
      end
      local d, write = decide_exactly(key, req, v, s, n, false)
      if write and not req.peek then commit(key, write) end
      return reply(d)
    end
    return body, kind.label
  end

  -- FCALL_RO rl_peek 1 key ALGO params [COST n]: RL.<ALGO> ... PEEK, never writing.
  -- FCALL_RO rl_peek 1 key ACQUIRE limit timeout lease_id: RL.ACQUIRE ... PEEK.
  local peek_body
  function peek_body(keys, args)
    local key = one_key('rl_peek', keys)
    -- RL.PEEK's arity (-4): POLICY key name.
    if #args < 2 then wrong_arity('rl.peek') end
    local algo = upper(args[1])
    if algo == 'POLICY' then
      -- POLICY key name [COST n]: as RL.LIMIT key name [COST n] PEEK (commands/peek.rs).
      local definition = POLICY.find(args[2])
      local cost = POLICY.amount(args, 3, #args, false, function(option)
        fail(ERR.unknown_option(option, 'rl.peek', 'COST'))
      end)
      local spelt = POLICY.arguments(definition, cost, nil, nil, true)
      table.insert(spelt, 1, definition.kind.name)
      local r = peek_body(keys, spelt)
      return definition.shadow and POLICY.shadowed(r) or r
    end
    -- Every other form: ALGO key and at least two parameters (arity -5).
    if #args < 3 then wrong_arity('rl.peek') end
    if algo == 'ACQUIRE' then
      -- Exactly limit timeout lease_id: no option of RL.ACQUIRE's (commands/peek.rs).
      if #args ~= 4 then wrong_arity('rl.peek') end
      return peek_acquire(key, args)
    end
    local kind = KINDS[algo]
    if not kind then
      fail(MSG.peek_algorithm)
    end
    local req = parse(kind, args, 2, #args, 'peek')
    return reply((decide(key, req, clock())))
  end

  -- RL.ALL numkeys key [key ...] ALGO params [BURST b] [COST n | REFUND n | DEBIT n]
  -- ... [PEEK] (commands/all.rs).
  local function all_body(keys, args)
    local n = #keys
    -- Redis checks RL.ALL's arity (-5: one key's POLICY name) before the module runs.
    if 2 + n + #args < 5 then wrong_arity('rl.all') end
    if n < 1 or n > MAX_LAYERS then bad_integer('numkeys', 1, MAX_LAYERS) end
    if #args < 1 then
      fail(MSG.all_shape)
    end
    local last, peek = #args, false
    if upper(args[last]) == 'PEEK' then last, peek = last - 1, true end
    -- A clause starts at an algorithm's word or at POLICY, whose next argument is
    -- a name (which may be an algorithm's word: it starts nothing).
    -- (each clause's kind, or false for POLICY, kept from the scan: one upper per argument)
    local starts, kinds = {}, {}
    local at = 1
    while at <= last do
      local up, c = upper(args[at]), #starts + 1
      if up == 'POLICY' then
        starts[c], kinds[c] = at, false
        at = at + 1
      elseif KINDS[up] then
        starts[c], kinds[c] = at, KINDS[up]
      end
      at = at + 1
    end
    if starts[1] ~= 1 then
      fail(MSG.all_algorithm)
    end
    if #starts ~= n then fail(MSG.all_clauses) end
    local reqs, shadow = {}, {}
    for c, start in ipairs(starts) do
      local stop = (starts[c + 1] or last + 1) - 1
      if not kinds[c] then
        -- POLICY name [COST n | REFUND n | DEBIT n]: the policy's algorithm, the
        -- clause's amount.
        if stop < start + 1 then fail(ERR.clause_arity('POLICY')) end
        local definition = POLICY.find(args[start + 1])
        local amount = POLICY.amount(args, start + 2, stop, true, function(option)
          fail(ERR.unknown_clause_option(option, 'POLICY', 'COST, REFUND or DEBIT'))
        end)
        local spelt = POLICY.arguments(definition, amount)
        reqs[c] = parse(definition.kind, spelt, 1, #spelt, 'clause')
        shadow[c] = definition.shadow
      else
        reqs[c] = parse(kinds[c], args, start + 1, stop, 'clause')
      end
    end
    -- A debit is charged at once: never peeked (checked once every clause is read).
    if peek then
      for c = 1, n do
        if reqs[c].debit then fail(ERR.debit_with('PEEK')) end
      end
    end
    for i = 2, n do
      for j = 1, i - 1 do
        if keys[i] == keys[j] then fail(MSG.all_distinct) end
      end
    end
    local s, ns = clock()
    local layers, writes, all_admit = {}, {}, true
    -- A shadow policy's layer passes whatever it decides.
    for i = 1, n do
      layers[i], writes[i] = decide(keys[i], reqs[i], s, ns, peek)
      all_admit = all_admit and (layers[i].allowed or shadow[i] or false)
    end
    -- All pass: every write. Else only the denying layers' (a denial writes only the
    -- penalty it starts): nothing is spent (spend.rs).
    if not peek then
      for i = 1, n do
        if writes[i] and (all_admit or not layers[i].allowed) then commit(keys[i], writes[i]) end
      end
    end
    if not all_admit then
      -- Nothing is spent: a layer that would admit reports its state as it is.
      for i = 1, n do
        if layers[i].allowed then
          local unspent = {}
          for field, value in pairs(reqs[i]) do unspent[field] = value end
          unspent.cost, unspent.refund, unspent.debit, unspent.fast = 0, false, false, nil
          -- (its fast path is a closure over its cost: made again for cost 0)
          if unspent.kind.prepare then unspent.kind.prepare(unspent) end
          layers[i] = decide(keys[i], unspent, s, ns)
        end
      end
    end
    -- The binding layer: on denial the longest wait (never first), else the
    -- least remaining; ties go to the first.
    local binding, wait
    for i = 1, n do
      local l = layers[i]
      if not l.allowed and not shadow[i] and wait ~= NEVER then
        if not l.retry then
          binding, wait = i, NEVER
        elseif not wait or cmp(l.retry, wait) > 0 then
          binding, wait = i, l.retry
        end
      end
    end
    if not binding then
      -- (a shadow's denial: answered with none left)
      local function left(l) return l.allowed and l.remaining or 0 end
      binding = 1
      for i = 2, n do
        if left(layers[i]) < left(layers[binding]) then binding = i end
      end
    end
    local out, all = {}, {}
    for i = 1, n do
      all[i] = reply(layers[i])
      if shadow[i] then POLICY.shadowed(all[i]) end
    end
    for j = 1, 5 do out[j] = all[binding][j] end
    out[6] = all
    return out
  end

  -- FCALL rl_limit 1 key policy [COST n | REFUND n | DEBIT n] [PEEK] [BLOCK ms]: as the
  -- policy's command with the same options on the same key (commands/limit.rs).
  POLICY.bodies = {}
  function POLICY.limit(keys, args)
    local key = one_key('rl_limit', keys)
    if #args < 1 then wrong_arity('rl.limit') end
    local definition = POLICY.find(args[1])
    POLICY.limit_options(args, 2, #args)
    local kind = definition.kind
    local body = POLICY.bodies[kind.name] or decision_command(kind, kind.fcall)
    POLICY.bodies[kind.name] = body
    local options = args
    if definition.shadow then
      -- A shadow policy never waits: BLOCK never keeps its denial from starting a penalty.
      -- (the options are checked: BLOCK is followed by its value)
      options = { args[1] }
      local i = 2
      while i <= #args do
        if upper(args[i]) == 'BLOCK' then
          i = i + 2
        else
          options[#options + 1], i = args[i], i + 1
        end
      end
    end
    local r = body({ key }, POLICY.arguments(definition, options, 2, #options))
    return definition.shadow and POLICY.shadowed(r) or r
  end
