  --------------------------------------------------------------------------------
  -- Named policies (src/policy.rs, src/grammar/policy.rs): the policy file's lines
  -- written into this library (POLICY_LINES, by scripts/library-policies.py), read
  -- as the module reads its policy file, all or nothing: one bad line and no
  -- policy is held, every call by a policy answering that line's error. The
  -- commands that decide by them are in the next section.
  --------------------------------------------------------------------------------

  do -- (its helpers are this block's: `build` holds at most 200 locals)
    -- A policy's name: 1 to max_name of A-Z a-z 0-9 _ . : -.
    local function policy_name(name)
      if #name < 1 or #name > POLICY.max_name or find(name, '[^%w_.:-]') then
        fail(ERR.policy_name(POLICY.max_name))
      end
      return name
    end

    -- One definition (the words after the name): its kind, its words without SHADOW
    -- (what the kind's command takes after the key) with its PENALTY d [ESCALATE max]
    -- apart (RL.PEEK POLICY takes none), whether it is a shadow, and its line as
    -- RL.POLICY LIST gives it (grammar/policy.rs canonical).
    local function policy_definition(name, words)
      local kind = words[1] and KINDS[upper(words[1])]
      if not kind then fail(MSG.policy_algorithm) end
      local np, shadow, rest, text = #kind.params, false, {}, { name, kind.name }
      for i = 2, #words do
        local word, up = words[i], upper(words[i])
        if i > 1 + np and up == 'SHADOW' then
          if shadow then fail(ERR.repeated_option('SHADOW')) end
          shadow = true
        else
          rest[#rest + 1] = word
        end
        local keyword = up == 'BURST' or up == 'SHADOW' or up == 'PENALTY' or up == 'ESCALATE'
        text[#text + 1] = keyword and up or word
      end
      local req = uncached_parse(kind, rest, 1, #rest, 'policy')
      local base, penalty, i = {}, {}, 1
      while i <= #rest do
        -- (checked: PENALTY is an option, its values follow it)
        local n = i > np and upper(rest[i]) == 'PENALTY' and (req.penalty.max and 4 or 2)
        for j = i, i + (n or 1) - 1 do
          local to = n and penalty or base
          to[#to + 1] = rest[j]
        end
        i = i + (n or 1)
      end
      return { kind = kind, words = base, penalty = penalty, shadow = shadow,
        line = concat(text, ' ') }
    end

    -- Reads POLICY_LINES (each line's number in the file, then the line) into
    -- POLICY.held (by name) and POLICY.list (sorted lines), or sets POLICY.broken to
    -- the first bad line's error; then drops the table of lines (the server's garbage
    -- collector walks the library's heap: tables that decide nothing stay out of it).
    function POLICY.load()
      local held, list, count = {}, {}, 0
      for at = 1, #POLICY_LINES, 2 do
        local n, line = POLICY_LINES[at], POLICY_LINES[at + 1]
        local ok, err = pcall(function()
          line = gsub(line, '\r$', '')
          local words = {}
          for word in string.gmatch(line, '[^ \t\n\f\r]+') do words[#words + 1] = word end
          if not words[1] or sub(words[1], 1, 1) == '#' then return end
          local name = policy_name(table.remove(words, 1))
          -- As the module's: its INFO line would be a field of the module's own.
          if name == 'digest' then fail(ERR.policy_reserved(name)) end
          local definition = policy_definition(name, words)
          if held[name] then fail(MSG.policy_twice) end
          if count >= POLICY.max_count then fail(ERR.too_many_policies(POLICY.max_count)) end
          held[name], count = definition, count + 1
          list[#list + 1] = definition.line
        end)
        if not ok then
          local problem = type(err) == 'table' and err.rl or tostring(err)
          POLICY.broken = ERR.policy_file_line(POLICY_SOURCE or 'POLICY_LINES', n,
            (gsub(problem, '^ERR ', '')))
          break
        end
      end
      POLICY_LINES = nil
      if POLICY.broken then return end
      table.sort(list)
      POLICY.held, POLICY.list = held, list
    end

    -- The held policy `name`.
    function POLICY.find(name)
      if POLICY.broken then fail(POLICY.broken) end
      local definition = POLICY.held[policy_name(name)]
      if not definition then fail(ERR.no_such_policy(name)) end
      return definition
    end

    -- The checks after every option is read (grammar/amount.rs finish): a debit
    -- with another amount, PEEK or BLOCK (the first of them given is named), or
    -- COST with REFUND. `seen` holds the option words given.
    local function amount_finish(seen)
      if seen.DEBIT then
        for _, other in ipairs({ 'COST', 'REFUND', 'PEEK', 'BLOCK' }) do
          if seen[other] then fail(ERR.debit_with(other)) end
        end
      elseif seen.COST and seen.REFUND then
        fail(ERR.cost_with_refund)
      end
    end

    -- Reads the amount option args[i] (COST, or REFUND or DEBIT where `all`) and
    -- its value into `seen`, as the module reads it (grammar/amount.rs read):
    -- the index after it, or nil if args[i] is none of them.
    local function amount_read(args, i, last, all, seen)
      local up = upper(args[i])
      if not (up == 'COST' or all and (up == 'REFUND' or up == 'DEBIT')) then return nil end
      if seen[up] then fail(ERR.repeated_option(up)) end
      if i + 1 > last then fail(ERR.missing_value(up)) end
      count_from(up, args[i + 1], up == 'DEBIT' and 1 or 0, MAX_COST)
      seen[up] = args[i + 1]
      return i + 2
    end

    -- The amount in args[first..last] (`[COST n]`, or with `all` `[COST n | REFUND n
    -- | DEBIT n]`: an RL.ALL POLICY clause's), checked as the module checks it
    -- (grammar/policy.rs parse_amount), each bad option word given to `unknown`:
    -- the words to add to the definition's.
    function POLICY.amount(args, first, last, all, unknown)
      local seen, i = {}, first
      while i <= last do
        i = amount_read(args, i, last, all, seen) or unknown(sanitize(args[i]))
      end
      amount_finish(seen)
      for _, option in ipairs({ 'COST', 'REFUND', 'DEBIT' }) do
        if seen[option] then return { option, seen[option] } end
      end
      return {}
    end

    -- RL.LIMIT's `[COST n | REFUND n | DEBIT n] [PEEK] [BLOCK ms]` in
    -- args[first..last], checked as the module checks them (grammar/policy.rs
    -- parse_limit_options).
    function POLICY.limit_options(args, first, last)
      local seen = {}
      local i = first
      while i <= last do
        local up = upper(args[i])
        local after = amount_read(args, i, last, true, seen)
        if after then
          i = after
        elseif up == 'PEEK' then
          if seen.PEEK then fail(ERR.repeated_option('PEEK')) end
          seen.PEEK, i = true, i + 1
        elseif up == 'BLOCK' then
          if seen.BLOCK then fail(ERR.repeated_option('BLOCK')) end
          if i + 1 > last then fail(ERR.missing_value('BLOCK')) end
          count_from('BLOCK', args[i + 1], 0, MAX_DURATION_MS)
          seen.BLOCK, i = true, i + 2
        else
          fail(ERR.unknown_option(sanitize(args[i]), 'rl.limit',
            'COST, REFUND, DEBIT, PEEK or BLOCK'))
        end
      end
      amount_finish(seen)
    end

    -- The arguments the definition's command takes after the key: its words and its
    -- penalty (not for a `peek`), then `more` (or more[first..last]).
    function POLICY.arguments(definition, more, first, last, peek)
      local out = {}
      for i, word in ipairs(definition.words) do out[i] = word end
      if not peek then
        for _, word in ipairs(definition.penalty) do out[#out + 1] = word end
      end
      for i = first or 1, last or #more do out[#out + 1] = more[i] end
      return out
    end

    -- A shadow policy's reply: a denial answered as admitted with nothing left, its
    -- waits as enforcement gives them (commands/limit.rs shadowed).
    function POLICY.shadowed(r)
      if r[1] == 0 then r[1], r[3] = 1, 0 end
      return r
    end

    -- FCALL_RO rl_policy 0 LIST | GET name | DIGEST: RL.POLICY's read-only
    -- subcommands, the same lines and digest (nodes of either kind holding the same
    -- policies digest alike).
    function POLICY.command(keys, args)
      if #keys ~= 0 then fail('ERR rl_policy takes no key: FCALL_RO rl_policy 0 LIST') end
      if POLICY.broken then fail(POLICY.broken) end
      local what = upper(args[1] or '')
      if what == 'LIST' and #args == 1 then return POLICY.list end
      if what == 'DIGEST' and #args == 1 then
        local text = {}
        for i, line in ipairs(POLICY.list) do text[i] = line .. '\n' end
        return redis.sha1hex(concat(text))
      end
      if what == 'GET' and #args == 2 then
        local definition = POLICY.held[policy_name(args[2])]
        return definition and definition.line or false
      end
      fail("ERR rl_policy takes LIST, GET name or DIGEST")
    end

    POLICY.load()
  end
