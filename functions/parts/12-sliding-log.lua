  ------------------------------------------------------------------------------
  -- Sorted-set states: the sliding log (algorithm/sliding_log/, store/log.rs) and lease
  -- sets (lease.rs, store/leases.rs), read with O(log n) commands (ZCOUNT, ZRANGE
  -- by rank, ZRANGEBYSCORE ... LIMIT) and written as the module replicates them:
  -- ZREM of at most 64 lapsed members, ZADD, PEXPIREAT (or DEL).
  ------------------------------------------------------------------------------

  local parse_entry, trim_through, first_entry
  do
    -- At most 64 lapsed members are trimmed per call. (Numbers are passed to the
    -- server as text: Redis 7.0 formats a Lua number argument through printf, which
    -- costs more than the command.)
    local TRIM_MAX_TEXT = '64'
    local RETRY_SCAN = 4
    local TWO = int(2)
    local unpack = unpack

    -- A decimal u64 of 1 to 20 digits, as a big; nil otherwise.
    local function u64_digits(s)
      if s == '' or #s > 20 or find(s, '[^0-9]') then return nil end
      local v = big(s)
      if cmp(v, U64_MAX) > 0 then return nil end
      return v
    end

    local function score_of(ns) return div(ns, NS_PER_US) end

    -- A sliding-log entry from its member and score (as Redis replies them): the
    -- weighted `<ns>:<cost>:<sum>` (1 <= cost <= sum) or the legacy `<ns>` (one
    -- unit); nil if the module did not write it (including a score that is not
    -- the member's microsecond).
    function parse_entry(member, score)
      local a = find(member, ':', 1, true)
      local e, digits
      if not a then
        local ns = u64_digits(member)
        if not ns then return nil end
        e, digits = { ns = ns, cost = ONE }, member
      else
        local b = find(member, ':', a + 1, true)
        if not b or find(member, ':', b + 1, true) then return nil end
        digits = sub(member, 1, a - 1)
        local ns = u64_digits(digits)
        local cost = u64_digits(sub(member, a + 1, b - 1))
        local sum = u64_digits(sub(member, b + 1))
        if not (ns and cost and sum) or is_zero(cost) or cmp(sum, cost) < 0 then return nil end
        e = { ns = ns, cost = cost, sum = sum }
      end
      -- The score is ns / 1000: the digits but the last three (as doubles compare them).
      local us = #digits > 3 and sub(digits, 1, -4) or '0'
      if tonumber(score) ~= tonumber(us) then return nil end
      e.score = big(us)
      return e
    end

    -- The member of a weighted entry: ns zero-padded to 19 digits (so members of
    -- one score sort by time).
    local function member_of(e)
      local ns = str(e.ns)
      if #ns < 19 then ns = string.rep('0', 19 - #ns) .. ns end
      return ns .. ':' .. str(e.cost) .. ':' .. str(e.sum)
    end

    local function log_corrupt() foreign('RL.SLIDINGLOG') end

    -- Removes at most 64 (TRIM_MAX_TEXT) entries scored <= cutoff (a string), oldest
    -- first: one ZREM of exactly those members, as the module replicates it. (Entries
    -- score from 0; a sliding log's penalty member, below, stays.)
    function trim_through(key, cutoff)
      local lapsed = redis.call('ZRANGEBYSCORE', key, '0', cutoff, 'LIMIT', '0', TRIM_MAX_TEXT)
      if #lapsed > 0 then redis.call('ZREM', key, unpack(lapsed)) end
    end

    -- The log on `key` (nil if absent): the LogView of algorithm/sliding_log/view.rs.
    -- ZRANGE key 0 0 WITHSCORES: empty for an absent key, WRONGTYPE for another type.
    function first_entry(key)
      local r = redis.pcall('ZRANGE', key, '0', '0', 'WITHSCORES')
      if r.err then fail(r.err) end
      return r
    end

    -- `held`: what the key holds (PEN.log_held), its entries from rank held.rank.
    local function open_log(key, held)
      local rank = held.rank
      if not rank then return nil end
      local first = held.first or redis.call('ZRANGE', key, '1', '1', 'WITHSCORES')
      if not first[1] then return nil end
      local function one(reply)
        local e = reply[1] and parse_entry(reply[1], reply[2])
        if not e then log_corrupt() end
        return e
      end
      local oldest = one(first)
      local newest = one(redis.call('ZRANGE', key, '-1', '-1', 'WITHSCORES'))
      if oldest.sum and not newest.sum then log_corrupt() end
      local log = { oldest = oldest, newest = newest }
      function log.len() return int(redis.call('ZCARD', key) - rank) end
      function log.count_after(cutoff)
        return int(redis.call('ZCOUNT', key, '(' .. str(cutoff), '+inf'))
      end
      -- Visits entries scored above `cutoff`, oldest first, while `visit` is true.
      -- Fetches `batch` entries per call (how many the caller expects to visit).
      function log.scan_after(cutoff, visit, batch)
        local offset = 0
        while true do
          local r = redis.call('ZRANGEBYSCORE', key, '(' .. str(cutoff), '+inf', 'WITHSCORES', 'LIMIT', offset, batch)
          for i = 1, #r, 2 do
            local e = parse_entry(r[i], r[i + 1])
            if not e then log_corrupt() end
            if not visit(e) then return end
          end
          if #r < 2 * batch then return end
          offset = offset + batch
          batch = 16
        end
      end
      function log.last_through(score)
        local r = redis.call('ZREVRANGEBYSCORE', key, str(score), '0', 'WITHSCORES', 'LIMIT', '0', '1')
        if not r[1] then return nil end
        return parse_entry(r[1], r[2]) or log_corrupt()
      end
      function log.at_rank(r)
        r = str(add(r, rank))
        r = redis.call('ZRANGE', key, r, r, 'WITHSCORES')
        if not r[1] then return nil end
        return parse_entry(r[1], r[2]) or log_corrupt()
      end
      return log
    end

    local function checked_u64(v)
      if cmp(v, U64_MAX) > 0 then log_corrupt() end
      return v
    end

    -- The live part of a log (entries scored above `cutoff`), in O(log n).
    local function census(log, cutoff)
      local empty = { units = ZERO, legacy = ZERO, first_rank = ZERO, base = ZERO }
      if not log then return empty end
      -- The oldest live entry: the oldest stored one, unless it has lapsed.
      local newest, oldest = log.newest, log.oldest
      local lapsed = cmp(oldest.score, cutoff) <= 0
      if lapsed then
        oldest = nil
        log.scan_after(cutoff, function(e)
          oldest = e
          return false
        end, 1)
      end
      empty.newest, empty.lapsed = newest, lapsed
      if not oldest then return empty end
      local function before(e, sum)
        if cmp(sum, e.cost) < 0 then log_corrupt() end
        return sub_(sum, e.cost)
      end
      local function after(last, base)
        if cmp(last, base) < 0 then log_corrupt() end
        return sub_(last, base)
      end
      if oldest.sum and newest.sum then
        local base = before(oldest, oldest.sum)
        return { units = after(newest.sum, base), legacy = ZERO, first_rank = ZERO, base = base,
          first_weighted = oldest, newest = newest, lapsed = lapsed }
      end
      local len, live = log.len(), log.count_after(cutoff)
      if cmp(len, live) < 0 then log_corrupt() end
      local first_rank = sub_(len, live)
      if not oldest.sum and not newest.sum then
        return { units = live, legacy = live, first_rank = first_rank, base = ZERO, newest = newest,
          lapsed = lapsed }
      end
      if oldest.sum then log_corrupt() end
      -- Legacy entries, then weighted ones: the first weighted by binary search on rank.
      -- Invariant: rank `lo` is legacy, rank `hi` is weighted.
      if is_zero(len) then log_corrupt() end
      local lo, hi, first = first_rank, sub_(len, ONE), newest
      while cmp(hi, add(lo, ONE)) > 0 do
        local mid = add(lo, div(sub_(hi, lo), TWO))
        local e = log.at_rank(mid) or log_corrupt()
        if e.sum then
          hi, first = mid, e
        else
          lo = mid
        end
      end
      local base = before(first, first.sum)
      local legacy = sub_(hi, first_rank)
      return { units = checked_u64(add(legacy, after(newest.sum, base))), legacy = legacy,
        first_rank = first_rank, base = base, first_weighted = first, newest = newest,
        lapsed = lapsed }
    end

    -- The score of the oldest live entry through which the live units reach `k`.
    local function score_reaching(log, c, k)
      if cmp(k, c.legacy) <= 0 then
        local e = log.at_rank(sub_(add(c.first_rank, k), ONE)) or log_corrupt()
        return e.score
      end
      local target = checked_u64(add(c.base, sub_(k, c.legacy)))
      local function reaches(e) return e.sum ~= nil and cmp(e.sum, target) >= 0 end
      local first = c.first_weighted or log_corrupt()
      -- The scan below visits `first` as its first weighted entry (it is the oldest
      -- live one): when it reaches the target, that is the answer, with no call.
      if reaches(first) then return first.score end
      local found, seen, lo = nil, 0, first.score
      log.scan_after(satsub(first.score, ONE), function(e)
        if not e.sum then return true end
        lo = e.score
        if reaches(e) then
          found = lo
          return false
        end
        seen = seen + 1
        return seen < RETRY_SCAN
      end, RETRY_SCAN)
      if found then return found end
      local newest = c.newest or log_corrupt()
      if not reaches(newest) then log_corrupt() end
      local function through(s)
        local e = log.last_through(s)
        return e ~= nil and reaches(e)
      end
      if through(lo) then return lo end
      -- Invariant: nothing through score `lo` reaches the target; through `hi` does.
      local hi = newest.score
      if cmp(hi, lo) <= 0 then log_corrupt() end
      while cmp(sub_(hi, lo), ONE) > 0 do
        local mid = add(lo, div(sub_(hi, lo), TWO))
        if through(mid) then hi = mid else lo = mid end
      end
      return hi
    end

    -- RL.SLIDINGLOG: decide (or refund) on `key`, which holds `held`. A write's
    -- `apply(key, write)` ends with PEXPIREAT write.expire.
    decide_log = function(key, req, now, held)
      local limitn, w = req.p[1], req.p[2]
      local limit = int(limitn)
      local log = open_log(key, held)
      local window_us = div(w, NS_PER_US)
      local cutoff = satsub(score_of(now), window_us)
      local c = census(log, cutoff)
      local function leaves_at(score) return mul(add(score, window_us), NS_PER_US) end
      local function until_leaves(ns) return satsub(leaves_at(score_of(ns)), now) end
      local function decision(allowed, units, retry, newest_ns)
        return { allowed = allowed, limit = limitn, remaining = num(satsub(limit, units)),
          retry = retry, reset = newest_ns and until_leaves(newest_ns) or ZERO }
      end
      local newest_live = c.newest and cmp(c.newest.score, cutoff) > 0 and c.newest.ns or nil
      local n = int(req.cost)
      if req.refund then
        -- REFUND (decide.rs refund): the oldest live entries whole while their cost
        -- fits, then the rest from the next one's cost (its sum stays); the newest
        -- entry stays. If every live entry goes (units counted through entries an
        -- earlier refund removed, brought back by a clock stepping back), the key goes.
        local give = min(n, c.units)
        local remove, rewrite, stopped = 0, nil, false
        if cmp(give, c.units) < 0 then
          local left = give
          log.scan_after(cutoff, function(e)
            if cmp(left, e.cost) >= 0 then
              left = sub_(left, e.cost)
              remove = remove + 1
              return true
            end
            if not is_zero(left) and e.sum then
              rewrite = { ns = e.ns, cost = sub_(e.cost, left), sum = e.sum, score = e.score }
            end
            stopped = true
            return false
          end, 16)
          if not stopped then give = c.units end
        end
        local newest_left = stopped and (c.newest or log_corrupt()).ns or nil
        local d = decision(true, sub_(c.units, give), ZERO, newest_left)
        if is_zero(give) then return d end
        if not newest_left then return d, { op = 'del' } end
        local take = str(remove + (rewrite and 1 or 0))
        local cut = '(' .. str(cutoff)
        local expire = expire_ms(leaves_at(score_of(newest_left)))
        return d, { op = 'log', expire = expire, apply = function(k, write)
          -- As the module: the oldest live members are listed first; the rewritten
          -- entry is added before they go (the set never empties: no spurious del
          -- event); one ZREM, in chunks only beyond what Lua can unpack at once.
          local oldest = redis.call('ZRANGEBYSCORE', k, cut, '+inf', 'LIMIT', '0', take)
          if rewrite then redis.call('ZADD', k, str(rewrite.score), member_of(rewrite)) end
          for i = 1, #oldest, 4000 do
            redis.call('ZREM', k, unpack(oldest, i, i + 3999 < #oldest and i + 3999 or #oldest))
          end
          redis.call('PEXPIREAT', k, str(write.expire))
        end }
      end
      -- The entry `weight` units add (decide.rs next_entry), and its write: a
      -- nanosecond after every stored entry, even if the clock stepped back; sums
      -- run on from the newest.
      -- A debit joining the newest entry (`joins`) adds its weight to that entry's
      -- cost and moves it here: ZADD of the new member, then ZREM of the old one.
      local function add_entry(weight, joins)
        local ns, sum = now, weight
        if c.newest then
          ns = max(now, checked_u64(add(c.newest.ns, ONE)))
          sum = checked_u64(add(c.newest.sum or ZERO, weight))
        end
        local cost = joins and checked_u64(add(joins.cost, weight)) or weight
        local entry = { ns = ns, cost = cost, sum = sum, score = score_of(ns) }
        local cut, expire = str(cutoff), expire_ms(leaves_at(entry.score))
        local lapsed = c.lapsed
        local old = joins and member_of(joins)
        return ns, { op = 'log', expire = expire, apply = function(k, write)
          -- Only if an entry has lapsed: no seek otherwise (as the module).
          if lapsed then trim_through(k, cut) end
          redis.call('ZADD', k, str(entry.score), member_of(entry))
          if old then redis.call('ZREM', k, old) end
          redis.call('PEXPIREAT', k, str(write.expire))
        end }
      end
      if req.debit then
        -- DEBIT (decide.rs debit): one entry of weight n, or less where the window
        -- would pass limit + MAX_DEBT (none at the cap). A cost of 1 is admitted
        -- once the oldest entries holding the excess have left.
        local weight = min(n, satsub(add(limit, MAX_DEBT), c.units))
        local after = add(c.units, weight)
        -- At its limit, the debit joins the newest entry (live, weighted).
        local joins = not is_zero(weight) and cmp(c.units, limit) >= 0 and c.newest.sum and c.newest
          or nil
        local newest_ns, write = newest_live, nil
        if not is_zero(weight) then newest_ns, write = add_entry(weight, joins) end
        -- The units in entries older than the one the debit adds (or joins).
        local older = joins and sub_(c.units, joins.cost) or c.units
        local retry = ZERO
        if cmp(after, limit) >= 0 then
          local excess = add(sub_(after, limit), ONE)
          local leaves
          if cmp(excess, older) <= 0 then
            leaves = leaves_at(score_reaching(log, c, excess))
          elseif newest_ns then
            leaves = leaves_at(score_of(newest_ns))
          else
            log_corrupt()
          end
          retry = satsub(leaves, now)
        end
        return decision(true, after, retry, newest_ns), write
      end
      if req.cost > limitn then return decision(false, c.units, NEVER, newest_live) end
      local units_after = add(c.units, n)
      if cmp(units_after, limit) <= 0 then
        if req.cost == 0 then return decision(true, c.units, ZERO, newest_live) end
        local ns, write = add_entry(n)
        return decision(true, units_after, ZERO, ns), write
      end
      local score = score_reaching(log, c, sub_(units_after, limit))
      return decision(false, c.units, satsub(leaves_at(score), now), newest_live)
    end
  end

