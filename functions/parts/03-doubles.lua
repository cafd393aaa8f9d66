  --------------------------------------------------------------------------------
  -- Exact integers in doubles, for the fast paths. Every value here is an integer
  -- 0 <= x < SMALL, exact in a double; products of two such values may pass 2^53,
  -- so they are compared and divided through an exact two-term product (Dekker),
  -- never rounded. An instant is a pair (s, n): seconds and nanoseconds within
  -- them (0 <= n < NS_PER_S), so that instants (about 1.8e18 ns) need no limbs.
  -- A fast path that meets a value it cannot hold this way returns nil, and the
  -- call is decided again by the exact limb arithmetic above (never a rounding).
  --------------------------------------------------------------------------------

  local SPLIT = 134217729 -- 2^27 + 1: splits a double into two 26-bit halves
  local HUGE = math.huge
  local match = string.match

  -- a * b as p + e exactly (p the rounded product), for integers 0 <= a, b < 2^53.
  local function two_prod(a, b)
    local p = a * b
    if p < SMALL then return p, 0 end
    local c = SPLIT * a
    local ah = c - (c - a)
    local al = a - ah
    c = SPLIT * b
    local bh = c - (c - b)
    local bl = b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl
  end

  -- The sign of a * b - c * d, exactly: -1, 0 or 1. (p - q is exact where the
  -- products are within a factor of two, and f - e is exact as |e|, |f| <= 2^52;
  -- elsewhere p - q is far larger than f - e, so its sign decides.)
  local function mul_cmp(a, b, c, d)
    local p, e = two_prod(a, b)
    local q, f = two_prod(c, d)
    local x, y = p - q, f - e
    if x > y then return 1 end
    if x < y then return -1 end
    return 0
  end

  -- floor(a * b / d) for integers a, b >= 0, d > 0 below SMALL, and whether
  -- the division is exact; nil when the quotient is not below SMALL.
  local function muldiv(a, b, d)
    local p = a * b
    if p < SMALL then
      local r = fmod(p, d)
      return (p - r) / d, r == 0
    end
    -- q is within a few units of the quotient (two roundings): correct it exactly.
    local q = floor(p / d)
    if q >= SMALL + 8 then return nil end
    while q > 0 and mul_cmp(q, d, a, b) > 0 do q = q - 1 end
    while mul_cmp(q + 1, d, a, b) <= 0 do q = q + 1 end
    if q >= SMALL then return nil end
    return q, mul_cmp(q, d, a, b) == 0
  end

  -- ceil(a * b / d), or nil (see muldiv).
  local function muldiv_ceil(a, b, d)
    local q, exact = muldiv(a, b, d)
    if q and not exact then q = q + 1 end
    return q
  end

  -- Nanoseconds as whole milliseconds, rounded up (the replies' rule).
  local function ceil_ms(ns)
    local r = fmod(ns, NS_PER_MS)
    if r == 0 then return ns / NS_PER_MS end
    return (ns - r) / NS_PER_MS + 1
  end

  -- The fast paths take clocks before this second (the year 2540): instants and
  -- expiries then stay far below U64_MAX ns and the expiry cap, so neither caps.
  local FAST_S = 18000000000
  -- A debt or wait held in doubles stays below this (about 104 days), so that a
  -- sum of it and a nanosecond of the second stays below SMALL.
  local FAST_NS = SMALL - NS_PER_S

  -- The instant (s, n) written as the module writes it: decimal ns, no leading zeros.
  local function instant_str(s, n)
    if s == 0 then return fmt('%.0f', n) end
    return fmt('%.0f%09.0f', s, n)
  end

  -- (s, n) + ns, for 0 <= ns < FAST_NS.
  local function later(s, n, ns)
    local t = n + ns
    local r = fmod(t, NS_PER_S)
    return s + (t - r) / NS_PER_S, r
  end

  -- max(at - now, 0) in ns for instants (ts, tn) and (s, n); nil when not below FAST_NS.
  local function debt_of(ts, tn, s, n)
    if ts > s then
      if ts - s >= 8999999 then return nil end
      return (ts - s) * NS_PER_S + (tn - n)
    end
    if ts == s and tn > n then return tn - n end
    return 0
  end

  -- The expiry of the instant (s, n): whole ms, rounded up.
  local function expire_at(s, n)
    return s * 1000 + ceil_ms(n)
  end

  -- The instant that the digits `hi .. lo` (lo: the last 9) write, as a pair; nil
  -- when there are too many digits for a double.
  local function instant_of(hi, lo)
    if #hi > 15 then return nil end
    return tonumber(hi), tonumber(lo)
  end
