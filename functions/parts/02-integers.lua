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

