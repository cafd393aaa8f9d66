  ------------------------------------------------------------------------------
  -- The sliding log in doubles (the fast path): a log of weighted entries whose
  -- oldest is live, a request that is not a refund or a debit, and a window below FAST_NS.
  -- It reads what the exact path reads first (the oldest and newest entries) and
  -- hands everything else (legacy or lapsed entries, a retry beyond the oldest
  -- entry, a penalty, corrupt logs, instants outside 2001 to 2286) to decide_log,
  -- before any write.
  ------------------------------------------------------------------------------

  -- A weighted entry `<ns>:<cost>:<sum>` (ns in 19 digits) scored by its
  -- microsecond, as { s, n, cost, sum, score, score text }; nil for any other
  -- (parse_entry decides those). Remembered by member (the decider looks it up
  -- first), and valid only with the same score text.
  local function fast_entry(member, score)
    if #member < 23 or byte(member, 20) ~= 58 then return nil end
    local s, n = digits19(member, 1)
    local b = find(member, ':', 21, true)
    if not s or not b then return nil end
    local cost_t, sum_t = sub(member, 21, b - 1), sub(member, b + 1)
    if cost_t == '' or sum_t == '' or #cost_t > 13 or #sum_t > 13
      or find(cost_t, '[^0-9]') or find(sum_t, '[^0-9]') then
      return nil
    end
    local cost, sum = tonumber(cost_t), tonumber(sum_t)
    local us = s * 1000000 + (n - n % NS_PER_US) / NS_PER_US
    if cost == 0 or sum < cost or tonumber(score) ~= us then return nil end
    return remember('log', member, { s, n, cost, sum, us, score })
  end

  -- The decider of a sliding-log request (see instant_decider): called with the
  -- key and the instant (s, n), it returns allowed, remaining, retry, reset and,
  -- when admitted with a cost, the new entry's score and member and the key's
  -- expiry, as text; nil when the exact path must decide.
  local function log_decider(limit, w, cost)
    local window_us = w / NS_PER_US

    -- ns from now (s, n; now_us its microsecond) until the entry scored `score`
    -- leaves the window, at least 0; nil when not below FAST_NS.
    local function until_leaves(score, now_us, n)
      local d = score + window_us - now_us
      if d <= 0 then return 0 end
      if d >= 9000000000000 then return nil end
      return d * NS_PER_US - n % NS_PER_US
    end

    return function(key, s, n)
      if s < 1000000000 or s >= 9999999999 then return nil end
      local now_us = s * 1000000 + (n - n % NS_PER_US) / NS_PER_US
      local cutoff = now_us > window_us and now_us - window_us or 0
      local first = redis.pcall('ZRANGE', key, '0', '0', 'WITHSCORES')
      -- (another type, or a key holding only a penalty: the exact path says which)
      if first.err then return nil end
      local units, newest, reset = 0, nil, 0
      local oldest
      if first[1] then
        -- (remembered entries and until_leaves inline: this runs on every call)
        local known, m, sc = states.log, first[1], first[2]
        oldest = known and known[m]
        if not (oldest and oldest[6] == sc) then oldest = fast_entry(m, sc) end
        if not oldest or oldest[5] <= cutoff then return nil end
        local last = redis.call('ZRANGE', key, '-1', '-1', 'WITHSCORES')
        m, sc = last[1], last[2]
        if not m then return nil end
        newest = known and known[m]
        if not (newest and newest[6] == sc) then newest = fast_entry(m, sc) end
        if not newest then return nil end
        local base = oldest[4] - oldest[3]
        if newest[4] < base then return nil end
        units = newest[4] - base
        local d = newest[5] + window_us - now_us
        if d > 0 then
          if d >= 9000000000000 then return nil end
          reset = d * NS_PER_US - n % NS_PER_US
        end
      end
      local left = limit > units and limit - units or 0
      if cost > limit then return false, left, NEVER, reset end
      local after = units + cost
      if after > limit then
        -- The oldest entry frees enough units when it leaves, or the exact path
        -- searches further.
        if oldest[3] < after - limit then return nil end
        local d, retry = oldest[5] + window_us - now_us, 0
        if d > 0 then
          if d >= 9000000000000 then return nil end
          retry = d * NS_PER_US - n % NS_PER_US
        end
        return false, left, retry, reset
      end
      if cost == 0 then return true, left, 0, reset end
      -- A nanosecond after every stored entry, even if the clock stepped back;
      -- sums run on from the newest.
      local es, en, sum = s, n, cost
      if newest then
        local ns, nn = newest[1], newest[2] + 1
        if nn == NS_PER_S then ns, nn = ns + 1, 0 end
        if ns > es or (ns == es and nn > en) then es, en = ns, nn end
        sum = newest[4] + cost
      end
      if es >= 9999999999 then return nil end
      local score = es * 1000000 + (en - en % NS_PER_US) / NS_PER_US
      local ahead = until_leaves(score, now_us, n)
      if not ahead then return nil end
      local ns_text = instant_texts('', es, en)
      local us_part = (en - en % NS_PER_US) / NS_PER_US
      local u3 = us_part % 100
      local u2 = (us_part - u3) / 100 % 100
      local u1 = (us_part - u3 - u2 * 100) / 10000
      local score_text = second_digits(es) .. D2[u1] .. D2[u2] .. D2[u3]
      local leaves_us = score + window_us
      local expire_ms = (leaves_us - leaves_us % 1000) / 1000
      if leaves_us % 1000 > 0 then expire_ms = expire_ms + 1 end
      return true, limit - after, 0, ahead, score_text,
        ns_text .. ':' .. dec(cost) .. ':' .. dec(sum), dec(expire_ms)
    end
  end

  KINDS.SLIDINGLOG.prepare = function(req)
    local w = req.p[2]
    req.limit = req.p[1]
    if not req.refund and not req.debit and type(w) == 'number' and w < FAST_NS then
      req.fast = log_decider(req.limit, w, req.cost)
    end
  end

