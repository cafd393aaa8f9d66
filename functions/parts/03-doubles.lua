  --------------------------------------------------------------------------------
  -- Exact integers in doubles, for the fast paths. Every value here is an integer
  -- 0 <= x < SMALL, exact in a double; products of two such values may pass 2^53,
  -- so they are compared and divided through an exact two-term product (Dekker),
  -- never rounded. For integers 0 <= a < 2^53 and b >= 1, a / b is off by at most
  -- a * 2^-53 / b < 1 / b, less than its distance to any other integer: floor(a / b)
  -- and Lua's a % b (a - floor(a / b) * b) are exact, and cheaper than math.fmod.
  -- An instant is a pair (s, n): seconds and nanoseconds within them
  -- (0 <= n < NS_PER_S), so that instants (about 1.8e18 ns) need no limbs.
  -- A fast path that meets a value it cannot hold this way returns nil, and the
  -- call is decided again by the exact limb arithmetic above (never a rounding).
  --------------------------------------------------------------------------------

  local SPLIT = 134217729 -- 2^27 + 1: splits a double into two 26-bit halves
  local HUGE = math.huge
  local match, byte = string.match, string.byte

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
      local r = p % d
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

  -- The fast paths take clocks before this second (the year 2540): instants and
  -- expiries then stay far below U64_MAX ns and the expiry cap, so neither caps.
  local FAST_S = 18000000000
  -- A debt or wait held in doubles stays below this (about 104 days), so that a
  -- sum of it and a nanosecond of the second stays below SMALL.
  local FAST_NS = SMALL - NS_PER_S

  -- Decimal text without string.format or tostring (each a C call that costs as
  -- much as a whole decision): two digits at a time from tables built once, kept
  -- small because Redis's garbage-collection steps walk the library's whole heap.
  -- D2[k] is k in two digits, U2[k] k without a leading zero (0 <= k < 100).
  local D2, U2 = {}, {}
  for k = 0, 99 do
    D2[k], U2[k] = fmt('%02d', k), fmt('%d', k)
  end

  -- The decimal digits of an integer 0 <= x < 10^14, no leading zeros.
  local function dec(x)
    if x < 100 then return U2[x] end
    local a = x % 100
    x = (x - a) / 100
    if x < 100 then return U2[x] .. D2[a] end
    local b = x % 100
    x = (x - b) / 100
    if x < 100 then return U2[x] .. D2[b] .. D2[a] end
    local c = x % 100
    x = (x - c) / 100
    if x < 100 then return U2[x] .. D2[c] .. D2[b] .. D2[a] end
    local d = x % 100
    x = (x - d) / 100
    if x < 100 then return U2[x] .. D2[d] .. D2[c] .. D2[b] .. D2[a] end
    local e = x % 100
    x = (x - e) / 100
    if x < 100 then return U2[x] .. D2[e] .. D2[d] .. D2[c] .. D2[b] .. D2[a] end
    local f = x % 100
    x = (x - f) / 100
    return U2[x] .. D2[f] .. D2[e] .. D2[d] .. D2[c] .. D2[b] .. D2[a]
  end

  -- The decimal text of a second, kept for the last one asked: consecutive calls
  -- write instants in the same few seconds.
  local text_second, text_of_second = -1, ''
  local function second_digits(s)
    if s ~= text_second then text_second, text_of_second = s, dec(s) end
    return text_of_second
  end

  -- The text of the last expiry written (consecutive calls often expire in the
  -- same millisecond).
  local expire_value, expire_text = -1, ''

  -- `prefix` followed by the instant (s, n) as the module writes it (decimal ns, no
  -- leading zeros; s < 10^11), and its expiry (whole ms, rounded up) as text.
  -- (second_digits inline: this runs on every admitted call.)
  local function instant_texts(prefix, s, n)
    local n5 = n % 100
    local n4 = (n - n5) / 100 % 100
    local n3 = (n - n5 - n4 * 100) / 10000 % 100
    local n2 = (n - n5 - n4 * 100 - n3 * 10000) / 1000000 % 100
    local n1 = (n - n5 - n4 * 100 - n3 * 10000 - n2 * 1000000) / 100000000
    local ms = (n - n % NS_PER_MS) / NS_PER_MS
    if n % NS_PER_MS > 0 then ms = ms + 1 end
    if s == 0 then return prefix .. dec(n), dec(ms) end
    if s ~= text_second then text_second, text_of_second = s, dec(s) end
    local digits = text_of_second
    local at = s * 1000 + ms
    if at ~= expire_value then
      if ms < 1000 then
        local low = ms % 10
        expire_value, expire_text = at, digits .. D2[(ms - low) / 10] .. U2[low]
      else
        expire_value, expire_text = at, dec(at)
      end
    end
    return prefix .. digits .. U2[n1] .. D2[n2] .. D2[n3] .. D2[n4] .. D2[n5], expire_text
  end

  -- DV[b]: the digit of the byte b, nil for any other byte.
  local DV = {}
  for k = 0, 9 do DV[48 + k] = k end

  -- The instant written as the 19 digits of v from position i, as (s, n); nil
  -- unless all 19 are digits (instants from 2001 to 2286).
  local function digits19(v, i)
    local a, b, c, d, e, f, g, h, j, k, l, m, o, p, q, r, t, u, w = byte(v, i, i + 18)
    a, b, c, d, e, f, g, h, j, k = DV[a], DV[b], DV[c], DV[d], DV[e], DV[f], DV[g], DV[h], DV[j], DV[k]
    l, m, o, p, q, r, t, u, w = DV[l], DV[m], DV[o], DV[p], DV[q], DV[r], DV[t], DV[u], DV[w]
    if not (a and b and c and d and e and f and g and h and j and k and l and m and o and p
      and q and r and t and u and w) then
      return nil
    end
    return ((((((((a * 10 + b) * 10 + c) * 10 + d) * 10 + e) * 10 + f) * 10 + g) * 10 + h) * 10 + j) * 10 + k,
      (((((((l * 10 + m) * 10 + o) * 10 + p) * 10 + q) * 10 + r) * 10 + t) * 10 + u) * 10 + w
  end

  -- The same, when these 19 digits end v.
  local function instant19(v, i)
    if #v ~= i + 18 then return nil end
    return digits19(v, i)
  end

  -- Parsed string states by their text, one table per kind: a hot key's state
  -- is read again and again unchanged. Invariant: an entry is what parsing its
  -- text gives; the tables are emptied when they hold STATES_MAX entries.
  local STATES_MAX = 64
  local states, remembered = {}, 0
  local function remember(kind, v, parsed)
    if remembered >= STATES_MAX then states, remembered = {}, 0 end
    local t = states[kind]
    if not t then
      t = {}
      states[kind] = t
    end
    t[v], remembered = parsed, remembered + 1
    return parsed
  end

  -- (s, n) + ns, for 0 <= ns < FAST_NS.
  local function later(s, n, ns)
    local t = n + ns
    local r = t % NS_PER_S
    return s + (t - r) / NS_PER_S, r
  end

