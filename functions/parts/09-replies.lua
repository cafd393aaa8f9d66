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

