#!lua name=rl
--[==[
rl as a Redis Functions library: the rl module's commands, with its grammar, replies,
errors and stored state formats, for servers that cannot load modules (managed Redis
and Valkey). Load it with `FUNCTION LOAD REPLACE` (or `redis-cli -x FUNCTION LOAD
REPLACE < functions/rl.lua`) and call

  FCALL rl_gcra 1 key limit period [BURST b] [COST n | REFUND n | DEBIT n] [PEEK] [BLOCK ms]
    [PENALTY d [ESCALATE max]]
    (and rl_tokenbucket, rl_leaky, rl_sliding, rl_slidinglog, rl_fixed likewise;
    DEBIT is never denied and takes neither PEEK nor BLOCK)
  FCALL rl_all numkeys key [key ...] ALGO params [BURST b] [COST n | REFUND n | DEBIT n]
    [PENALTY d [ESCALATE max]] ... [PEEK]
  FCALL rl_ban 1 key ms      (RL.BAN: the key's penalty set by hand; 0 lifts it)
  FCALL rl_acquire 1 key limit timeout lease_id [PEEK] [BLOCK ms]
  FCALL rl_release 1 key lease_id
  FCALL cl_throttle 1 key max_burst count period [quantity]
  FCALL_RO rl_peek 1 key ALGO params [COST n]      (flag no-writes: replicas too)
  FCALL_RO rl_peek 1 key ACQUIRE limit timeout lease_id
  FCALL rl_limit 1 key policy [COST n | REFUND n | DEBIT n] [PEEK] [BLOCK ms]
  FCALL_RO rl_peek 1 key POLICY policy [COST n]
  FCALL_RO rl_policy 0 LIST | GET policy | DIGEST
    (named policies: written into this file by scripts/library-policies.py; rl_all
    takes POLICY policy [COST n | REFUND n | DEBIT n] clauses)

BLOCK is accepted and decides at once: a script cannot wait (a denial it would have
waited out starts no PENALTY). A penalty lives in its limiter's key, as the module
stores it: after a string state (`|penalty:<end>:<len>:<keep>`), as a key's whole
value, or as a sliding log's member scored -1.

Sections: exact integers; exact integers in doubles (the fast paths); the facts
shared with the module and the clients (the kinds, the bounds, the error texts:
generated from facts/rl.toml by scripts/generate-facts.py); errors and the grammar;
state on keys; the algorithms (a line-by-line port of src/algorithm/*.rs,
each with its fast path); penalties; the commands; RL.BAN; registration. Each is a file of
functions/parts/, which scripts/build-library.sh (make library) joins into this file:
edit the parts, not this file.

Invariants:
- Time is the server's TIME, in nanoseconds (microsecond resolution), read once per call.
- Integers are exact. A decision is first made in doubles (the fast path): instants as
  seconds and nanoseconds, every value below 9 * 10^15, products compared and divided
  through an exact two-term product. Whatever does not fit (periods or debts past about
  104 days, states or clocks past the year 2540, sliding windows past 2 * 10^9 ms) is
  decided again by the exact path: a Lua number below 2^53, a table of base-10^7 limbs
  above. No value beyond 2^53 is ever a rounded double, except CL.THROTTLE's emission
  interval, which redis-cell computes in doubles.
- Every call validates and decides everything before its first write, so an error
  reply never follows a partial write; a Lua runtime error becomes the module's
  `ERR internal error in RL.X: the request was not applied`.
- The library's heap stays small (Redis's garbage-collection steps walk all of it on
  every 50th call): at most 512 parsed requests and 64 parsed states are kept.
]==]

-- The named policies this library decides by (FCALL rl_limit, rl_peek's POLICY,
-- rl_all's POLICY clauses, rl_policy): a policy file's lines, each after its number
-- in the file, written in here by scripts/library-policies.py (the one line below,
-- replaced whole); none as built.
local POLICY_SOURCE, POLICY_LINES = nil, {}

-- Redis loads a library with only `redis` in scope (no string, math or table),
-- so everything is built on the first call, inside `build`.
local function build()
  local type, tonumber, assert, error = type, tonumber, assert, error
  local floor = math.floor
  local sub, find, fmt, upper, gsub = string.sub, string.find, string.format, string.upper, string.gsub
  local concat = table.concat

  --------------------------------------------------------------------------------
  -- Exact non-negative integers. An integer below SMALL (< 2^53) is a Lua number,
  -- exact in a double; a larger one (a "big") is a table of base-10^7 limbs, least
  -- significant first, no zero limb on top. Every operation takes either form and
  -- returns a number whenever the result is below SMALL, so the common case (debts
  -- and periods of hours, counts of thousands) never leaves double arithmetic;
  -- instants in ns (~1.8e18) and products such as burst * period take the limb
  -- path, whose limb products plus carries stay below 2^53.
  --------------------------------------------------------------------------------

  local SMALL, fmod, limbs, int, big, str, num, cmp, add, sub_, satsub, mul, divmod, div, mod, div_ceil, ns_of_time, min, max, is_zero
  do
    local BASE = 10000000
    SMALL = 9000000000000000
    fmod = math.fmod

    local function trim(a)
      local n = #a
      while n > 0 and a[n] == 0 do
        a[n] = nil
        n = n - 1
      end
      return a
    end

    -- The limbs of a number 0 <= x < 2^53.
    function limbs(x)
      local a = {}
      while x > 0 do
        local r = x % BASE
        a[#a + 1] = r
        x = (x - r) / BASE
      end
      return a
    end

    local function as_limbs(a)
      if type(a) == 'number' then return limbs(a) end
      return a
    end

    -- A limb table as a number when below SMALL (three limbs: below 90 * 10^14).
    local function norm(a)
      local n = #a
      if n <= 2 then return (a[2] or 0) * BASE + (a[1] or 0) end
      if n == 3 and a[3] < 90 then return (a[3] * BASE + a[2]) * BASE + a[1] end
      return a
    end

    -- An integer from a Lua integer 0 <= x < 2^53.
    function int(x) return x end

    -- An integer from ASCII digits.
    function big(s)
      if #s <= 15 then return tonumber(s) end
      local a, i = {}, #s
      while i >= 1 do
        local j = i - 6
        if j < 1 then j = 1 end
        a[#a + 1] = tonumber(sub(s, j, i))
        i = j - 1
      end
      return norm(trim(a))
    end

    -- Decimal digits, no leading zeros.
    function str(a)
      if type(a) == 'number' then return fmt('%.0f', a) end
      local n = #a
      local parts = { fmt('%.0f', a[n]) }
      for i = n - 1, 1, -1 do
        parts[#parts + 1] = fmt('%07.0f', a[i])
      end
      return concat(parts)
    end

    -- A Lua number: exact below 2^53, the nearest double (about) above.
    function num(a)
      if type(a) == 'number' then return a end
      local x = 0
      for i = #a, 1, -1 do
        x = x * BASE + a[i]
      end
      return x
    end

    local function lcmp(a, b)
      if #a ~= #b then return #a < #b and -1 or 1 end
      for i = #a, 1, -1 do
        if a[i] ~= b[i] then return a[i] < b[i] and -1 or 1 end
      end
      return 0
    end

    -- Invariant: numbers are below SMALL and limb tables at least SMALL, so a
    -- number and a table compare without conversion.
    function cmp(a, b)
      local ta, tb = type(a) == 'number', type(b) == 'number'
      if ta and tb then
        if a == b then return 0 end
        return a < b and -1 or 1
      end
      if ta then return -1 end
      if tb then return 1 end
      return lcmp(a, b)
    end

    local function ladd(a, b)
      local r, carry = {}, 0
      for i = 1, (#a > #b and #a or #b) do
        local t = (a[i] or 0) + (b[i] or 0) + carry
        if t >= BASE then
          r[i], carry = t - BASE, 1
        else
          r[i], carry = t, 0
        end
      end
      if carry > 0 then r[#r + 1] = carry end
      return r
    end

    -- r with the limbs of a number carry >= 0 appended (the carry out of a sum or product).
    local function append_carry(r, carry)
      while carry > 0 do
        local l = carry % BASE
        r[#r + 1], carry = l, (carry - l) / BASE
      end
      return r
    end

    -- a + x for a limb table a and a number x (no conversion of x to limbs).
    local function add_small(a, x)
      local r, carry = {}, x
      for i = 1, #a do
        local t = a[i] + carry
        if t >= BASE then
          local l = t % BASE
          r[i], carry = l, (t - l) / BASE
        else
          r[i], carry = t, 0
        end
      end
      return append_carry(r, carry)
    end

    function add(a, b)
      local ta, tb = type(a) == 'number', type(b) == 'number'
      if ta and tb then
        local s = a + b
        if s < SMALL then return s end
        return ladd(limbs(a), limbs(b))
      end
      if tb then return add_small(a, b) end
      if ta then return add_small(b, a) end
      return ladd(a, b)
    end

    -- a - b, for a >= b.
    local function lsub(a, b)
      local r, borrow = {}, 0
      for i = 1, #a do
        local t = a[i] - (b[i] or 0) - borrow
        if t < 0 then
          r[i], borrow = t + BASE, 1
        else
          r[i], borrow = t, 0
        end
      end
      assert(borrow == 0, 'subtraction underflow')
      return trim(r)
    end

    -- a - x for a limb table a and a number x <= a.
    local function sub_small(a, x)
      local r, borrow = {}, x
      for i = 1, #a do
        local t = a[i] - borrow
        if t < 0 then
          local l = t % BASE
          r[i], borrow = l, (l - t) / BASE
        else
          r[i], borrow = t, 0
        end
      end
      assert(borrow == 0, 'subtraction underflow')
      return norm(trim(r))
    end

    function sub_(a, b)
      local ta, tb = type(a) == 'number', type(b) == 'number'
      if ta and tb then
        assert(a >= b, 'subtraction underflow')
        return a - b
      end
      if tb then return sub_small(a, b) end
      assert(not ta, 'subtraction underflow')
      return norm(lsub(a, b))
    end

    -- max(a - b, 0): Rust's saturating_sub on unsigned integers.
    function satsub(a, b)
      if cmp(a, b) <= 0 then return 0 end
      return sub_(a, b)
    end

    local function lmul(a, b)
      local na, nb = #a, #b
      if na == 0 or nb == 0 then return {} end
      local r = {}
      for i = 1, na + nb do r[i] = 0 end
      for i = 1, na do
        local ai, carry = a[i], 0
        if ai ~= 0 then
          for j = 1, nb do
            local k = i + j - 1
            local t = r[k] + ai * b[j] + carry
            carry = floor(t / BASE)
            r[k] = t - carry * BASE
          end
          local k = i + nb
          while carry > 0 do
            local t = r[k] + carry
            carry = floor(t / BASE)
            r[k] = t - carry * BASE
            k = k + 1
          end
        end
      end
      return trim(r)
    end

    -- a * x for a limb table a and a number 0 < x < BASE.
    local function mul_small(a, x)
      local r, carry = {}, 0
      for i = 1, #a do
        local t = a[i] * x + carry
        local l = t % BASE
        r[i], carry = l, (t - l) / BASE
      end
      return append_carry(r, carry)
    end

    function mul(a, b)
      local ta, tb = type(a) == 'number', type(b) == 'number'
      if ta and tb then
        local p = a * b
        if p < SMALL then return p end
      end
      if a == 0 or b == 0 then return 0 end
      if tb and b < BASE then return mul_small(as_limbs(a), b) end
      if ta and a < BASE then return mul_small(as_limbs(b), a) end
      return norm(lmul(as_limbs(a), as_limbs(b)))
    end

    -- Quotient and remainder of limb tables a / d, d > 0 (schoolbook; each quotient
    -- limb is estimated in doubles and then corrected exactly).
    local function ldivmod(a, d)
      local nd = #d
      assert(nd > 0, 'division by zero')
      local q = {}
      if nd == 1 then
        local dv, r = d[1], 0
        for i = #a, 1, -1 do
          local t = r * BASE + a[i]
          local qi = floor(t / dv)
          r = t - qi * dv
          q[i] = qi
        end
        return trim(q), limbs(r)
      end
      local r, dn = {}, num(d)
      for i = #a, 1, -1 do
        table.insert(r, 1, a[i])
        trim(r)
        local qi = 0
        if lcmp(r, d) >= 0 then
          qi = floor(num(r) / dn)
          if qi >= BASE then qi = BASE - 1 end
          local p = lmul(d, limbs(qi))
          while lcmp(p, r) > 0 do
            qi = qi - 1
            p = lsub(p, d)
          end
          r = lsub(r, p)
          while lcmp(r, d) >= 0 do
            qi = qi + 1
            r = lsub(r, d)
          end
        end
        q[i] = qi
      end
      for i = 1, #a do q[i] = q[i] or 0 end
      return trim(q), r
    end

    local div_ms

    -- Quotient and remainder of a limb table by a number 0 < d < 9 * 10^8 (so
    -- that r * BASE + limb stays below 2^53).
    local function short_divmod(a, d)
      local q, r = {}, 0
      for i = #a, 1, -1 do
        local t = r * BASE + a[i]
        r = fmod(t, d)
        q[i] = (t - r) / d
      end
      return norm(trim(q)), r
    end

    function divmod(a, d)
      if type(d) == 'number' then
        assert(d > 0, 'division by zero')
        if type(a) == 'number' then
          -- fmod is exact; a - r is a multiple of d, so the division is exact too.
          local r = fmod(a, d)
          return (a - r) / d, r
        end
        if d < 900000000 then return short_divmod(a, d) end
        if d % 1000000 == 0 then
          -- Durations are whole milliseconds: floor(floor(a / 10^6) / (d / 10^6)) = floor(a / d).
          local q = div_ms(a, d)
          return q, sub_(a, mul(q, d))
        end
      elseif type(a) == 'number' then
        return 0, a
      end
      local q, r = ldivmod(as_limbs(a), as_limbs(d))
      return norm(q), norm(r)
    end

    function div_ms(a, d)
      local q = divmod(a, 1000000)
      return (divmod(q, d / 1000000))
    end

    function div(a, d)
      return (divmod(a, d))
    end

    function mod(a, d)
      local _, r = divmod(a, d)
      return r
    end

    -- ceil(a / d)
    function div_ceil(a, d)
      local q, r = divmod(a, d)
      if r ~= 0 then q = add(q, 1) end
      return q
    end

    -- The instant (seconds, nanoseconds) as one integer: seconds * 10^9 + nanoseconds,
    -- built limb by limb.
    function ns_of_time(seconds, nanos)
      local x = seconds * 100 -- ns = x * BASE + nanos; both exact
      local l1 = nanos % BASE
      local x2 = x + (nanos - l1) / BASE
      local l2 = x2 % BASE
      return norm(trim({ l1, l2, (x2 - l2) / BASE }))
    end

    function min(a, b) return cmp(a, b) <= 0 and a or b end
    function max(a, b) return cmp(a, b) >= 0 and a or b end
    function is_zero(a) return a == 0 end
  end

  local ZERO = 0
  local ONE = 1
  local NS_PER_US = 1000
  local NS_PER_MS = 1000000
  local NS_PER_S = 1000000000
  local U64_MAX = big('18446744073709551615')
  local I64_MAX = big('9223372036854775807')
  local MAX_EXPIRE_MS = big('1000000000000000')
  -- The largest double below 2^63: what a reply above 2^53 becomes at most (Lua
  -- numbers are doubles; Redis converts them to integer replies).
  local I64_MAX_DOUBLE = 9223372036854774784

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

  -- generated from facts/rl.toml by scripts/generate-facts.py: do not edit
  --------------------------------------------------------------------------------
  -- The facts the library shares with the module and the client packages: the
  -- kinds, the per-call bounds, the duration units, the settings' defaults and the
  -- error texts (src/error.rs's, byte for byte).
  --------------------------------------------------------------------------------

  local MAX_COUNT = 1000000000000
  local MAX_COST = 1000000000000
  local MAX_DEBT = 1000000000000
  local MAX_DURATION_MS = 3650 * 86400000
  local MAX_LAYERS = 64
  local MAX_LEASE_ID = 256
  -- A key's penalty: its tag, the separator after a string state, its sliding-log score.
  local PENALTY = { tag = 'penalty', separator = '|', log_score = -1 }
  -- rl.sliding-log-max-limit's default (the library has no settings).
  local SLIDING_LOG_MAX = 100000
  -- The named policies' bounds (rl.max-policies: its default); 09-policies.lua adds
  -- the policies' functions to this table.
  local POLICY = { max_name = 64, max_count = 1000 }

  -- Each duration unit in milliseconds, by its upper-case suffix ('' is a bare integer's).
  local UNIT_MS = { [''] = 1000, ['MS'] = 1, ['S'] = 1000, ['M'] = 60000, ['H'] = 3600000, ['D'] = 86400000 }

  -- The algorithms, by their RL.ALL word: their command, label, stored tag, positional
  -- parameters and function.
  local KINDS = {
    GCRA = { command = 'rl.gcra', label = 'RL.GCRA', tag = 'gcra', params = { 'limit', 'period' }, fcall = 'rl_gcra' },
    TOKENBUCKET = { command = 'rl.tokenbucket', label = 'RL.TOKENBUCKET', tag = 'bucket', params = { 'capacity', 'refill', 'period' }, fcall = 'rl_tokenbucket' },
    LEAKY = { command = 'rl.leaky', label = 'RL.LEAKY', tag = 'leaky', params = { 'capacity', 'leak', 'period' }, fcall = 'rl_leaky' },
    SLIDING = { command = 'rl.sliding', label = 'RL.SLIDING', tag = 'sliding', params = { 'limit', 'window' }, fcall = 'rl_sliding' },
    SLIDINGLOG = { command = 'rl.slidinglog', label = 'RL.SLIDINGLOG', tag = 'slidinglog', params = { 'limit', 'window' }, fcall = 'rl_slidinglog' },
    FIXED = { command = 'rl.fixed', label = 'RL.FIXED', tag = 'fixed', params = { 'limit', 'window' }, fcall = 'rl_fixed' },
    QUOTA = { command = 'rl.quota', label = 'RL.QUOTA', tag = 'quota', params = { 'limit', 'unit' }, fcall = 'rl_quota' },
  }

  -- The error replies: a text, or a function of the text's arguments (in the order
  -- they first appear) returning it.
  local ERR = {
    wrong_arity = function(command) return fmt("ERR wrong number of arguments for '%s' command", command) end,
    bad_integer = function(name, min, max) return fmt('ERR %s must be an integer from %.0f to %.0f', name, min, max) end,
    bad_duration = function(name) return fmt('ERR %s must be a duration from 1ms to 3650d: a positive integer with an optional unit ms, s, m, h or d (bare integers are seconds)', name) end,
    unknown_option = function(option, command, expected) return fmt("ERR unknown option '%s' for '%s' (expected %s)", option, command, expected) end,
    unknown_clause_option = function(option, clause, expected) return fmt("ERR unknown option '%s' in RL.ALL clause %s (expected %s)", option, clause, expected) end,
    repeated_option = function(option) return fmt('ERR option %s given more than once', option) end,
    missing_value = function(option) return fmt('ERR option %s needs a value', option) end,
    rate_too_high = function(rate, period) return fmt('ERR %s per %s must be at most 1 per nanosecond: %s / %s must be at least 1ns', rate, period, period, rate) end,
    cost_with_refund = 'ERR COST and REFUND cannot be used together',
    debit_with = function(option) return fmt('ERR DEBIT cannot be used with %s', option) end,
    escalate_below_penalty = 'ERR ESCALATE max must be at least PENALTY d',
    bad_unit = 'ERR unit must be DAY, WEEK or MONTH',
    unknown_zone = function(zone) return fmt("ERR unknown time zone '%s': expected UTC, an offset such as +05:30 or -08:00, or an IANA name such as Europe/Paris", zone) end,
    bad_anchor = 'ERR ANCHOR must be a local date and time yyyy-mm-ddThh:mm (such as 2001-01-15T00:00)',
    clause_arity = function(algo) return fmt('ERR RL.ALL clause %s has too few parameters', algo) end,
    syntax = function(message) return fmt('ERR %s', message) end,
    wrong_type = 'WRONGTYPE Operation against a key holding the wrong kind of value',
    other_algorithm = function(found, expected) return fmt('ERR key holds %s state, not %s state: use another key or DEL it', found, expected) end,
    foreign_value = function(label) return fmt('ERR key holds a value that %s did not write: use another key or DEL it', label) end,
    unblocked = 'UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)',
    oom = "OOM command not allowed when used memory > 'maxmemory'.",
    shutting_down = 'UNBLOCKED the server is shutting down',
    no_such_policy = function(name) return fmt("ERR no such policy '%s'", name) end,
    policy_reserved = function(name) return fmt("ERR the policy name '%s' is reserved: INFO rl's field rl_policy_%s is the module's own", name, name) end,
    policy_name = function(max) return fmt('ERR a policy name is 1 to %.0f of A-Z, a-z, 0-9 and _ . : -', max) end,
    policy_algorithm = function(name, was) return fmt("ERR policy '%s' is %s: DEL it before giving it another algorithm", name, was) end,
    too_many_policies = function(max) return fmt('ERR at most %.0f policies (rl.max-policies)', max) end,
    no_permission = function(command) return fmt("NOPERM this user has no permissions to run the '%s' command", command) end,
    policy_file = function(file, problem) return fmt('ERR policy file %s: %s', file, problem) end,
    policy_file_line = function(file, line, problem) return fmt('ERR policy file %s line %.0f: %s', file, line, problem) end,
    no_policy_file = 'ERR no policy file: load the module with policy-file PATH',
    internal = function(label) return fmt('ERR internal error in %s: the request was not applied', label) end,
  }

  -- The syntax error's fixed replies, by name.
  local MSG = {
    all_shape = 'ERR RL.ALL needs numkeys keys followed by one algorithm clause per key',
    all_algorithm = 'ERR RL.ALL expects an algorithm after the keys: GCRA, TOKENBUCKET, LEAKY, SLIDING, SLIDINGLOG, FIXED or QUOTA',
    all_clauses = 'ERR RL.ALL needs exactly one algorithm clause per key',
    all_distinct = 'ERR RL.ALL keys must be distinct',
    peek_algorithm = 'ERR RL.PEEK expects an algorithm: GCRA, TOKENBUCKET, LEAKY, SLIDING, SLIDINGLOG, FIXED, QUOTA or ACQUIRE',
    lease_id = 'ERR lease_id must be 1 to 256 bytes',
    throttle_zero_rate = 'ERR count must be at most period * 10^9: period / count below 1 nanosecond is a zero rate',
    policy_algorithm = 'ERR RL.POLICY SET expects an algorithm after the name: GCRA, TOKENBUCKET, LEAKY, SLIDING, SLIDINGLOG, FIXED or QUOTA',
    policy_line_long = 'ERR a line is longer than 1024 bytes',
    policy_long = "ERR a policy's line (its name and definition, as RL.POLICY GET gives it) is at most 1024 bytes",
    policy_file_large = 'ERR larger than 16777216 bytes',
    policy_file_not_regular = 'ERR not a regular file',
    policy_file_link = "ERR a symbolic link: RL.POLICY SAVE replaces only a regular file (name the link's target in policy-file)",
    policy_save_large = "ERR the policies' lines come to more than 16777216 bytes, more than a policy file may hold: nothing was written",
    policy_file_folder_sync = 'ERR replaced, but its folder could not be flushed to disk',
    policy_twice = 'ERR a policy of this name is on an earlier line',
    throttle_burst = 'ERR max_burst is too large: (max_burst + 1) * period / count must be at most 3650 days',
  }
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

  --------------------------------------------------------------------------------
  -- State on keys (src/codec.rs, src/store): read what a key holds, write with an
  -- absolute expiry exactly what the module writes, so the replicated effects
  -- (SET ... PXAT, DEL, ZADD, ZREM, PEXPIREAT) and the state are byte-identical.
  --------------------------------------------------------------------------------

  -- GET, or the error reply it gave (WRONGTYPE for another type; NOPERM ...).
  local function get(key)
    local v = redis.pcall('GET', key)
    if type(v) == 'table' then fail(v.err or ERR.wrong_type) end
    return v
  end

  -- Strings this short may be int-encoded values, which the module tells apart by
  -- length alone; every string state is longer (store/mod.rs SHORT_STRING).
  local SHORT_STRING = 20

  -- The decimal fields of the string state `kind` wrote, from the key's state `v`
  -- (nil if absent; a value of at most SHORT_STRING bytes was refused before, and a
  -- penalty split off: 09-penalties.lua).
  local function read_string(v, kind, nfields)
    if not v then return nil end
    local parts, pos = {}, 1
    while true do
      local c = find(v, ':', pos, true)
      if not c then
        parts[#parts + 1] = sub(v, pos)
        break
      end
      parts[#parts + 1] = sub(v, pos, c - 1)
      pos = c + 1
      if #parts > nfields + 1 then break end
    end
    if parts[1] ~= kind.tag then
      local found = TAG_LABELS[parts[1]]
      if found then
        fail(ERR.other_algorithm(found, kind.label))
      end
      foreign(kind.label)
    end
    if #parts ~= nfields + 1 then foreign(kind.label) end
    local fields = {}
    for i = 2, nfields + 1 do
      local f = parts[i]
      if f == '' or #f > 38 or find(f, '[^0-9]') then foreign(kind.label) end
      fields[i - 1] = big(f)
    end
    return fields
  end

  -- An absolute time in ns as a Redis expiry in ms: rounded up, capped at 10^15.
  local function expire_ms(at_ns)
    return min(div_ceil(at_ns, NS_PER_MS), MAX_EXPIRE_MS)
  end

  -- Applies a write decided earlier (its expiry: an integer, or its decimal text);
  -- any other than SET and DEL is its own `apply(key, w)`.
  local function commit(key, w)
    if w.op == 'set' then
      local expire = w.expire
      if type(expire) ~= 'string' then expire = str(expire) end
      redis.call('SET', key, w.value, 'PXAT', expire)
    elseif w.op == 'del' then
      redis.call('DEL', key)
    else
      w.apply(key, w)
    end
  end

  -- TIME's seconds as a number, parsed once per second.
  local second_text, second = nil, 0

  -- The server's clock: TIME's seconds, and its microseconds as nanoseconds. The
  -- seconds are parsed once per second, six-digit microseconds from their bytes
  -- (tonumber costs as much as a decision).
  local function clock()
    local t = redis.call('TIME')
    if t[1] ~= second_text then second_text, second = t[1], tonumber(t[1]) end
    local u = t[2]
    if #u == 6 then
      local a, b, c, d, e, f = byte(u, 1, 6)
      return second, (((((a * 10 + b) * 10 + c) * 10 + d) * 10 + e) * 10 + f - 5333328) * NS_PER_US
    end
    return second, tonumber(u) * NS_PER_US
  end

  -- The server's clock in ns, as an exact integer.
  local function now_ns()
    return ns_of_time(clock())
  end

  --------------------------------------------------------------------------------
  -- The algorithms (src/algorithm). A decision is
  -- { allowed, limit (number), remaining (number), retry (big, or false: never),
  --   reset (big ns) }; an outcome adds `write` (nil when nothing changes).
  --------------------------------------------------------------------------------

  local NEVER = false

  local function narrow(v) return min(v, U64_MAX) end

  -- Virtual scheduling (schedule.rs): GCRA, token bucket and leaky bucket.
  local function sched_remaining(s, capacity, debt)
    return num(div(satsub(capacity, mul(debt, s.rate)), s.period))
  end

  local function sched_unchanged(s, capacity, debt, allowed, retry)
    return { allowed = allowed, queued = debt, remaining = sched_remaining(s, capacity, debt), retry = retry, reset = debt }
  end

  local function sched_step(s, tat, now, cost)
    local debt = satsub(tat, now)
    local capacity = mul(s.burst, s.period)
    if cost > s.burstn then return sched_unchanged(s, capacity, debt, false, NEVER) end
    if cost == 0 then return sched_unchanged(s, capacity, debt, true, ZERO) end
    local spend = mul(int(cost), s.period)
    local room = sub_(capacity, spend)
    if cmp(mul(debt, s.rate), room) <= 0 then
      local debt_after = add(debt, div(spend, s.rate))
      return {
        allowed = true, queued = debt, remaining = sched_remaining(s, capacity, debt_after),
        retry = ZERO, reset = debt_after, new_tat = add(now, debt_after),
      }
    end
    return sched_unchanged(s, capacity, debt, false, sub_(debt, div(room, s.rate)))
  end

  local function sched_refund(s, tat, now, units)
    local debt = satsub(tat, now)
    local back = div(mul(int(units), s.period), s.rate)
    local debt_after = satsub(debt, back)
    local step = sched_unchanged(s, mul(s.burst, s.period), debt_after, true, ZERO)
    if not is_zero(debt) and units > 0 then step.new_tat = add(now, debt_after) end
    return step
  end

  -- Charges `units` whatever the debt (DEBIT, schedule.rs debit): it grows by
  -- floor(units * T), saturating at (burst + MAX_DEBT) units' worth, and never
  -- shrinks (a debt already past the cap stays). Admitted; the retry is when a
  -- request of cost 1 is.
  local function sched_debit(s, tat, now, units)
    local debt = satsub(tat, now)
    local cap = div(mul(add(s.burst, MAX_DEBT), s.period), s.rate)
    local charged = add(debt, div(mul(int(units), s.period), s.rate))
    local debt_after = max(debt, min(charged, cap))
    -- A cost of 1 fits once debt * rate <= burst * T - T (as in sched_step).
    local room = mul(sub_(s.burst, ONE), s.period)
    local retry = ZERO
    if cmp(mul(debt_after, s.rate), room) > 0 then retry = sub_(debt_after, div(room, s.rate)) end
    local step = sched_unchanged(s, mul(s.burst, s.period), debt_after, true, retry)
    if cmp(debt_after, debt) > 0 then step.new_tat = add(now, debt_after) end
    return step
  end

  -- GCRA, token bucket, leaky bucket on one key (decision/limiter.rs decide_instant).
  local function decide_instant(v, req, now)
    local kind, p = req.kind, req.p
    local s
    if kind.name == 'GCRA' then
      s = { period = p[2], rate = int(p[1]), burst = int(req.burst), burstn = req.burst }
    else
      s = { period = p[3], rate = int(p[2]), burst = int(p[1]), burstn = p[1] }
    end
    local stored = read_string(v, kind, 1)
    local tat = stored and stored[1] or ZERO
    local step
    if req.refund then
      step = sched_refund(s, tat, now, req.cost)
    elseif req.debit then
      step = sched_debit(s, tat, now, req.cost)
    else
      step = sched_step(s, tat, now, req.cost)
      if kind.name == 'LEAKY' and step.allowed then step.retry = step.queued end
    end
    local write
    if step.new_tat then
      if cmp(step.new_tat, now) <= 0 then
        write = { op = 'del' }
      else
        write = { op = 'set', value = kind.tag .. ':' .. str(step.new_tat), expire = expire_ms(step.new_tat) }
      end
    end
    step.limit = s.burstn
    return step, write
  end

  -- The same in doubles (the fast path), for a period below FAST_NS.

  local function below_fast(x)
    if type(x) == 'number' and x < FAST_NS then return x end
    return HUGE
  end

  -- The stored instant of the value v, a state `kind` wrote, parsed and remembered
  -- (the decider looks it up first): { s, n }, or nil when it does not fit the fast
  -- path (including any value the exact path refuses).
  local function stored_instant(kind, v)
    if #v <= SHORT_STRING or sub(v, 1, #kind.prefix) ~= kind.prefix then return nil end
    local ts, tn = instant19(v, #kind.prefix + 1)
    if not ts then
      local hi, lo = match(v, kind.fast_pattern)
      if not hi or #hi > 15 then return nil end
      ts, tn = tonumber(hi), tonumber(lo)
    end
    return remember(kind, v, { ts, tn })
  end

  -- The fast decision of a request, as a closure over its constants (set once, when
  -- the request is parsed): P, R, B (period, rate, burst) and, for its cost n,
  -- L = floor((B - n) * P / R), the largest debt that admits it (HUGE when beyond
  -- any debt held here), and Q = floor(n * P / R), the debt admitting it adds (a
  -- refund's: the debt it gives back, HUGE when beyond any). Called with the key's
  -- value v and the instant (s, n), it returns allowed, remaining, retry (ns, or
  -- NEVER), reset (ns), and the write: nil (none), false (DEL), or the state's and
  -- its expiry's text; or nil when a value does not fit the fast path.
  local function instant_decider(kind, P, R, B, cost, refund)
    local L, Q
    if refund then
      Q = below_fast(div(mul(cost, P), R))
    elseif cost > 0 and cost <= B then
      L = below_fast(div(mul(B - cost, P), R))
      Q = below_fast(div(mul(cost, P), R))
      if Q == HUGE then return nil end
    end
    -- T, the ns one unit costs, when it is whole: the common case, where the
    -- remaining units need no product.
    local T = P % R == 0 and P / R or nil
    local prefix, leaky = kind.prefix, kind.name == 'LEAKY'

    -- floor(max(B * P - x * R, 0) / P) = B - ceil(x * R / P), at least 0: whole
    -- units admissible at debt x.
    local function left_at(x)
      if x == 0 then return B end
      local q
      if T then
        local r = x % T
        q = (x - r) / T
        if r > 0 then q = q + 1 end
      else
        q = muldiv_ceil(x, R, P)
        if not q then return 0 end
      end
      if q >= B then return 0 end
      return B - q
    end

    -- The texts of the state (s, n) + after ns, and of its expiry.
    local function written(s, n, after)
      return instant_texts(prefix, later(s, n, after))
    end

    return function(v, s, n)
      local debt = 0
      if v then
        local known = states[kind]
        local st = known and known[v] or stored_instant(kind, v)
        if not st then return nil end
        local ts, tn = st[1], st[2]
        if ts > s then
          -- (max(at - now, 0), nil beyond FAST_NS: inline, this runs on every call)
          if ts - s >= 8999999 then return nil end
          debt = (ts - s) * NS_PER_S + (tn - n)
        elseif ts == s and tn > n then
          debt = tn - n
        end
      end
      if refund then
        local after = debt - Q
        if after < 0 then after = 0 end
        if debt == 0 or cost == 0 then return true, left_at(after), 0, after end
        if after == 0 then return true, B, 0, 0, false end
        return true, left_at(after), 0, after, written(s, n, after)
      end
      if cost > B then return false, left_at(debt), NEVER, debt end
      if cost == 0 then return true, left_at(debt), leaky and debt or 0, debt end
      if debt <= L then
        local after = debt + Q
        if after >= FAST_NS then return nil end
        return true, left_at(after), leaky and debt or 0, after, written(s, n, after)
      end
      return false, left_at(debt), debt - L, debt
    end
  end

  local function prepare_instant(req)
    local p, gcra = req.p, req.kind.name == 'GCRA'
    local period, rate = p[gcra and 2 or 3], p[gcra and 1 or 2]
    local burst = gcra and req.burst or p[1]
    req.limit = burst
    -- (a debit is decided exactly: no fast path)
    if not req.debit and type(period) == 'number' and period < FAST_NS then
      req.fast = instant_decider(req.kind, period, rate, burst, req.cost, req.refund)
    end
  end

  for _, name in ipairs({ 'GCRA', 'TOKENBUCKET', 'LEAKY' }) do
    local kind = KINDS[name]
    kind.prepare = prepare_instant
    kind.prefix = kind.tag .. ':'
    kind.fast_pattern = '^' .. kind.tag .. ':(%d+)(%d%d%d%d%d%d%d%d%d)$'
  end

  -- Generated by `cargo run --example zone-table -- --zones default` (scripts/zone_table.rs)
  -- from the IANA time zone database the module bundles: do not edit. The zones
  -- rl_quota knows and their UTC offsets from 1970 to 2100; the format is in
  -- scripts/zone_table.rs. 62 zones.
  local ZONE_TABLE = {
    first = 1970, last = 2100, from_s = 0, to_s = 4133980800,
    alphabet = "!#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[]^_`abcdefghijklmnopqrstuvwxyz{|}~",
    zones = {
      ["Africa/Cairo"] = "7200,10800;3600;P$CY%7q&GY%7q&H[%7q&GY%7q&GY%7q&GY%7q&H[%7q&GY%7q&GY%7q&GY%7q&H[%7q&GY%7q(Cz#;P(6`#Hk&H[%7q&GY%7q&GY%7q&GY%7q&H[%7q&Ld%2g&GY%7q&GY%7q&H[%7q&GY%7q&GY%7q&DQ%8o&EY%8o&EY%8o&EY%8o&Lh%8o&EY%8o&EY%8o&EY%8o&EY%8o&Lh%8o&EY%8o&EY%1a&Lh%!s'-U$Ie'4d$BV'CQ$1eAb7y@!lMuFl#.c#;(d&'y&'~&/X%Np&/X%Np&/X&'~&'y&'~&'y&'~&'y&'~&/X%Np&/X&'~&'y&'~&'y&'~&'y&'~&'y&'~&/X%Np&/X&'~&'y&'~&'y&'~&'y&'~&/X%Np&/X%Np&/X&'~&'y&'~&'y&'~&'y&'~&/X%Np&/X&'~&'y&'~&'y&'~&'y&'~&/X%Np&/X%Np&/X&'~&'y&'~&'y&'~&'y&'~&/X%Np&/X&'~&'y&'~&'y&'~&'y&'~&'y&'~&/X%Np&/X&'~&'y&'~&'y&'~&'y&'~&/X%Np&/X%Np&/X&'~&'y&'~&'y&'~&'y&'~&/X%Np&/X&'~&'y&'~&'y&'~&'y&'~&/X%Np&/X%Np&/X&'~&'y&'~&'y&'~&'y&'~&/X%Np&/X&'~&'y&'~&'y&'~&'y&'~&'y&'~&/X%Np&/X&'~&'y&'~&'y&'~&'y&'~&/X%Np&/X%Np&/X&'~&'y",
      ["Africa/Casablanca"] = "0,3600;3600;PG&U#;}/Fh$%}(*|%4g'<t#6s#!:[0Jg&#CQ$%}(*|#Hg'EU$,Z'4d$BV(+Q#IkBbLu&EW#=REh#Ec%8r$#{Fj#Lq%8r#DaFj$,]%8r#=RFj$:y%1d#.eMx$BX%1d#'VFj)0PFj)(qMx)(qFj)(qMx)(qFj)0PFj)(qMx)(qFj&'y",
      ["Africa/Johannesburg"] = "7200;1;P",
      ["Africa/Lagos"] = "3600;1;P",
      ["Africa/Nairobi"] = "10800;1;P",
      ["America/Anchorage"] = "-36000,-32400,-28800;3600;P%Lv(*v(*}(5t(*}(*v(*}(*v$3o,!U&$a*1d(*}(5t'NP(5t(*}(*v(*}(*v(*}(*v(*}(*v(*}(5t'NP.>p(*w(*~(*w(*~(*w'8U(Kq'8U)(o'-W)(o'-W)(o'8U(Kq'8U(Kq'8U)(o'-W)(o'-W)(o'8U(Kq'8U(Kq'8U(Kq'8U)(o'-W)(o'-W)(o'8U(Kq'8U(Kq'8U)(o'-W)(o'-W)(o&:^*&g&/`*&g&/`*&g&:^*&g&/`*&g&/`*&g&/`*&g&/`*&g&/`*&g&:^*&g&/`*&g&/`*&g&/`*&g&/`*&g&:^*&g&/`*&g&/`*&g&/`*&g&/`*&g&/`*&g&:^*&g&/`*&g&/`*&g&/`*&g&/`*&g&:^*&g&/`*&g&/`*&g&/`*&g&/`*&g&/`*&g&:^*&g&/`*&g&/`*&g&/`*&g&/`*&g&/`*&g&:^*&g&/`*&g&/`*&g&/`*&g&/`*&g&:^*&g&/`*&g&/`*&g&/`*&g&/`*&g&/`*&g&:^*&g&/`*&g&/`*&g&/`*&g&/`*&g&:^*&g&/`*&g&/`*&g&/`*&g&/`*&g&/`*&g&:^*&g&/`*&g&/`*&g&/`*&g&/`*&g&/`*&g&:^*&g&/`*&g&/`*&g&/`*&g&/`*&g&:^*&g&/`*&g&/`*&g&/`*&g&/`*&g&/`*&g&:^*&g&/`*&g&/`*&g&/`*&g&/`*&g&:^*&g&/`*&g&/`*&g&/`*&g&/`*&g&/`*&g&:^*&g&/`*&g&/`*&g&/`*&g&/`*&g&/`*&g&:^*&g",
      ["America/Argentina/Buenos_Aires"] = "-10800,-7200;3600;PC?n$,Z$>Ir$(R'%v%*R'-U%!s'-U%!s'-U%*R$@D`#D_&Lh%1a",
      ["America/Bogota"] = "-18000,-14400;3600;P&##z(3X",
      ["America/Chicago"] = "-21600,-18000;3600;P$>b&'y&'~&/X&'~&'y&'~&'y#=U(@s$B[';m&'~&/X%Np&/X&'~&'y&'~&'y&'~&'y&'~&'y&'~&/X%Np&/X&'~&'y&'~&'y&'~&'y%@S&=u%@S&ET%8t&ET%8t&ET%@S&=u%@S&=u%@S&ET%8t&ET%8t&ET%@S&=u%@S&=u%@S&=u%@S&ET%8t&ET%8t&ET%@S&=u%@S&=u%@S&ET%8t&ET%8t&ET%!x'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_",
      ["America/Denver"] = "-25200,-21600;3600;P$>d&'y&'~&/X&'~&'y&'~&'y#=U(@s$B[';m&'~&/X%Np&/X&'~&'y&'~&'y&'~&'y&'~&'y&'~&/X%Np&/X&'~&'y&'~&'y&'~&'y%@S&=u%@S&ET%8t&ET%8t&ET%@S&=u%@S&=u%@S&ET%8t&ET%8t&ET%@S&=u%@S&=u%@S&=u%@S&ET%8t&ET%8t&ET%@S&=u%@S&=u%@S&ET%8t&ET%8t&ET%!x'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_",
      ["America/Halifax"] = "-14400,-10800;3600;P$>^&'y&'~&/X&'~&'y&'~&'y&'~&'y&'~&'y&'~&/X%Np&/X&'~&'y&'~&'y&'~&'y&'~&'y&'~&/X%Np&/X&'~&'y&'~&'y&'~&'y%@S&=u%@S&ET%8t&ET%8t&ET%@S&=u%@S&=u%@S&ET%8t&ET%8t&ET%@S&=u%@S&=u%@S&=u%@S&ET%8t&ET%8t&ET%@S&=u%@S&=u%@S&ET%8t&ET%8t&ET%!x'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_",
      ["America/Los_Angeles"] = "-28800,-25200;3600;P$>f&'y&'~&/X&'~&'y&'~&'y#=U(@s$B[';m&'~&/X%Np&/X&'~&'y&'~&'y&'~&'y&'~&'y&'~&/X%Np&/X&'~&'y&'~&'y&'~&'y%@S&=u%@S&ET%8t&ET%8t&ET%@S&=u%@S&=u%@S&ET%8t&ET%8t&ET%@S&=u%@S&=u%@S&=u%@S&ET%8t&ET%8t&ET%@S&=u%@S&=u%@S&ET%8t&ET%8t&ET%!x'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_",
      ["America/Mexico_City"] = "-21600,-18000;3600;P&C>f&=u%@S&=u%@S&=u%@S&ET%8t&ET&/^%1a&/^&=u%@S&=u%@S&ET%8t&ET%8t&ET%8t&ET%@S&=u%@S&=u%@S&ET%8t&ET%8t&ET%@S&=u%@S&=u%@S&=u%@S&ET%8t&ET%8t&ET%@S&=u%@S&=u%@S&ET%8t&ET",
      ["America/New_York"] = "-18000,-14400;3600;P$>`&'y&'~&/X&'~&'y&'~&'y#=U(@s$B[';m&'~&/X%Np&/X&'~&'y&'~&'y&'~&'y&'~&'y&'~&/X%Np&/X&'~&'y&'~&'y&'~&'y%@S&=u%@S&ET%8t&ET%8t&ET%@S&=u%@S&=u%@S&ET%8t&ET%8t&ET%@S&=u%@S&=u%@S&=u%@S&ET%8t&ET%8t&ET%@S&=u%@S&=u%@S&ET%8t&ET%8t&ET%!x'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_",
      ["America/Phoenix"] = "-25200;1;P",
      ["America/Santiago"] = "-10800,-14400;3600;P#N|&6k%8p&EX%8p&Lg%1b&=y%?~&Lg%1b&Lg%8p&EX%8p&EX%8p&Lg%1b&Lg%1b&Lg%8p&EX%8p&EX%8p&EX%8p&Lg%1b&Lg%1b&Lg&'z&'}%8p&EX%8p&Lg%1b&/]%Nl&Lg%8p&EX%8p&EX%8p&EX%8p&Lg%1b&Lg%G^&6k%8p&6k&/Y&/]%8p&Lg%1b&Lg%1b&Lg%1b&Lg%8p&EX%8p&EX%8p&Lg%1b&Lg%G^&6k%8p&EX%Nl&/]&EU$3m'B|$Ii'4`%!w'-Q%!w/Nt$%P(*x$%P(*x$%P'4`%8s&EU%8s&EU%8s&EU%@R&=v%8s&Ld%8s&EU%8s&EU%8s&EU%8s&EU%8s&Ld%1e&Ld%8s&EU%8s&EU%8s&EU%8s&EU%8s&Ld%1e&Ld%8s&EU%8s&EU%8s&EU%8s&Ld%1e&Ld%8s&EU%8s&EU%8s&EU%8s&EU%8s&Ld%1e&Ld%8s&EU%8s&EU%8s&EU%8s&EU%8s&Ld%8s&EU%8s&EU%8s&EU%8s&EU%8s&Ld%1e&Ld%8s&EU%8s&EU%8s&EU%8s&EU%8s&Ld%1e&Ld%8s&EU%8s&EU%8s&EU%8s&Ld%1e&Ld%8s&EU%8s&EU%8s&EU%8s&EU%8s&Ld%1e&Ld%8s&EU%8s&EU%8s&EU%8s&EU%8s&Ld%8s&EU%8s&EU%8s&EU%8s&EU%8s&Ld%1e&Ld%8s&EU%8s&EU%8s&EU%8s&EU%8s&Ld%1e&Ld%8s&EU%8s&EU%8s&EU%8s&Ld%1e&Ld%8s&EU%8s&EU%8s&EU%8s",
      ["America/Sao_Paulo"] = "-10800,-7200;3600;P$I+n%!s'%v$:w'DS$3i'CQ$3i'J`$BV'CQ$BV';r$:w'J`$,Z'J`$Ie'4d$Ie'4d$BV'4d%!s'.W%0_'%v%!s'%v%1a'%v%!s'4d$Ie'J`$3i';r$BV'Ld$8s'4d$Ie'J`$:w'-U$Ie';r$BV';r$Ie'4d$Ie'4d%!s'4d$BV';r$BV';r$Ie'4d$Ie'4d$Ie'4d$Ie'J`$3i",
      ["America/St_Johns"] = "-12600,-9000,-5400;60;P''-j*%8]*%@U*3Eo*%@U*%8]*%@U*%8]*%@U*%8]*%@U*%8]*%@U*3Eo)E2r*3Eo*%@U*%8]*%@U*%8]*%@U*%8]*%@U*%8]*%@U*3Eo)E2r*3Eo*%@U*%8]*%@U*%8]*%@U*%8])(>X+!2e)(E}+0;{(H<f+0?w(H8j+0?w)(E|+!2e)(E|+!2e)(E|+0?w(H8j+0?w(H8j+0?w)(E|+!2e)(E|+!2e)(E|+!2e)(E|+0?w(H8j+0?w(H8j+0?w)(E|+!2e)(E|+!2e)(E|+0?w(H8j+0?w(H8j+0?w'K>b,;Gc'=0~,;Gc'=0~,;Gc'K>b,;Gc'=0~,;OW'=0~,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'K>b,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'K>b,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'K>b,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'K>b,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'K>b,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'K>b,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'K>b,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'K>b,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'K>b,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'K>b,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'K>b,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'K>b,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'K>b,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'K>b,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'K>b,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'=0~,;Gc'K>b,;Gc",
      ["America/Toronto"] = "-18000,-14400;3600;P$>`&'y&'~&/X&'~&'y&'~&'y&'~&'y&'~&'y&'~&/X%Np&/X&'~&'y&'~&'y&'~&'y&'~&'y&'~&/X%Np&/X&'~&'y&'~&'y&'~&'y%@S&=u%@S&ET%8t&ET%8t&ET%@S&=u%@S&=u%@S&ET%8t&ET%8t&ET%@S&=u%@S&=u%@S&=u%@S&ET%8t&ET%8t&ET%@S&=u%@S&=u%@S&ET%8t&ET%8t&ET%!x'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_",
      ["America/Vancouver"] = "-28800,-25200;3600;P$>f&'y&'~&/X&'~&'y&'~&'y&'~&'y&'~&'y&'~&/X%Np&/X&'~&'y&'~&'y&'~&'y&'~&'y&'~&/X%Np&/X&'~&'y&'~&'y&'~&'y%@S&=u%@S&ET%8t&ET%8t&ET%@S&=u%@S&=u%@S&ET%8t&ET%8t&ET%@S&=u%@S&=u%@S&=u%@S&ET%8t&ET%8t&ET%@S&=u%@S&=u%@S&ET%8t&ET%8t&ET%!x'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_%!x'4_$Ij'4_$Ij'4_$Ij'4_$Ij'4_$Ij",
      ["Asia/Bangkok"] = "25200;1;P",
      ["Asia/Dhaka"] = "21600,25200;3600;P)&Of&5g",
      ["Asia/Dubai"] = "14400;1;P",
      ["Asia/Hong_Kong"] = "28800,32400;1800;P&KQ*-s*-|*-s*-|*<a*-|*-s%*Y/1g*-|*-s*-|*-sL;p)/{",
      ["Asia/Jakarta"] = "25200;1;P",
      ["Asia/Jerusalem"] = "7200,10800;3600;PG3l$,Z&/^%!sJG^Mw@)x$:y'-S%*R'J`$:w&On%5i&EY%1a'4d$Ie&=z%8o&EY%?}&EY%?}&CU%:s&CU%3e&Jd%:s&4h&+P&,W&!o&-Y%Ia&CY%8o'%v%Ni&+U%G]&,W&2_%Kj&/X&-Y%G]&1d&1]%Ll&)}&%z%Ia&4h&1]%Ll&)}&%z%Ia&;v&)}&%z&!o&-Y&GX%6p&GX%6p&GX%6p&Ng%/b&Ng%/b&Ng%6p&GX%6p&GX%6p&Ng%/b&Ng%/b&Ng%6p&GX%6p&GX%6p&GX%6p&Ng%/b&Ng%/b&Ng%6p&GX%6p&GX%6p&Ng%/b&Ng%/b&Ng%/b&Ng%6p&GX%6p&GX%6p&Ng%/b&Ng%/b&Ng%6p&GX%6p&GX%6p&GX%6p&Ng%/b&Ng%/b&Ng%6p&GX%6p&GX%6p&Ng%/b&Ng%/b&Ng%6p&GX%6p&GX%6p&GX%6p&Ng%/b&Ng%/b&Ng%6p&GX%6p&GX%6p&Ng%/b&Ng%/b&Ng%/b&Ng%6p&GX%6p&GX%6p&Ng%/b&Ng%/b&Ng%6p&GX%6p&GX%6p&GX%6p&Ng%/b&Ng%/b&Ng%6p&GX%6p&GX%6p&Ng%/b&Ng%/b&Ng%6p&GX%6p&GX%6p&GX%6p&Ng%/b&Ng%/b&Ng%6p&GX%6p&GX%6p&Ng%/b&Ng%/b&Ng%/b&Ng%6p&GX%6p&GX%6p&Ng%/b&Ng%/b&Ng%6p&GX%6p&GX%6p&GX%6p&Ng",
      ["Asia/Karachi"] = "18000,21600;3600;P'G0W&'y#!Hx%7m%D[&:o",
      ["Asia/Kathmandu"] = "19800,20700;504901800;PS",
      ["Asia/Kolkata"] = "19800;1;P",
      ["Asia/Manila"] = "28800,32400;3600;P#/Ml&#q$.KU#;}",
      ["Asia/Seoul"] = "32400,36000;3600;P%'E^%8q&EW%8q",
      ["Asia/Shanghai"] = "28800,32400;3600;P$M2Y%!s&EY%8o&Lh%1a&Lh%8o&EY%8o&EY%8o",
      ["Asia/Singapore"] = "27000,28800;378662400;PS",
      ["Asia/Taipei"] = "28800,32400;3600;PE*U&({&'~&({A$l$%}",
      ["Asia/Tehran"] = "12600,16200,14400,18000;1800;P'+-x51T0%U.%X*KR3FY,:P2BY2JX)?9|.Ji29x2Aw25p2Aw25p2Aw25p2Aw25p2Aw29x2Aw25p2Aw25p2Aw25p2Aw29x2Aw25p2Aw25p2Aw25p2Aw29x2Aw#F@n2Aw29x2Aw25p2Aw25p2Aw25p2Aw29x2Aw25p2Aw25p2Aw25p2Aw29x2Aw25p2Aw25p2Aw25p2Aw29x2Aw25p2Aw",
      ["Asia/Tokyo"] = "32400;1;P",
      ["Australia/Adelaide"] = "34200,37800;5400;P,&h#Fu%Bf#Ko%=l#Ko%=l#Ko%=l$!i%=l#Ko%=l#Ko%=l#Ko%=l#Ko%=l#Ko%=l$!i%=l#Ko%=l#Ko%=l#Ko%=l$'c%.~$,]%3x$,]%3x$'c%3x$'c%3x#Ko%=l$,]%.~$!i%=l$'c%3x$,]%.~$1V%*U$1V%*U$1V%*U$1V%.~$,]%.~$,]%.~$1V%*U$1V%*U$1V%.~$,]%.~$1V%*U$,]%.~$6P$Dn$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Ih$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Ih$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Dn$Ig$Dn$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Ih$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Ih$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Ih$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Ih$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Dn$Ig$Dn$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Ih$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Ih$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Ih$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Ih$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Dn$Ig$Dn$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Ih$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Ih$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Ih$Dm$Dn$Dm$Dn$Dm$Dn$Dm$Dn",
      ["Australia/Brisbane"] = "36000,39600;28800;P#KU1i4/x2eAS2eAS2e",
      ["Australia/Lord_Howe"] = "36000,37800,41400,39600;1800;P*#K`7=q.$~7=m-5t7=m-5t7=m-5t7=n.B^5Az/1h61U/1h61U.B^61U-5x7=j-5x7=j-5x7=j.%S7=j-5x7=j-5x7=j/Nr5$p/Nr5$p/Nr5$p/Nr5Az/1h/N|5$f5Az/Nr5$p/Nr5$p/Nr5Az/1h5Az/Nr5$p/1h5Az0=|29v29l29v29l29v29l29v29l3)Q29l29v29l29v29l29v29l29v29l29v29l3)Q29l29v29l29v29l29v29l29v29l29v3(v29v29l29v29l29v29l29v29l29v29l3)Q29l29v29l29v29l29v29l29v29l29v29l3)Q29l29v29l29v29l29v29l29v29l3)Q29l29v29l29v29l29v29l29v29l29v29l3)Q29l29v29l29v29l29v29l29v29l29v3(v29v29l29v29l29v29l29v29l29v29l3)Q29l29v29l29v29l29v29l29v29l29v29l3)Q29l29v29l29v29l29v29l29v29l3)Q29l29v29l29v29l29v29l29v29l29v29l3)Q29l29v29l29v29l29v29l29v29l29v3(v29v29l29v29l29v29l29v29l29v29l3)Q29l29v29l29v29l29v29l29v29l29v29l3)Q29l29v29l29v29l29v29l29v29l3)Q29l29v29l29v29l29v29l29v",
      ["Australia/Melbourne"] = "36000,39600;28800;P#KU1iA~2eAS2eAS2eAS3aAS2eAS2eAS2eAS2eAS2eAS3aAS2eAS2eAS2eAS4]>`5X>`6T?[4]?[4]?[2eAS2eAS3aAS2eAS5X>`6T=d6T=d6T=d6T>`5X6U=c>`6T=d6T=d6T>`5X>`6T=d5X>`7P9t9s9t9s9t9s9t9s:p9s9t9s9t9s9t9s9t9s9t9s:p9s9t9s9t9s9t9s9t9s9t:o9t9s9t9s9t9s9t9s9t9s:p9s9t9s9t9s9t9s9t9s9t9s:p9s9t9s9t9s9t9s9t9s:p9s9t9s9t9s9t9s9t9s9t9s:p9s9t9s9t9s9t9s9t9s9t:o9t9s9t9s9t9s9t9s9t9s:p9s9t9s9t9s9t9s9t9s9t9s:p9s9t9s9t9s9t9s9t9s:p9s9t9s9t9s9t9s9t9s9t9s:p9s9t9s9t9s9t9s9t9s9t:o9t9s9t9s9t9s9t9s9t9s:p9s9t9s9t9s9t9s9t9s9t9s:p9s9t9s9t9s9t9s9t9s:p9s9t9s9t9s9t9s9t",
      ["Australia/Perth"] = "28800,32400;21600;P(@S7{-N^7{,?d4]63d5gGt<uFj<u",
      ["Australia/Sydney"] = "36000,39600;28800;P#KU1iA~2eAS2eAS2eAS3aAS2eAS2eAS2eAS2eAS2eAS7P=d2eAS2eAS2eAS4]>`5X?[5X?[4]?[2eAS2eAS2eAS3aAS2eAS2eAS6T=d6T=d6T=d6T>`5X6U=c>`6T=d6T=d6T>`5X>`6T=d5X>`7P9t9s9t9s9t9s9t9s:p9s9t9s9t9s9t9s9t9s9t9s:p9s9t9s9t9s9t9s9t9s9t:o9t9s9t9s9t9s9t9s9t9s:p9s9t9s9t9s9t9s9t9s9t9s:p9s9t9s9t9s9t9s9t9s:p9s9t9s9t9s9t9s9t9s9t9s:p9s9t9s9t9s9t9s9t9s9t:o9t9s9t9s9t9s9t9s9t9s:p9s9t9s9t9s9t9s9t9s9t9s:p9s9t9s9t9s9t9s9t9s:p9s9t9s9t9s9t9s9t9s9t9s:p9s9t9s9t9s9t9s9t9s9t:o9t9s9t9s9t9s9t9s9t9s:p9s9t9s9t9s9t9s9t9s9t9s:p9s9t9s9t9s9t9s9t9s:p9s9t9s9t9s9t9s9t",
      ["Europe/Amsterdam"] = "3600,7200;3600;P#0&[%Nm&/[&'{&'|&'{&/[%Nm&'|&'{&'|&'{&'|&'{&'|&/Z&'|&'{&'|&'{&'|&'{&'|&'{&'|&'{&'|&/Z&'|&'{&'|&'{&'|&'{&'|&'{&'|&'{&/[&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le",
      ["Europe/Athens"] = "7200,10800;3600;PMBr'){%'S&'{%Nn%Oo&.Y%No&/h&&i&+Q&%u&(U&'{&'|&'{&'|&'{&'|&/Z&'|&'{&'|&'{&'|&'{&'|&'{&'|&'{&'|&/Z&'|&'{&'|&'{&'|&'{&'|&'{&'|&'{&/[&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le",
      ["Europe/Berlin"] = "3600,7200;3600;P#I#Q%Nm&'|&'{&'|&'{&'|&'{&'|&/Z&'|&'{&'|&'{&'|&'{&'|&'{&'|&'{&'|&/Z&'|&'{&'|&'{&'|&'{&'|&'{&'|&'{&/[&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le",
      ["Europe/Dublin"] = "3600,0;3600;P1)W%*T'%t%*T'%t%*T'%t%*T'%t%1c&Lf%1c&Lf%1c'%t%*T'%t%*T'%t%8o&EW%8q&EW%8q&EW%8q&Lf%8q&EW%8q&EW%8q&EW%8q&EW%8q&Lf%1c&Lf%8q&EW%8q&EW%8q&EW%8q&EW%8q&EW%@P&EW%8q&EW%8q&EW%8q&Lf%1c&Lf%1c&Lf%8q&EW%8q&EW%8q&Lf%1c&Lf%1c&Lf%1c&Lf%8q&EW%8q&EW%8q&Lf%1c&Lf%1c&Lf%8q&EW%8q&EW%8q&EW%8q&Lf%1c&Lf%1c&Lf%8q&EW%8q&EW%8q&Lf%1c&Lf%1c&Lf%8q&EW%8q&EW%8q&EW%8q&Lf%1c&Lf%1c&Lf%8q&EW%8q&EW%8q&Lf%1c&Lf%1c&Lf%1c&Lf%8q&EW%8q&EW%8q&Lf%1c&Lf%1c&Lf%8q&EW%8q&EW%8q&EW%8q&Lf%1c&Lf%1c&Lf%8q&EW%8q&EW%8q&Lf%1c&Lf%1c&Lf%8q&EW%8q&EW%8q&EW%8q&Lf%1c&Lf%1c&Lf%8q&EW%8q&EW%8q&Lf%1c&Lf%1c&Lf%1c&Lf%8q&EW%8q&EW%8q&Lf%1c&Lf%1c&Lf%8q&EW%8q&EW%8q&EW%8q&Lf%1c&Lf%1c&Lf%8q&EW%8q&EW%8q&Lf%1c&Lf%1c&Lf%8q&EW%8q&EW%8q&EW%8q&Lf%1c&Lf%1c&Lf%8q&EW%8q&EW%8q&Lf%1c&Lf%1c&Lf%1c&Lf%8q&EW%8q&EW%8q&Lf%1c&Lf%1c&Lf%8q&EW%8q&EW%8q&EW%8q&Lf",
      ["Europe/Istanbul"] = "7200,10800,14400;3600;PL8{'-R'!X)3l&Co)@U&EZ)>j'-V(@r'CR#6+z$(k/7z'FU'8P(,f(*y(*z(*y(*z(*y(*z(*y(*z(5w(*z(*y(*z(*y(*z(*y'M|(5w(*z(*y(5x)(q'-S)(q'-S)(q'-S)3o'!U)3o'!U)3o'-S)(q'-S)(q'-S)3o'!U)3o'!U)3o'![)3o'-S)(q'-S)(q'-S)3o'#p)2T'!U)3o'-S)(q'.n)'V'-S)>m&EW",
      ["Europe/Kyiv"] = "10800,14400,7200;3600;P%#Es(,b(*}(,b(*}(,b(,i(+P(*z(*y(*z(*y(*z(*y(*z(*y(*z(*y(*z%1`18a(*y(*{(*y(*{(*y(*{(*y(*{(5w)(v'-R)(s'-R)(s'-R)3q'!T)3q'!T)3q'-R)(s'-R)(s'-R)3q'!T)3q'!T)3q'!T)3q'-R)(s'-R)(s'-R)3q'!T)3q'!T)3q'-R)(s'-R)(s'-R)(s'-R)3q'!T)3q'!T)3q'-R)(s'-R)(s'-R)3q'!T)3q'!T)3q'-R)(s'-R)(s'-R)(s'-R)3q'!T)3q'!T)3q'-R)(s'-R)(s'-R)3q'!T)3q'!T)3q'!T)3q'-R)(s'-R)(s'-R)3q'!T)3q'!T)3q'-R)(s'-R)(s'-R)(s'-R)3q'!T)3q'!T)3q'-R)(s'-R)(s'-R)3q'!T)3q'!T)3q'-R)(s'-R)(s'-R)(s'-R)3q'!T)3q'!T)3q'-R)(s'-R)(s'-R)3q'!T)3q'!T)3q'!T)3q'-R)(s'-R)(s'-R)3q'!T)3q'!T)3q'-R)(s'-R)(s'-R)(s'-R)3q'!T)3q'!T)3q'-R)(s'-R)(s'-R)3q'!T)3q'!T)3q'-R)(s'-R)(s'-R)(s'-R)3q'!T)3q'!T)3q'-R)(s'-R)(s'-R)3q'!T)3q'!T)3q'!T)3q'-R)(s'-R)(s'-R)3q'!T)3q'!T)3q'-R)(s'-R)(s'-R)(s'-R)3q",
      ["Europe/Lisbon"] = "3600,0,7200;3600;P#GBf(*y(*z(5z(*z(*y(*z(5w'M|(*v(*z(*y(*z(*y(*z(*y(5x(*y(*z(*|(*z(*y(*z(*y(*z(*y(*z(*y(5x(*y(*z(*y.3u(*y(*{(*y(*{(*y/<j'-R)(r'-R)(r'-R)3p'!T)3p'!T)3p'-R)(r'-R)(r'-R)3p'!T)3p'!T)3p'!T)3p'-R)(r'-R)(r'-R)3p'!T)3p'!T)3p'-R)(r'-R)(r'-R)(r'-R)3p'!T)3p'!T)3p'-R)(r'-R)(r'-R)3p'!T)3p'!T)3p'-R)(r'-R)(r'-R)(r'-R)3p'!T)3p'!T)3p'-R)(r'-R)(r'-R)3p'!T)3p'!T)3p'!T)3p'-R)(r'-R)(r'-R)3p'!T)3p'!T)3p'-R)(r'-R)(r'-R)(r'-R)3p'!T)3p'!T)3p'-R)(r'-R)(r'-R)3p'!T)3p'!T)3p'-R)(r'-R)(r'-R)(r'-R)3p'!T)3p'!T)3p'-R)(r'-R)(r'-R)3p'!T)3p'!T)3p'!T)3p'-R)(r'-R)(r'-R)3p'!T)3p'!T)3p'-R)(r'-R)(r'-R)(r'-R)3p'!T)3p'!T)3p'-R)(r'-R)(r'-R)3p'!T)3p'!T)3p'-R)(r'-R)(r'-R)(r'-R)3p'!T)3p'!T)3p'-R)(r'-R)(r'-R)3p'!T)3p'!T)3p'!T)3p'-R)(r'-R)(r'-R)3p'!T)3p'!T)3p'-R)(r'-R)(r'-R)(r'-R)3p",
      ["Europe/London"] = "3600,0;3600;P1)W%*T'%t%*T'%t%*T'%t%*T'%t%1c&Lf%1c&Lf%1c'%t%*T'%t%*T'%t%8o&EW%8q&EW%8q&EW%8q&Lf%8q&EW%8q&EW%8q&EW%8q&EW%8q&Lf%1c&Lf%8q&EW%8q&EW%8q&EW%8q&EW%8q&EW%@P&EW%8q&EW%8q&EW%8q&Lf%1c&Lf%1c&Lf%8q&EW%8q&EW%8q&Lf%1c&Lf%1c&Lf%1c&Lf%8q&EW%8q&EW%8q&Lf%1c&Lf%1c&Lf%8q&EW%8q&EW%8q&EW%8q&Lf%1c&Lf%1c&Lf%8q&EW%8q&EW%8q&Lf%1c&Lf%1c&Lf%8q&EW%8q&EW%8q&EW%8q&Lf%1c&Lf%1c&Lf%8q&EW%8q&EW%8q&Lf%1c&Lf%1c&Lf%1c&Lf%8q&EW%8q&EW%8q&Lf%1c&Lf%1c&Lf%8q&EW%8q&EW%8q&EW%8q&Lf%1c&Lf%1c&Lf%8q&EW%8q&EW%8q&Lf%1c&Lf%1c&Lf%8q&EW%8q&EW%8q&EW%8q&Lf%1c&Lf%1c&Lf%8q&EW%8q&EW%8q&Lf%1c&Lf%1c&Lf%1c&Lf%8q&EW%8q&EW%8q&Lf%1c&Lf%1c&Lf%8q&EW%8q&EW%8q&EW%8q&Lf%1c&Lf%1c&Lf%8q&EW%8q&EW%8q&Lf%1c&Lf%1c&Lf%8q&EW%8q&EW%8q&EW%8q&Lf%1c&Lf%1c&Lf%8q&EW%8q&EW%8q&Lf%1c&Lf%1c&Lf%1c&Lf%8q&EW%8q&EW%8q&Lf%1c&Lf%1c&Lf%8q&EW%8q&EW%8q&EW%8q&Lf",
      ["Europe/Madrid"] = "3600,7200;3600;PE7|%No&/Y%No%Nl&'}&/Y%No&/`&'{&'|&'{&/[%Nm&'|&'{&'|&'{&'|&'{&'|&/Z&'|&'{&'|&'{&'|&'{&'|&'{&'|&'{&'|&/Z&'|&'{&'|&'{&'|&'{&'|&'{&'|&'{&/[&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le",
      ["Europe/Moscow"] = "10800,14400,7200;3600;P%#Es(,b(*}(,b(*}(,b(,i(+P(*z(*y(*z(*y(*z(*y(*z(*y(*z(*y(*z(5w.3x%G_$3i(*y(*z(*y(*z(*y(*z(*y(5x)(q'-S)(q'-S)(q'-S)3o'!U)3o'!U)3o'-S)(q'-S)(q'-S)3o'!U)3o'!U)3o'!U)3o'-S)(q'-S)(q'-S)3o'!UN:v",
      ["Europe/Paris"] = "3600,7200;3600;P#'AS&'y&/`%Nm&/[&'{&'|&'{&/[%Nm&'|&'{&'|&'{&'|&'{&'|&/Z&'|&'{&'|&'{&'|&'{&'|&'{&'|&'{&'|&/Z&'|&'{&'|&'{&'|&'{&'|&'{&'|&'{&/[&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le",
      ["Europe/Rome"] = "3600,7200;3600;P%4h$BX'4b$Ig';p$Ig';p$BX'4b$Ig';p$BX';p$BX'4b$Ig';p$Ig'4b$Ig&/`%Nm&'|&'{&'|&'{&'|&'{&'|&/Z&'|&'{&'|&'{&'|&'{&'|&'{&'|&'{&'|&/Z&'|&'{&'|&'{&'|&'{&'|&'{&'|&'{&/[&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le",
      ["Europe/Stockholm"] = "3600,7200;3600;P#I#Q%Nm&'|&'{&'|&'{&'|&'{&'|&/Z&'|&'{&'|&'{&'|&'{&'|&'{&'|&'{&'|&/Z&'|&'{&'|&'{&'|&'{&'|&'{&'|&'{&/[&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le",
      ["Europe/Warsaw"] = "3600,7200;3600;P#0&Y%Nm&/[&'{&'|&'{&/[%Nm&'|&'{&'|&'{&'|&'{&'|&/Z&'|&'{&'|&'{&'|&'{&'~&'{&'|&'{&'|&/Z&'|&'{&'|&'{&'|&'{&'|&'{&'|&'{&/[&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le",
      ["Europe/Zurich"] = "3600,7200;3600;P$#'j&'{&'|&'{&'|&'{&'|&/Z&'|&'{&'|&'{&'|&'{&'|&'{&'|&'{&'|&/Z&'|&'{&'|&'{&'|&'{&'|&'{&'|&'{&/[&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&Le%1d&Le%1d&Le%8r&EV%8r&EV%8r&EV%8r&Le",
      ["Pacific/Apia"] = "-39600,-36000,50400,46800;3600;P0A!r*:m)M[&4V&*d*-y*<h)M]*<h)M]*<h)M]*<h)M]*<h)M]*<h*-y*<h)M]*<h)M]*<h",
      ["Pacific/Auckland"] = "43200,46800;7200;P6#r#.e$Ex#9c$BY#5s$BY#5s$BY#5s$BY#5s$BY#5s$BY#9c$BY#5s$BY#5s$BY#5s$BY#5s$BY#5s$BY#9c$BY#5s$7[#HP$/|#HP$/|#HP$/|#Ko$,^#Ko$,^#Ko$,^#Ko$/|#HP$/|#HP$/|#Ko$,^#Ko$,^#Ko$/|#HP$/|#HP$/|#Ko$,^#Ko$,^#Ko$,^#Ko$,^$(m#O`$(m#O`$(m#O`$(m#O`$(m$$~$(m#O`$(m#O`$(m#O`$(m#O`$(m#O`$(m$$~$(m#O`$(m#O`$(m#O`$(m#O`$(m#O`$,]#O`$(m#O`$(m#O`$(m#O`$(m#O`$(m$$~$(m#O`$(m#O`$(m#O`$(m#O`$(m#O`$(m$$~$(m#O`$(m#O`$(m#O`$(m#O`$(m$$~$(m#O`$(m#O`$(m#O`$(m#O`$(m#O`$(m$$~$(m#O`$(m#O`$(m#O`$(m#O`$(m#O`$,]#O`$(m#O`$(m#O`$(m#O`$(m#O`$(m$$~$(m#O`$(m#O`$(m#O`$(m#O`$(m#O`$(m$$~$(m#O`$(m#O`$(m#O`$(m#O`$(m$$~$(m#O`$(m#O`$(m#O`$(m#O`$(m#O`$(m$$~$(m#O`$(m#O`$(m#O`$(m#O`$(m#O`$,]#O`$(m#O`$(m#O`$(m#O`$(m#O`$(m$$~$(m#O`$(m#O`$(m#O`$(m#O`$(m#O`$(m$$~$(m#O`$(m#O`$(m#O`$(m#O`$(m$$~$(m#O`$(m#O`$(m#O`$(m#O`",
      ["Pacific/Chatham"] = "45900,49500;7200;P6#r#.e$Ex#9c$BY#5s$BY#5s$BY#5s$BY#5s$BY#5s$BY#9c$BY#5s$BY#5s$BY#5s$BY#5s$BY#5s$BY#9c$BY#5s$7[#HP$/|#HP$/|#HP$/|#Ko$,^#Ko$,^#Ko$,^#Ko$/|#HP$/|#HP$/|#Ko$,^#Ko$,^#Ko$/|#HP$/|#HP$/|#Ko$,^#Ko$,^#Ko$,^#Ko$,^$(m#O`$(m#O`$(m#O`$(m#O`$(m$$~$(m#O`$(m#O`$(m#O`$(m#O`$(m#O`$(m$$~$(m#O`$(m#O`$(m#O`$(m#O`$(m#O`$,]#O`$(m#O`$(m#O`$(m#O`$(m#O`$(m$$~$(m#O`$(m#O`$(m#O`$(m#O`$(m#O`$(m$$~$(m#O`$(m#O`$(m#O`$(m#O`$(m$$~$(m#O`$(m#O`$(m#O`$(m#O`$(m#O`$(m$$~$(m#O`$(m#O`$(m#O`$(m#O`$(m#O`$,]#O`$(m#O`$(m#O`$(m#O`$(m#O`$(m$$~$(m#O`$(m#O`$(m#O`$(m#O`$(m#O`$(m$$~$(m#O`$(m#O`$(m#O`$(m#O`$(m$$~$(m#O`$(m#O`$(m#O`$(m#O`$(m#O`$(m$$~$(m#O`$(m#O`$(m#O`$(m#O`$(m#O`$,]#O`$(m#O`$(m#O`$(m#O`$(m#O`$(m$$~$(m#O`$(m#O`$(m#O`$(m#O`$(m#O`$(m$$~$(m#O`$(m#O`$(m#O`$(m#O`$(m$$~$(m#O`$(m#O`$(m#O`$(m#O`",
      ["Pacific/Honolulu"] = "-36000;1;P",
      ["Pacific/Kiritimati"] = "-38400,-36000,50400;2400;P%MC`(*/b",
    },
  }
  -- Fixed window (fixed.rs).
  local function decide_fixed(v, req, now)
    local kind, limit, w = req.kind, req.p[1], req.p[2]
    local stored = read_string(v, kind, 2)
    local stored_start = stored and min(mul(narrow(stored[1]), NS_PER_MS), U64_MAX) or ZERO
    local at = max(now, stored_start)
    local start = sub_(at, mod(at, w))
    local count = (stored and cmp(stored_start, start) >= 0) and narrow(stored[2]) or ZERO
    local until_end = sub_(add(start, w), now)
    local function decision(allowed, c, retry)
      return {
        allowed = allowed, limit = limit, remaining = num(satsub(int(limit), c)),
        retry = retry, reset = is_zero(c) and ZERO or until_end,
      }
    end
    local function write_count(c)
      if is_zero(c) then return { op = 'del' } end
      local start_ms = div(start, NS_PER_MS)
      return {
        op = 'set', value = 'fixed:' .. str(start_ms) .. ':' .. str(c),
        expire = expire_ms(add(mul(start_ms, NS_PER_MS), w)),
      }
    end
    local n = req.cost
    if req.refund then
      local after = satsub(count, int(n))
      return decision(true, after, ZERO), cmp(after, count) < 0 and write_count(after) or nil
    end
    if req.debit then
      -- DEBIT (fixed.rs debit): the count passes the limit, up to limit + MAX_DEBT,
      -- and never shrinks; a cost of 1 is admitted at once below the limit, else at
      -- the window's end.
      local after = max(count, min(add(count, int(n)), int(limit + MAX_DEBT)))
      local retry = cmp(after, int(limit)) < 0 and ZERO or until_end
      return decision(true, after, retry), cmp(after, count) > 0 and write_count(after) or nil
    end
    if n > limit then return decision(false, count, NEVER) end
    local after = add(count, int(n))
    if cmp(after, int(limit)) > 0 then return decision(false, count, until_end) end
    return decision(true, after, ZERO), n > 0 and write_count(after) or nil
  end

  -- Windows in doubles (the fast paths of fixed and sliding windows): the window
  -- of width w_ms that holds `at`, the later of now (s, n) and the start of the
  -- window holding a stored window start (whole ms, or nil; sliding.rs view). Returns the window's start in ms, ns from now to its
  -- end, ns from its start to `at` (elapsed) and from now to `at`; nil when the
  -- end is `bound_ms` or more ahead. (Windows are whole ms, so a window holds
  -- `at` exactly when it holds floor(at / 1 ms).)
  local function fast_window(w_ms, stored_ms, s, n, bound_ms)
    local sub_ms = n % NS_PER_MS
    local now_ms = s * 1000 + (n - sub_ms) / NS_PER_MS
    local at_ms, frac, ahead = now_ms, sub_ms, 0
    local floor_ms = stored_ms and stored_ms - stored_ms % w_ms
    if floor_ms and floor_ms > now_ms then
      at_ms, frac, ahead = floor_ms, 0, (floor_ms - now_ms) * NS_PER_MS - sub_ms
    end
    local start_ms = at_ms - at_ms % w_ms
    local to_end = start_ms + w_ms - now_ms
    if to_end >= bound_ms then return nil end
    return start_ms, to_end * NS_PER_MS - sub_ms, (at_ms - start_ms) * NS_PER_MS + frac, ahead
  end

  -- A stored window start (ms) the fast paths take: no more than 18e12 ms, so
  -- that it is below U64_MAX ns (which the exact path caps it at).
  local FAST_START_MS = 18000000000000

  -- The numbers of the window state v (`pattern` captures them): { start_ms,
  -- counts... }, or nil when one does not fit the fast path.
  local function stored_numbers(kind, v, pattern)
    local known = states[kind]
    local st = known and known[v]
    if st then return st end
    if #v <= SHORT_STRING then return nil end
    local a, b, c = match(v, pattern)
    if not a or #a > 15 or #b > 13 or (c and #c > 13) then return nil end
    a = tonumber(a)
    if a > FAST_START_MS then return nil end
    return remember(kind, v, { a, tonumber(b), c and tonumber(c) })
  end

  -- The fixed window's decision in doubles, as a closure over the request's
  -- constants (see instant_decider). The texts that depend only on the window's
  -- start (the state's prefix, the expiry) are kept for the last window written.
  local function fixed_decider(w_ms, limit, cost, refund)
    local text_start, head, expire = -1, nil, nil
    return function(v, s, n)
      local stored_ms, count = nil, 0
      if v then
        local st = stored_numbers(KINDS.FIXED, v, '^fixed:(%d+):(%d+)$')
        if not st then return nil end
        stored_ms, count = st[1], st[2]
      end
      local start_ms, until_end = fast_window(w_ms, stored_ms, s, n, 8900000000)
      if not start_ms then return nil end
      if stored_ms and stored_ms < start_ms then count = 0 end
      local after
      if refund then
        after = count > cost and count - cost or 0
        if after == count then
          return true, limit > after and limit - after or 0, 0, after > 0 and until_end or 0
        end
      else
        local left = limit > count and limit - count or 0
        local reset = count > 0 and until_end or 0
        if cost > limit then return false, left, NEVER, reset end
        after = count + cost
        if after > limit then return false, left, until_end, reset end
        if cost == 0 then return true, left, 0, reset end
      end
      local left = limit > after and limit - after or 0
      if after == 0 then return true, left, 0, 0, false end
      if start_ms ~= text_start then
        text_start, head, expire = start_ms, 'fixed:' .. dec(start_ms) .. ':', dec(start_ms + w_ms)
      end
      return true, left, 0, until_end, head .. dec(after), expire
    end
  end

  local function prepare_fixed(req)
    local w = req.p[2]
    req.limit = req.p[1]
    if not req.debit and type(w) == 'number' and w < FAST_NS then
      req.fast = fixed_decider(w / NS_PER_MS, req.limit, req.cost, req.refund)
    end
  end

  KINDS.FIXED.prepare = prepare_fixed

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

    -- A named zone's rules, decoded from its line in ZONE_TABLE on first use:
    -- `offsets;unit;transitions` (see 06-zones.lua), as t[k] (ms; t[1] is the
    -- table's first instant) and o[k] (ms), offset o[k] from t[k] to t[k + 1].
    local index, decoded, DIGIT = nil, {}, nil
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
      local a, day = cal.anchor, nil
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
    local until_end = sub_(mul(e, NS_PER_MS), now)
    local function decision(allowed, c, retry)
      return {
        allowed = allowed, limit = limit, remaining = num(satsub(int(limit), c)),
        retry = retry, reset = is_zero(c) and ZERO or until_end,
      }
    end
    local function write_count(c)
      if is_zero(c) then return { op = 'del' } end
      return {
        op = 'set', value = 'quota:' .. str(start) .. ':' .. str(e) .. ':' .. str(c) .. ':' .. cal.text,
        expire = min(e, MAX_EXPIRE_MS),
      }
    end
    local n = req.cost
    if req.refund then
      local after = satsub(count, int(n))
      return decision(true, after, ZERO), cmp(after, count) < 0 and write_count(after) or nil
    end
    if req.debit then
      local after = max(count, min(add(count, int(n)), int(limit + MAX_DEBT)))
      local retry = cmp(after, int(limit)) < 0 and ZERO or until_end
      return decision(true, after, retry), cmp(after, count) > 0 and write_count(after) or nil
    end
    if n > limit then return decision(false, count, NEVER) end
    local after = add(count, int(n))
    if cmp(after, int(limit)) > 0 then return decision(false, count, until_end) end
    return decision(true, after, ZERO), n > 0 and write_count(after) or nil
  end
  -- Sliding window counter (sliding.rs). `fields`, if given, are the state's
  -- fields in place of the value v's (a debit's state after its charge).
  local function decide_sliding(v, req, now, fields)
    local kind, limitn, w = req.kind, req.p[1], req.p[2]
    local limit = int(limitn)
    local stored = fields or read_string(v, kind, 3)
    local stored_start = stored and min(mul(narrow(stored[1]), NS_PER_MS), U64_MAX) or ZERO
    -- A clock behind the stored start decides at the start of the window holding
    -- it (sliding.rs view): what a write here stores, so the reply describes it.
    local at = max(now, sub_(stored_start, mod(stored_start, w)))
    local start = sub_(at, mod(at, w))
    local prev, cur = ZERO, ZERO
    if stored then
      if cmp(stored_start, start) >= 0 then
        prev, cur = narrow(stored[2]), narrow(stored[3])
      elseif cmp(add(stored_start, w), start) >= 0 then
        prev = narrow(stored[3])
      end
    end
    local elapsed = sub_(at, start)
    local function decision(allowed, p, c, retry)
      local scaled = add(mul(p, sub_(w, elapsed)), mul(c, w))
      local window_end = sub_(add(start, w), now)
      local reset = ZERO
      if not is_zero(c) then
        reset = add(window_end, w)
      elseif not is_zero(p) then
        reset = window_end
      end
      return {
        allowed = allowed, limit = limitn, retry = retry, reset = reset,
        remaining = num(min(div(satsub(mul(limit, w), scaled), w), U64_MAX)),
      }
    end
    local function write_counts(p, c)
      if is_zero(p) and is_zero(c) then return { op = 'del' } end
      local start_ms = div(start, NS_PER_MS)
      return {
        op = 'set', value = 'sliding:' .. str(start_ms) .. ':' .. str(p) .. ':' .. str(c),
        expire = expire_ms(add(mul(start_ms, NS_PER_MS), add(w, w))),
      }
    end
    local n = int(req.cost)
    if req.debit then
      -- DEBIT (sliding.rs debit): the current window's count passes the limit, up
      -- to limit + MAX_DEBT, and never shrinks; the retry is the wait a denied cost
      -- of 1 would get on the state after the charge.
      local c2 = max(cur, min(add(cur, n), add(limit, MAX_DEBT)))
      local start_ms = div(start, NS_PER_MS)
      local one = decide_sliding(nil, { kind = kind, p = req.p, cost = 1 }, now, { start_ms, prev, c2 })
      local write
      if cmp(c2, cur) > 0 then write = write_counts(prev, c2) end
      return decision(true, prev, c2, one.allowed and ZERO or one.retry), write
    end
    if req.refund then
      local from_current = min(n, cur)
      local from_previous = min(sub_(n, from_current), prev)
      local p2, c2 = sub_(prev, from_previous), sub_(cur, from_current)
      local write
      if not is_zero(add(from_current, from_previous)) then write = write_counts(p2, c2) end
      return decision(true, p2, c2, ZERO), write
    end
    if cmp(n, limit) > 0 then return decision(false, prev, cur, NEVER) end
    local weighted_prev = mul(prev, sub_(w, elapsed))
    local cn = add(cur, n)
    if cmp(add(weighted_prev, mul(cn, w)), mul(limit, w)) <= 0 then
      local write
      if not is_zero(n) then write = write_counts(prev, cn) end
      return decision(true, prev, cn, ZERO), write
    end
    local wait
    if cmp(cn, limit) <= 0 then
      -- prev > 0 here: with prev = 0 and cur + n <= limit the request was admitted.
      local e_t = sub_(w, div(mul(sub_(limit, cn), w), prev))
      if cmp(e_t, w) < 0 then wait = sub_(e_t, elapsed) end
    end
    if not wait then
      local e_next = ZERO
      if not is_zero(cur) then e_next = satsub(w, div(mul(sub_(limit, n), w), cur)) end
      wait = add(sub_(w, elapsed), e_next)
    end
    wait = add(wait, sub_(at, now))
    return decision(false, prev, cur, wait)
  end

  -- The same in doubles (the fast path), for windows below SLIDING_FAST_MS, whose
  -- sums of up to four waits and windows stay below FAST_NS.
  local SLIDING_FAST_MS = 2000000000

  -- Remaining at weights p (previous window) and c (current), `elapsed` into the
  -- window: floor(max(limit * w - p * (w - elapsed) - c * w, 0) / w).
  local function sliding_left(limit, w, p, c, elapsed)
    if c >= limit then return 0 end
    local q = muldiv_ceil(p, w - elapsed, w)
    if q >= limit - c then return 0 end
    return limit - c - q
  end

  -- The sliding window's decision in doubles, as a closure over the request's
  -- constants (see instant_decider).
  local function sliding_decider(w, limit, cost, refund)
    local w_ms = w / NS_PER_MS
    return function(v, s, n)
      local stored_ms, sp, sc
      if v then
        local st = stored_numbers(KINDS.SLIDING, v, '^sliding:(%d+):(%d+):(%d+)$')
        if not st then return nil end
        stored_ms, sp, sc = st[1], st[2], st[3]
      end
      local start_ms, window_end, elapsed, ahead =
        fast_window(w_ms, stored_ms, s, n, SLIDING_FAST_MS)
      if not start_ms then return nil end
      local prev, cur = 0, 0
      if stored_ms then
        if stored_ms >= start_ms then
          prev, cur = sp, sc
        elseif stored_ms + w_ms >= start_ms then
          prev = sc
        end
      end
      local allowed, retry, p2, c2, write = true, 0, prev, cur, false
      if refund then
        local from_current = cost < cur and cost or cur
        local from_previous = cost - from_current
        if from_previous > prev then from_previous = prev end
        p2, c2 = prev - from_previous, cur - from_current
        write = from_current + from_previous > 0
      elseif cost > limit then
        allowed, retry = false, NEVER
      else
        local cn = cur + cost
        if cn <= limit and mul_cmp(prev, w - elapsed, limit - cn, w) <= 0 then
          c2, write = cn, cost > 0
        else
          -- The first instant the estimate admits it, in this window or the next
          -- (prev > 0 here: with prev = 0 and cur + n <= limit it was admitted).
          allowed, retry = false, nil
          if cn <= limit then
            local q = muldiv(limit - cn, w, prev)
            if q > 0 then retry = w - q - elapsed end
          end
          if not retry then
            local e_next = 0
            if cur > 0 then
              local q = muldiv(limit - cost, w, cur)
              if q and q < w then e_next = w - q end
            end
            retry = w - elapsed + e_next
          end
          retry = retry + ahead
        end
      end
      local reset = c2 > 0 and window_end + w or (p2 > 0 and window_end or 0)
      local left = sliding_left(limit, w, p2, c2, elapsed)
      if not write then return allowed, left, retry, reset end
      if p2 == 0 and c2 == 0 then return true, left, 0, reset, false end
      return true, left, 0, reset, 'sliding:' .. dec(start_ms) .. ':' .. dec(p2) .. ':' .. dec(c2),
        dec(start_ms + 2 * w_ms)
    end
  end

  local function prepare_sliding(req)
    local w = req.p[2]
    req.limit = req.p[1]
    if not req.debit and type(w) == 'number' and w < SLIDING_FAST_MS * NS_PER_MS then
      req.fast = sliding_decider(w, req.limit, req.cost, req.refund)
    end
  end

  KINDS.SLIDING.prepare = prepare_sliding
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
  --------------------------------------------------------------------------------
  -- Replies.
  --------------------------------------------------------------------------------

  -- A big as an integer reply: clamped to i64 like the module; exact below 2^53
  -- (about 285,000 years in ms), the nearest double below 2^63 above it.
  local function reply_int(a)
    if cmp(a, I64_MAX) >= 0 then return I64_MAX_DOUBLE end
    local x = num(a)
    if x > I64_MAX_DOUBLE then return I64_MAX_DOUBLE end
    return x
  end

  local function ms_ceil(ns) return reply_int(div_ceil(ns, NS_PER_MS)) end

  -- The shared five integers.
  local function reply(d)
    return {
      d.allowed and 1 or 0, d.limit, d.remaining,
      d.retry and ms_ceil(d.retry) or -1, ms_ceil(d.reset),
    }
  end

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
  --------------------------------------------------------------------------------
  -- CL.THROTTLE key max_burst count period [quantity]: redis-cell's GCRA (cell.rs,
  -- commands/throttle.rs), its reply in seconds and its state: the bare TAT in ns.
  --------------------------------------------------------------------------------

  local MAX_PERIOD_S = 3650 * 86400
  local MAX_DVT_NS = mul(int(MAX_PERIOD_S), NS_PER_S)

  -- digits only, 1 to 20 of them, within [lo, hi]
  local function cell_integer(name, s, lo, hi)
    if s == '' or #s > 20 or find(s, '[^0-9]') then bad_integer(name, lo, hi) end
    return count_from(name, s, lo, hi)
  end

  -- redis-cell 0.5's seconds: `as_seconds_f64() as i64` (whole seconds plus the
  -- nanoseconds / 1e9, added in doubles, truncated), plus one if at least 1 ms is
  -- left over; ns >= 0 and at most 3650 days, so every step is exact but the sum's.
  local function reply_seconds(ns)
    local secs, rest = divmod(ns, NS_PER_S)
    local whole = floor(num(secs) + num(rest) / 1e9)
    if cmp(rest, NS_PER_MS) >= 0 then whole = whole + 1 end
    return whole
  end

  -- redis-cell's remaining: (dvt - ttl) / T in whole microseconds, truncated.
  local function cell_remaining(dvt, ttl, t, limit)
    local neg = cmp(ttl, dvt) > 0
    local next_abs = neg and sub_(ttl, dvt) or sub_(dvt, ttl)
    if neg and cmp(next_abs, t) >= 0 then return 0 end
    local r
    local t_us = div(t, NS_PER_US)
    if is_zero(t_us) then
      r = neg and 0 or num(div(next_abs, t))
    else
      -- At most 3.2e17 / 1000 here: exact in doubles, as Rust's `as f64` is.
      local q = num(div(next_abs, NS_PER_US)) / num(t_us)
      if neg then r = -floor(q) else r = floor(q) end
      if r == 0 then r = 0 end -- no negative zero
    end
    return r < limit and r or limit
  end

  -- CL.THROTTLE's arguments, checked, and its constants: the emission interval t
  -- and the delay variation tolerance dvt in ns, and the increment t * quantity;
  -- `fast` when all three are below FAST_NS.
  local function parse_throttle(args)
    if #args < 3 or #args > 4 then wrong_arity('cl.throttle') end
    local max_burst = cell_integer('max_burst', args[1], 0, MAX_COUNT)
    local count = cell_integer('count', args[2], 1, MAX_COUNT)
    local period = cell_integer('period (seconds)', args[3], 1, MAX_PERIOD_S)
    local quantity = args[4] and cell_integer('quantity', args[4], 0, MAX_COST) or 1
    -- redis-cell's float division, truncated: (period * 10^9) as f64 / count as f64.
    local emission = floor(period * 1e9 / count)
    if emission == 0 then
      fail(MSG.throttle_zero_rate)
    end
    local t = big(fmt('%.0f', emission))
    local limit = max_burst + 1
    local dvt = mul(t, int(limit))
    if cmp(dvt, MAX_DVT_NS) > 0 then
      fail(MSG.throttle_burst)
    end
    local increment = mul(t, int(quantity))
    local fast = cmp(dvt, FAST_NS) < 0 and cmp(increment, FAST_NS) < 0 and cmp(t, FAST_NS) < 0
    return { t = t, limit = limit, dvt = dvt, quantity = quantity, increment = increment,
      t_us = div(t, NS_PER_US), fast = fast }
  end

  -- reply_seconds for ns below FAST_NS, in doubles.
  local function cell_seconds(ns)
    local rest = ns % NS_PER_S
    local whole = floor((ns - rest) / NS_PER_S + rest / 1e9)
    if rest >= NS_PER_MS then whole = whole + 1 end
    return whole
  end

  -- redis-cell's GCRA in doubles, on a TAT of more than 9 digits: the reply and
  -- the TAT to write with its expiry (none when nil); nil when the TAT does not
  -- fit the fast path.
  local function fast_throttle(r, v, s, n)
    local debt = 0
    if v then
      local known = states.throttle
      local st = known and known[v]
      if not st then
        local ts, tn = instant19(v, 1)
        if not ts then
          if #v > 19 then return nil end
          local hi, lo = match(v, '^(%d+)(%d%d%d%d%d%d%d%d%d)$')
          if not hi then return nil end
          ts, tn = tonumber(hi), tonumber(lo)
        end
        st = remember('throttle', v, { ts, tn })
      end
      local ts, tn = st[1], st[2]
      if ts > s then
        -- (max(at - now, 0), nil beyond FAST_NS)
        if ts - s >= 8999999 then return nil end
        debt = (ts - s) * NS_PER_S + (tn - n)
      elseif ts == s and tn > n then
        debt = tn - n
      end
    end
    local after = debt + r.increment
    local limited = after > r.dvt
    local ttl, retry = after, nil
    if limited then
      ttl = debt
      if r.increment <= r.dvt then retry = after - r.dvt end
    end
    -- redis-cell's remaining, as cell_remaining computes it.
    local t, limit, left = r.t, r.limit, nil
    local neg = ttl > r.dvt
    local next_abs = neg and ttl - r.dvt or r.dvt - ttl
    if neg and next_abs >= t then
      left = 0
    elseif r.t_us == 0 then
      left = neg and 0 or (next_abs - next_abs % t) / t
    else
      local q = (next_abs - next_abs % NS_PER_US) / NS_PER_US / r.t_us
      left = neg and -floor(q) or floor(q)
      if left == 0 then left = 0 end -- no negative zero
    end
    if left > limit then left = limit end
    local out = { limited and 1 or 0, limit, left, retry and cell_seconds(retry) or -1, cell_seconds(ttl) }
    if limited or r.quantity == 0 then return out end
    local ts, tn = later(s, n, after)
    return out, instant_texts('', ts, tn)
  end

  -- (GET is read inline: this runs on every call.)
  local function throttle_body(keys, args)
    if #keys ~= 1 then one_key('cl_throttle', keys) end
    local key, last = keys[1], #args
    local r = cached_request(roots.throttle, args, 1, last)
    if not r then
      r = parse_throttle(args)
      cache_request('throttle', nil, args, 1, last, r)
    end
    local s, n = clock()
    local v = redis.pcall('GET', key)
    if v and type(v) == 'table' then fail(v.err or ERR.wrong_type) end
    if r.fast and s < FAST_S then
      local out, tat, expire = fast_throttle(r, v, s, n)
      if out then
        if tat then redis.call('SET', key, tat, 'PXAT', expire) end
        return out
      end
    end
    local t, limit, dvt, quantity, increment = r.t, r.limit, r.dvt, r.quantity, r.increment
    local now = ns_of_time(s, n)
    local stored
    if v then
      -- The state is a decimal TAT: at most 20 bytes (store/mod.rs SHORT_STRING).
      if v == '' or #v > SHORT_STRING or find(v, '[^0-9]') then foreign('CL.THROTTLE') end
      stored = big(v)
      if cmp(stored, U64_MAX) > 0 then foreign('CL.THROTTLE') end
    end
    local tat = stored and max(stored, now) or now
    local new_tat = add(tat, increment)
    local limited = cmp(new_tat, add(now, dvt)) > 0
    local ttl, retry, write
    if limited then
      ttl = sub_(tat, now)
      if cmp(increment, dvt) <= 0 then retry = sub_(new_tat, add(dvt, now)) end
    else
      ttl = sub_(new_tat, now)
      if quantity > 0 then write = min(new_tat, U64_MAX) end
    end
    local out = {
      limited and 1 or 0, limit, cell_remaining(dvt, ttl, t, limit),
      retry and reply_seconds(retry) or -1, reply_seconds(ttl),
    }
    if write then redis.call('SET', key, str(write), 'PXAT', str(expire_ms(write))) end
    return out
  end

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
  -- Lease sets: members `lease:<id>`, scores the lapse times in microseconds,
  -- handled as Lua numbers (exact below 2^53 us, the year 2255).
  local LEASE_PREFIX = 'lease:'
  local TWO64 = 18446744073709551616

  -- A score as Rust's `score as u64` reads it.
  local function score_u64(s)
    s = tonumber(s)
    if not s or s ~= s or s <= 0 then return 0 end
    if s >= TWO64 then return TWO64 end
    return floor(s)
  end

  local function bignum(x)
    if x >= TWO64 then return U64_MAX end
    return big(fmt('%.0f', x))
  end

  local function open_leases(key)
    local first = first_entry(key)
    if not first[1] then return nil end
    local function is_lease(r)
      local s = tonumber(r[2])
      return sub(r[1], 1, #LEASE_PREFIX) == LEASE_PREFIX and s >= 0 and s % 1 == 0 and s < TWO64
    end
    if not is_lease(first)
      or not is_lease(redis.call('ZRANGE', key, '-1', '-1', 'WITHSCORES')) then
      foreign('RL.ACQUIRE')
    end
    local v = {}
    function v.held_at(now_us)
      local len = redis.call('ZCARD', key)
      local lapsed = redis.call('ZCOUNT', key, '-inf', fmt('%.0f', now_us))
      return len > lapsed and len - lapsed or 0
    end
    function v.lapse_of(member)
      local s = redis.call('ZSCORE', key, member)
      return s and score_u64(s) or nil
    end
    function v.nth_lapse_after(now_us, k)
      local r = redis.call('ZRANGEBYSCORE', key, '(' .. fmt('%.0f', now_us), '+inf', 'WITHSCORES', 'LIMIT', k, 1)
      return r[1] and score_u64(r[2]) or nil
    end
    function v.nth_latest(k)
      local r = redis.call('ZRANGE', key, -1 - k, -1 - k, 'WITHSCORES')
      return r[1] and score_u64(r[2]) or nil
    end
    return v
  end

  local NO_LEASES = {
    held_at = function() return 0 end,
    lapse_of = function() return nil end,
    nth_lapse_after = function() return nil end,
    nth_latest = function() return nil end,
  }

  local function latest_other(view, own, now_us)
    local latest = view.nth_latest(0)
    local other = latest
    if own and latest == own then other = view.nth_latest(1) end
    if other and other > now_us then return other end
    return nil
  end

  local function check_id(id)
    if #id < 1 or #id > MAX_LEASE_ID then fail(MSG.lease_id) end
  end

  -- RL.ACQUIRE key limit timeout lease_id [PEEK] [BLOCK ms] (lease.rs): the
  -- parameters, then the options left to right.
  local function parse_acquire(args, first)
    local limit = count_from('limit', args[first], 1, SLIDING_LOG_MAX)
    local timeout_ms = duration('timeout', args[first + 1])
    check_id(args[first + 2])
    local peek, block = false, nil
    local i = first + 3
    while i <= #args do
      local up = upper(args[i])
      if up == 'PEEK' then
        if peek then fail(ERR.repeated_option('PEEK')) end
        peek = true
      elseif up == 'BLOCK' then
        -- A script cannot wait: BLOCK is validated and the call decides at once.
        if block then fail(ERR.repeated_option('BLOCK')) end
        if i + 1 > #args then fail(ERR.missing_value('BLOCK')) end
        i = i + 1
        block = count_from('BLOCK', args[i], 0, MAX_DURATION_MS)
      else
        fail(ERR.unknown_option(sanitize(args[i]), 'rl.acquire', 'PEEK or BLOCK'))
      end
      i = i + 1
    end
    return { limit = limit, timeout_us = timeout_ms * 1000, id = args[first + 2], peek = peek }
  end

  local function acquire(key, req, now)
    local view = open_leases(key) or NO_LEASES
    local member = LEASE_PREFIX .. req.id
    local now_us = num(div(now, NS_PER_US))
    local function until_(l) return satsub(mul(bignum(l), NS_PER_US), now) end
    local held = view.held_at(now_us)
    local own = view.lapse_of(member)
    local renewal = own ~= nil and own > now_us
    if renewal or held < req.limit then
      local lapse = now_us + req.timeout_us
      if renewal and own > lapse then lapse = own end
      local latest = latest_other(view, own, now_us)
      if not latest or latest < lapse then latest = lapse end
      local held_after = renewal and held or held + 1
      local d = { allowed = true, limit = req.limit, retry = ZERO, reset = until_(latest),
        remaining = req.limit > held_after and req.limit - held_after or 0 }
      local cut, lapse_s = fmt('%.0f', now_us), fmt('%.0f', lapse)
      local expire = str(expire_ms(mul(bignum(latest), NS_PER_US)))
      return d, { op = 'log', apply = function(k)
        trim_through(k, cut)
        redis.call('ZADD', k, lapse_s, member)
        redis.call('PEXPIREAT', k, expire)
      end }
    end
    local retry = view.nth_lapse_after(now_us, held - req.limit)
    local latest = view.nth_latest(0)
    if latest and latest <= now_us then latest = nil end
    return { allowed = false, limit = req.limit, remaining = 0,
      retry = retry and until_(retry) or NEVER, reset = latest and until_(latest) or ZERO }
  end

  local function acquire_body(keys, args)
    local key = one_key('rl_acquire', keys)
    if #args < 3 then wrong_arity('rl.acquire') end
    local req = parse_acquire(args, 1)
    local d, write = acquire(key, req, now_ns())
    if write and not req.peek then commit(key, write) end
    return reply(d)
  end

  peek_acquire = function(key, args)
    return reply((acquire(key, parse_acquire(args, 2), now_ns())))
  end

  -- RL.RELEASE key lease_id: 1 if the lease was held (and is now released), else 0.
  local function release_body(keys, args)
    local key = one_key('rl_release', keys)
    if #args ~= 1 then wrong_arity('rl.release') end
    check_id(args[1])
    local member = LEASE_PREFIX .. args[1]
    local now = now_ns()
    local view = open_leases(key) or NO_LEASES
    local now_us = num(div(now, NS_PER_US))
    local own = view.lapse_of(member)
    if not (own and own > now_us) then return 0 end
    local latest = view.held_at(now_us) > 1 and latest_other(view, own, now_us)
    if not latest then
      redis.call('DEL', key)
    else
      trim_through(key, fmt('%.0f', now_us))
      redis.call('ZREM', key, member)
      redis.call('PEXPIREAT', key, str(expire_ms(mul(bignum(latest), NS_PER_US))))
    end
    return 1
  end

  -- Each command: its body and its label (decision_command makes the limiters').
  return {
    decision = decision_command,
    kinds = KINDS,
    all = { all_body, 'RL.ALL' },
    limit = { POLICY.limit, 'RL.LIMIT' },
    policy = { POLICY.command, 'RL.POLICY' },
    peek = { peek_body, 'RL.PEEK' },
    throttle = { throttle_body, 'CL.THROTTLE' },
    acquire = { acquire_body, 'RL.ACQUIRE' },
    release = { release_body, 'RL.RELEASE' },
    ban = { ban_body, 'RL.BAN' },
    failed = failed,
    -- The exact integers, for tests (tests/functions_exact.rs registers a caller).
    ints = { big = big, str = str, add = add, sub = sub_, mul = mul, divmod = divmod, cmp = cmp },
    -- The exact products in doubles of the fast paths, for tests likewise.
    doubles = { mul_cmp = mul_cmp, muldiv = muldiv },
  }
end

--------------------------------------------------------------------------------
-- Registration (load time: no standard library, only `redis`).
--------------------------------------------------------------------------------

local api

-- The handler named `name`; the library is built on the first call. Every body
-- runs under pcall: an error becomes the reply `failed` gives.
local function handler(name, arg)
  local body, label, protected
  return function(keys, args)
    if not body then
      api = api or build()
      if name == 'decision' then
        body, label = api.decision(api.kinds[arg[1]], arg[2])
      else
        body, label = api[name][1], api[name][2]
      end
      protected = pcall
    end
    local ok, result = protected(body, keys, args)
    if ok then return result end
    return api.failed(label, result)
  end
end

redis.register_function('rl_gcra', handler('decision', { 'GCRA', 'rl_gcra' }))
redis.register_function('rl_tokenbucket', handler('decision', { 'TOKENBUCKET', 'rl_tokenbucket' }))
redis.register_function('rl_leaky', handler('decision', { 'LEAKY', 'rl_leaky' }))
redis.register_function('rl_sliding', handler('decision', { 'SLIDING', 'rl_sliding' }))
redis.register_function('rl_slidinglog', handler('decision', { 'SLIDINGLOG', 'rl_slidinglog' }))
redis.register_function('rl_fixed', handler('decision', { 'FIXED', 'rl_fixed' }))
redis.register_function('rl_quota', handler('decision', { 'QUOTA', 'rl_quota' }))
redis.register_function('rl_all', handler('all'))
redis.register_function('rl_limit', handler('limit'))
redis.register_function('cl_throttle', handler('throttle'))
redis.register_function('rl_acquire', handler('acquire'))
redis.register_function('rl_ban', handler('ban'))
-- RL.RELEASE is registered without deny-oom (it only frees): so is rl_release.
redis.register_function { function_name = 'rl_release', callback = handler('release'), flags = { 'allow-oom' } }
redis.register_function { function_name = 'rl_peek', callback = handler('peek'), flags = { 'no-writes' } }
redis.register_function { function_name = 'rl_policy', callback = handler('policy'), flags = { 'no-writes' } }
