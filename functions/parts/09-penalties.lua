  --------------------------------------------------------------------------------
  -- Penalties (`PENALTY d [ESCALATE max]`, RL.BAN): src/algorithm/penalty.rs's rules
  -- and src/store/penalty.rs's writes, line by line. A penalty { e, l, k } (its end,
  -- length and keep, in ms: exact integers) follows a string state after `|`
  -- (`gcra:<tat>|penalty:<e>:<l>:<k>`), is a key's whole string value, or is a
  -- sliding log's member scored -1, below every entry (codec.rs; PENALTY: the facts).
  -- A key without one, and a call without PENALTY, never come here: the fast paths
  -- decide them (their states' patterns leave out `|` and `penalty:`).
  --------------------------------------------------------------------------------

  local PEN = {}
  do
    local SEP, PREFIX = PENALTY.separator, PENALTY.tag .. ':'
    local SCORE = fmt('%d', PENALTY.log_score)
    local PATTERN = '^' .. PREFIX .. '(%d+):(%d+):(%d+)$'

    -- A stored field (decimal.rs parse_u64: 1 to 38 digits, at most 2^64 - 1), or nil.
    local function u64(s)
      if #s > 38 then return nil end
      local v = big(s)
      if cmp(v, U64_MAX) > 0 then return nil end
      return v
    end

    -- `penalty:<end>:<len>:<keep>` (codec.rs penalty_only), or nil.
    local function only(text)
      local e, l, k = match(text, PATTERN)
      e, l, k = e and u64(e), l and u64(l), k and u64(k)
      if e and l and k then return { e = e, l = l, k = k } end
    end

    -- A penalty's text, after a state's and the separator if there is one (codec.rs with_penalty).
    local function text(p, state)
      local t = PREFIX .. str(p.e) .. ':' .. str(p.l) .. ':' .. str(p.k)
      if state then return state .. SEP .. t end
      return t
    end

    local function ns(ms) return mul(ms, NS_PER_MS) end
    local function sat(x) return min(x, U64_MAX) end
    -- An expiry as PXAT and PEXPIREAT take it (only a hand-edited keep passes 2^63 - 1).
    local function at(ms) return str(min(ms, I64_MAX)) end

    -- The key's expiry (PEXPIRETIME), false if it has none.
    local function expiry(key)
      local t = redis.call('PEXPIRETIME', key)
      return t >= 0 and t
    end
    PEN.expiry = expiry

    -- A string key's value v (longer than SHORT_STRING) as its state (nil: the key holds
    -- only a penalty) and its penalty (codec.rs split_penalty): foreign to `label` if the
    -- text after the last separator is not a penalty.
    function PEN.split(v, label)
      if not find(v, SEP, 1, true) then
        local p = only(v)
        if p then return nil, p end
        return v, nil
      end
      local cut = match(v, '^.*()' .. SEP)
      local p = only(sub(v, cut + 1))
      if not p then foreign(label) end
      return sub(v, 1, cut - 1), p
    end

    -- What a sorted set or a key holding only a penalty holds for a sliding log
    -- (decision/limiter.rs read), `first` its ZRANGE 0 0 WITHSCORES if read: nil if
    -- absent, else { exists, zset, p (the penalty), rank (the first entry's: 1 after
    -- a penalty member), first (when it is the first entry) }. The set's lowest member
    -- is its penalty if scored -1 or lower (store/penalty.rs log_penalty; foreign to
    -- `label` if it is not one). Any other value is WRONGTYPE.
    function PEN.log_held(key, label, first)
      first = first or redis.pcall('ZRANGE', key, '0', '0', 'WITHSCORES')
      if first.err then
        if not find(first.err, '^WRONGTYPE') then fail(first.err) end
        local v = redis.pcall('GET', key)
        if type(v) ~= 'string' or #v <= SHORT_STRING then fail(ERR.wrong_type) end
        local state, p = PEN.split(v, label)
        if state then fail(ERR.wrong_type) end
        return { exists = true, p = p }
      end
      if not first[1] then return nil end
      if tonumber(first[2]) > PENALTY.log_score then
        return { exists = true, zset = true, rank = 0, first = first }
      end
      return { exists = true, zset = true, rank = 1, p = only(first[1]) or foreign(label) }
    end

    -- A penalty of `len` ms from now, kept until `keep` (at least its end): Penalty::from_now.
    function PEN.from_now(now, len, keep)
      local e = sat(add(div_ceil(now, NS_PER_MS), len))
      return { e = e, l = len, k = max(keep, e) }
    end

    -- The penalty `rule` starts at `now` after the key's `before` (Rule::start): d;
    -- with ESCALATE max, twice before's length (at least d, at most max) if before
    -- ended at most max ago.
    local function start(rule, before, now)
      local d, m = rule.d, rule.max
      if not m then return PEN.from_now(now, d, ZERO) end
      local len = d
      if before and cmp(now, ns(sat(add(before.e, m)))) <= 0 then
        len = min(max(sat(mul(before.l, 2)), d), m)
      end
      return PEN.from_now(now, len, sat(add(sat(add(div_ceil(now, NS_PER_MS), len)), m)))
    end

    -- The decision `own` as the penalty p answers it: none left, the retry the later of
    -- p's end and the wait of `one` (own's request, or a cost of 1 for COST 0), the
    -- reset at least that (Penalty::deny, Penalty::peek_zero).
    local function answer(p, own, now, one, allowed)
      local wait = one.allowed and ZERO or one.retry
      local retry = wait and max(wait, satsub(ns(p.e), now))
      return { allowed = allowed, limit = own.limit, remaining = 0, retry = retry,
        reset = retry and max(own.reset, retry) or own.reset }
    end

    -- The penalty's rules (decision/limiter.rs judge) over the limiter's own decision
    -- `own` of `req` and its write `w` on `key`, which holds `held` ({ exists, zset,
    -- state, p }), at `now`; `own_of(r)` decides another request on the same state. A
    -- penalty in force denies every spending call, writing nothing; a refund or a debit
    -- keeps it; a denial that may start one (limiter.rs starts_penalty: not PEEK, not a
    -- wait BLOCK would have waited out) does. The write: `w` carrying the penalty (or
    -- dropping one no longer kept), a penalty's start (with the key's expiry, read now:
    -- every read before the call's first write), or nil.
    function PEN.judge(key, req, held, own, w, now, peek, own_of)
      local before = held.p
      local kept = before and cmp(now, ns(before.k)) < 0 and before or nil
      local carried = w and before and { op = 'pen', own = w, before = before, after = kept,
        held = held, apply = PEN.commit } or w
      if before and cmp(now, ns(before.e)) < 0 then
        if req.refund or req.debit then
          return { allowed = own.allowed, limit = own.limit, remaining = 0, retry = own.retry,
            reset = max(own.reset, satsub(ns(before.e), now)) }, carried
        end
        if req.cost == 0 then
          local one = {}
          for field, value in pairs(req) do one[field] = value end
          one.cost, one.fast = 1, nil
          return answer(before, own, now, own_of(one), own.allowed)
        end
        return answer(before, own, now, own, false)
      end
      local rule, retry = req.penalty, own.retry
      if rule and not own.allowed and retry and req.cost >= 1 and not (peek or req.peek)
        and not (req.refund or req.debit)
        and not (req.block and cmp(retry, mul(req.block, NS_PER_MS)) <= 0) then
        local p = start(rule, before, now)
        return answer(p, own, now, own, false), { op = 'pen', before = before, after = p,
          held = held, expiry = held.exists and expiry(key), apply = PEN.commit }
      end
      return own, carried
    end

    -- A sliding log's penalty member before a log write (store/penalty.rs
    -- carry_log_penalty): `before` goes unless kept (`after`), `after` is the member.
    -- A key holding only a penalty (a string) is deleted first: the log's set takes its place.
    local function carry(key, before, after, string)
      if string then redis.call('DEL', key) end
      local same = before == after or before and after and cmp(before.e, after.e) == 0
        and cmp(before.l, after.l) == 0 and cmp(before.k, after.k) == 0
      if not string and same then return end
      if before and not string then
        -- (the new member first: the set never empties on the way)
        if after then redis.call('ZADD', key, SCORE, text(after)) end
        redis.call('ZREM', key, text(before))
        return
      end
      if after then redis.call('ZADD', key, SCORE, text(after)) end
    end

    -- Gives the key `held`, expiring at `t` (false: none), the penalty p, its state
    -- unchanged (a penalty's start, or RL.BAN): store/penalty.rs penalize. The key
    -- expires no earlier than p's keep.
    function PEN.penalize(key, held, p, t)
      if held.zset then
        carry(key, held.p, p, false)
        local want = t and max(t, p.k) or p.k
        if not t or cmp(t, want) ~= 0 then redis.call('PEXPIREAT', key, at(want)) end
      elseif held.exists then
        redis.call('SET', key, text(p, held.state), 'PXAT', at(t and max(t, p.k) or p.k))
      else
        redis.call('SET', key, text(p), 'PXAT', at(p.k))
      end
    end

    -- Removes the key's penalty (RL.BAN key 0, store/penalty.rs lift): a key holding
    -- only it goes; a state stays, with its expiry.
    function PEN.lift(key, held)
      if held.zset then return carry(key, held.p, nil, false) end
      if not held.state then return redis.call('DEL', key) end
      redis.call('SET', key, held.state, 'PXAT', str(expiry(key) or MAX_EXPIRE_MS))
    end

    -- Applies a write PEN.judge made (decision/limiter.rs commit).
    function PEN.commit(key, w)
      local own, after = w.own, w.after
      if not own then return PEN.penalize(key, w.held, after, w.expiry) end
      if own.op == 'set' then
        if not after then return redis.call('SET', key, own.value, 'PXAT', str(own.expire)) end
        redis.call('SET', key, text(after, own.value), 'PXAT', at(max(own.expire, after.k)))
      elseif own.op == 'del' then
        if not after then return redis.call('DEL', key) end
        redis.call('SET', key, text(after), 'PXAT', at(after.k))
      else
        carry(key, w.before, after, w.held.exists and not w.held.zset)
        if after then own.expire = min(max(own.expire, after.k), I64_MAX) end
        own.apply(key, own)
      end
    end
  end
