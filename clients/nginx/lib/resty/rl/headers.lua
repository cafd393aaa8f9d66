-- The HTTP headers of a decision (docs/commands.md, "The shared reply" and "The IETF
-- RateLimit fields"), as the Python and Node packages write them: seconds are milliseconds
-- divided by 1,000 and rounded up, so a client that waits them is never early.
local ceil, format = math.ceil, string.format

local _M = {}

-- An integer as digits (Lua writes 10^12 as `1e+12`).
local function int(n)
    return format("%.0f", n)
end

local function seconds(ms)
    return int(ceil(ms / 1000))
end

-- The headers of the binding layer `name` (its `policy`, parse()'s, and its `reply`, the
-- five integers), as { name, value } pairs in this order: `X-RateLimit-Limit`, `-Remaining`,
-- `-Reset`, the IETF `RateLimit-Policy` (`"<name>";q=<quota>;w=<window s>`; a policy named
-- on the server has no `w`, and its `q` is the reply's limit) and `RateLimit`
-- (`"<name>";r=<remaining>;t=<reset s>`), and with `retry` a denial's `Retry-After` (never
-- for one that can never be admitted).
function _M.of(name, policy, reply, retry)
    local limit, remaining, retry_ms, reset = int(reply[2]), int(reply[3]), reply[4], seconds(reply[5])
    local q = policy.named and limit or int(policy.quota) .. ";w=" .. int(policy.window_s)
    local out = {
        { "X-RateLimit-Limit", limit },
        { "X-RateLimit-Remaining", remaining },
        { "X-RateLimit-Reset", reset },
        { "RateLimit-Policy", '"' .. name .. '";q=' .. q },
        { "RateLimit", '"' .. name .. '";r=' .. remaining .. ";t=" .. reset },
    }
    if retry and reply[1] == 0 and retry_ms >= 0 then
        out[#out + 1] = { "Retry-After", seconds(retry_ms) }
    end
    return out
end

return _M
