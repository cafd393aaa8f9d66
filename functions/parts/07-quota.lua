  --------------------------------------------------------------------------------
  -- Calendar quota (src/algorithm/calendar.rs, quota.rs; decide_quota in
  -- decision/limiter.rs): a fixed window whose edges are a calendar's renewals at
  -- the anchor's local wall time. The same periods, counts, state text (the
  -- calendar's text included) and expiry as the module. Times here are ms since
  -- the epoch in doubles (exact below 2^53); a named zone's offsets come from
  -- ZONE_TABLE (06-zones.lua, generated from the module's database), which covers
  -- the years it names: a decision needing another instant is an error.
  --------------------------------------------------------------------------------

  local QUOTA = {}
  do
    local lower = string.lower
    local MINUTE, DAY = 60000, 86400000

    local function month_days(y, m)
      if m == 2 then return (y % 4 == 0 and (y % 100 ~= 0 or y % 400 == 0)) and 29 or 28 end
      if m == 4 or m == 6 or m == 9 or m == 11 then return 30 end
      return 31
    end

    -- Days since 1970-01-01 of a proleptic Gregorian date, and back (Hinnant's).
    local function days_from_civil(y, m, d)
      if m <= 2 then y = y - 1 end
      local era = floor(y / 400)
      local yoe = y - era * 400
      local doy = floor((153 * ((m + 9) % 12) + 2) / 5) + d - 1
      return era * 146097 + yoe * 365 + floor(yoe / 4) - floor(yoe / 100) + doy - 719468
    end
    local function civil_from_days(z)
      z = z + 719468
      local era = floor(z / 146097)
      local doe = z - era * 146097
      local yoe = floor((doe - floor(doe / 1460) + floor(doe / 36524) - floor(doe / 146096)) / 365)
      local doy = doe - (365 * yoe + floor(yoe / 4) - floor(yoe / 100))
      local mp = floor((5 * doy + 2) / 153)
      local m = mp < 10 and mp + 3 or mp - 9
      return yoe + era * 400 + (m <= 2 and 1 or 0), m
    end

    local function unknown_zone(s)
      fail(ERR.unknown_zone(sanitize(s)))
    end

    -- A named zone's rules, decoded from its line in ZONE_TABLE when used:
    -- `offsets;unit;transitions` (see 06-zones.lua), as t[k] (ms; t[1] is the
    -- table's first instant) and o[k] (ms), offset o[k] from t[k] to t[k + 1].
    -- Kept for the next calls in a bounded cache, as the module keeps its zones
    -- (CACHED_ZONES in calendar.rs): at most CACHED_ZONES zones decoded at once,
    -- a new one replacing the cached ones in turn (ring[next_slot] is the next to
    -- go). Invariant: `decoded` holds exactly the names in `ring`, at most
    -- CACHED_ZONES of them, whatever the calls, so the Lua heap holds a few
    -- zones' transitions (kilobytes each), not the whole table's (megabytes with
    -- every zone); a miss only decodes the line again.
    local CACHED_ZONES = 16
    local index, decoded, ring, next_slot, DIGIT = nil, {}, {}, 1, nil
    local function rules(name)
      local z = decoded[name]
      if z then return z end
      if not DIGIT then
        DIGIT = {}
        local alphabet = ZONE_TABLE.alphabet
        for i = 1, #alphabet do DIGIT[byte(alphabet, i)] = i - 1 end
      end
      local line = ZONE_TABLE.zones[name]
      local offsets_text, unit, data = match(line, '^([^;]*);(%d+);(.*)$')
      local offsets = {}
      for o in string.gmatch(offsets_text, '[^,]+') do offsets[#offsets + 1] = tonumber(o) * 1000 end
      local half, n = #ZONE_TABLE.alphabet / 2, #offsets
      unit = tonumber(unit) * 1000
      local t, o, at, acc = {}, {}, ZONE_TABLE.from_s * 1000, 0
      for i = 1, #data do
        local d = DIGIT[byte(data, i)]
        if d < half then
          acc = acc * half + d
        else
          acc = acc * half + d - half
          local idx = acc % n
          at = at + (acc - idx) / n * unit
          t[#t + 1], o[#o + 1], acc = at, offsets[idx + 1], 0
        end
      end
      z = { name = name, t = t, o = o, from = ZONE_TABLE.from_s * 1000 + DAY, to = ZONE_TABLE.to_s * 1000 - DAY }
      if #ring < CACHED_ZONES then
        ring[#ring + 1] = name
      else
        decoded[ring[next_slot]] = nil
        ring[next_slot] = name
        next_slot = next_slot % CACHED_ZONES + 1
      end
      decoded[name] = z
      return z
    end

    local function covered(z, u)
      if u < z.from or u >= z.to then
        fail(fmt("ERR time zone '%s' is in the library's table from %d to %d only: "
          .. 'this decision needs an instant outside it (the module decides it)',
          z.name, ZONE_TABLE.first, ZONE_TABLE.last))
      end
      return u
    end

    -- The segment of z holding the instant u (ms): the last k with t[k] <= u.
    local function segment(z, u)
      local t = z.t
      local lo, hi = 1, #t
      while lo < hi do
        local mid = floor((lo + hi + 1) / 2)
        if t[mid] <= u then lo = mid else hi = mid - 1 end
      end
      return lo
    end

    -- The offset (ms) east of UTC at the instant u.
    local function offset(zone, u)
      if zone.fixed then return zone.fixed end
      local z = rules(zone.text)
      return z.o[segment(z, covered(z, u))]
    end

    -- The instant of the local wall time l (ms since the local epoch): in a gap,
    -- the transition's instant; when ambiguous, the first occurrence.
    local function instant(zone, l)
      if zone.fixed then return l - zone.fixed end
      local z = rules(zone.text)
      local t, o = z.t, z.o
      local j, best = segment(z, covered(z, l)), nil
      for k = math.max(j - 2, 1), math.min(j + 2, #t) do
        local u = l - o[k]
        if (k == 1 or t[k] <= u) and (k == #t or u < t[k + 1]) and (not best or u < best) then
          best = u
        end
      end
      if not best then
        -- In a gap: the transition whose wall clock skipped l.
        for k = math.max(j - 2, 2), math.min(j + 2, #t) do
          if not best and l - o[k - 1] >= t[k] and l - o[k] < t[k] then best = t[k] end
        end
      end
      return covered(z, best)
    end

    -- Renewal n's instant (ms).
    local function renewal(cal, n)
      local a, day = cal.anchor
      if cal.unit == 'DAY' then
        day = a.day + n
      elseif cal.unit == 'WEEK' then
        day = a.day + 7 * n
      else
        local months = a.y * 12 + a.m - 1 + n
        local y = floor(months / 12)
        local m = months - y * 12 + 1
        day = days_from_civil(y, m, math.min(a.d, month_days(y, m)))
      end
      return instant(cal.zone, day * DAY + a.wall)
    end

    -- The period [start, end) (ms) holding now_ms (calendar.rs compute).
    local function period(cal, now)
      local a = cal.anchor
      local local_day = floor((now + offset(cal.zone, now)) / DAY)
      local n
      if cal.unit == 'DAY' then
        n = local_day - a.day
      elseif cal.unit == 'WEEK' then
        n = floor((local_day - a.day) / 7)
      else
        local y, m = civil_from_days(local_day)
        n = (y * 12 + m) - (a.y * 12 + a.m)
      end
      local start = renewal(cal, n)
      for _ = 1, 8 do
        if start <= now then break end
        n = n - 1
        start = renewal(cal, n)
      end
      local e = renewal(cal, n + 1)
      for _ = 1, 8 do
        if e > now then break end
        n, start = n + 1, e
        e = renewal(cal, n + 1)
      end
      if not (start <= now and now < e) then fail(ERR.internal(KINDS.QUOTA.label)) end
      return math.max(start, 0), e
    end
    QUOTA.period = period

    -- `UTC`, `+hh:mm`/`-hh:mm` or an IANA name of the table, any case
    -- (calendar.rs Zone::parse): { text (as stored), fixed (ms) or nil }.
    local function zone(s)
      if upper(s) == 'UTC' then return { text = 'UTC', fixed = 0 } end
      local sign, h, m = match(s, '^([+-])(%d%d):(%d%d)$')
      if sign then
        h, m = tonumber(h), tonumber(m)
        if h > 23 or m > 59 then unknown_zone(s) end
        local minutes = h * 60 + m
        return { text = fmt('%s%02d:%02d', (sign == '-' and minutes > 0) and '-' or '+', h, m),
          fixed = (sign == '-' and -minutes or minutes) * MINUTE }
      end
      if #s > 40 then unknown_zone(s) end
      if not index then
        index = {}
        for name in pairs(ZONE_TABLE.zones) do index[lower(name)] = name end
      end
      local name = index[lower(s)]
      if not name then unknown_zone(s) end
      return { text = name }
    end

    -- Exactly `yyyy-mm-ddThh:mm` (T in either case), a real date of years 0001-9999.
    local function anchor(s)
      local y, mo, d, h, mi = match(s, '^(%d%d%d%d)%-(%d%d)%-(%d%d)[Tt](%d%d):(%d%d)$')
      y, mo, d, h, mi = tonumber(y), tonumber(mo), tonumber(d), tonumber(h), tonumber(mi)
      if not y or y < 1 or mo < 1 or mo > 12 or d < 1 or d > month_days(y, mo) or h > 23 or mi > 59 then
        fail(ERR.bad_anchor)
      end
      return { y = y, m = mo, d = d, day = days_from_civil(y, mo, d), wall = (h * 60 + mi) * MINUTE,
        text = fmt('%04d-%02d-%02dT%02d:%02d', y, mo, d, h, mi) }
    end

    -- The calendar of `unit` (checked: DAY, WEEK or MONTH, upper case), the TZ and
    -- ANCHOR given (or nil), checked in the module's order: zone, then anchor.
    function KINDS.QUOTA.calendar(unit, tz, at)
      local z = tz and zone(tz) or { text = 'UTC', fixed = 0 }
      local a = anchor(at or '2001-01-01T00:00')
      return { unit = unit, zone = z, anchor = a, text = unit .. ' ' .. a.text .. ' ' .. z.text }
    end

    -- A stored field (decimal.rs parse_u64), or nil.
    local function u64(s)
      if #s > 38 then return nil end
      local v = big(s)
      if cmp(v, U64_MAX) > 0 then return nil end
      return v
    end

    -- The stored state `v` (nil if absent; its penalty split off): start, end and
    -- count (exact integers) and whether its calendar is `text` (codec.rs decode_quota).
    function QUOTA.read(v, kind, text)
      if sub(v, 1, #kind.tag + 1) ~= kind.tag .. ':' then read_string(v, kind, 3) end
      local a, b, c, cal = match(v, '^[^:]*:(%d+):(%d+):(%d+):([^|]*)')
      a, b, c = a and u64(a), b and u64(b), c and u64(c)
      if not (a and b and c) or cal == '' then foreign(kind.label) end
      return a, b, c, cal == text
    end
  end

  local function decide_quota(v, req, now)
    local kind, limit, cal = req.kind, req.p[1], req.p[3]
    local start, e, count, same
    if v then start, e, count, same = QUOTA.read(v, kind, cal.text) end
    local live = v and cmp(now, mul(e, NS_PER_MS)) < 0
    if not (live and same) then
      count = live and count or ZERO
      start, e = QUOTA.period(cal, div(now, NS_PER_MS))
    end
    -- The fixed window's count step (07-fixed.lua), on the calendar's period.
    return charge_window(req, limit, count, sub_(mul(e, NS_PER_MS), now), function(c)
      if is_zero(c) then return { op = 'del' } end
      return {
        op = 'set', value = 'quota:' .. str(start) .. ':' .. str(e) .. ':' .. str(c) .. ':' .. cal.text,
        expire = min(e, MAX_EXPIRE_MS),
      }
    end)
  end
