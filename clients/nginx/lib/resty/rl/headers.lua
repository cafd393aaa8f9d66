-- The HTTP headers of a decision (docs/commands.md, "The shared reply" and "The IETF
-- RateLimit fields"), as the Python and Node packages write them: seconds are milliseconds
-- divided by 1,000 and rounded up, so a client that waits them is never early.
local quota_period_s = require("resty.rl.policy").quota_period_s
local ceil = math.ceil
local ngx = ngx

local _M = {}

-- `RateLimit-Policy` of layer `name` under `policy` (policy.lua's): `"<name>";q=<quota>;w=<window
-- s>`; for a policy named on the server, `"<name>";q=` and the reply's limit goes after it
-- (the server knows the window, the gateway does not); for a quota, `"<name>";q=<limit>;w=`
-- and its current period's length goes after it (policy.lua's quota_period_s: a month's
-- varies). Made once per layer and policy.
local function policy_field(name, policy)
    local made = policy.fields[name]
    if not made then
        if policy.named then
            made = '"' .. name .. '";q='
        elseif policy.calendar then -- a quota's w is its current period's: set per reply
            made = '"' .. name .. '";q=' .. policy.quota .. ";w="
        else
            made = '"' .. name .. '";q=' .. policy.quota .. ";w=" .. policy.window_s
        end
        policy.fields[name] = made
    end
    return made
end

-- Sets the response headers of layer `name`'s decision (its `policy`, and its `reply`, the five
-- integers), in this order: `X-RateLimit-Limit`, `-Remaining`, `-Reset`, the IETF
-- `RateLimit-Policy` and `RateLimit` (`"<name>";r=<remaining>;t=<reset s>`), and with `retry`
-- a denial's `Retry-After` (never for one that can never be admitted). The integers are at
-- most 10^12, which Lua writes in digits.
function _M.set(name, policy, reply, retry)
    local header = ngx.header
    local remaining, reset = reply[3], ceil(reply[5] / 1000)
    header["X-RateLimit-Limit"] = reply[2]
    header["X-RateLimit-Remaining"] = remaining
    header["X-RateLimit-Reset"] = reset
    local field = policy_field(name, policy)
    if policy.calendar then -- a quota: its current period, the renewal now + reset_after_ms
        local renewal = ngx.now() * 1000 + (reply[5] > 0 and reply[5] or 0)
        field = field .. quota_period_s(policy.calendar, renewal)
    end
    header["RateLimit-Policy"] = policy.named and field .. reply[2] or field
    header["RateLimit"] = '"' .. name .. '";r=' .. remaining .. ";t=" .. reset
    if retry and reply[1] == 0 and reply[4] >= 0 then
        header["Retry-After"] = ceil(reply[4] / 1000)
    end
end

return _M
