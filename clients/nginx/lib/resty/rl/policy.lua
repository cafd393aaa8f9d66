-- A layer's policy: the words of its RL.ALL clause, and what the IETF `RateLimit-Policy`
-- field says of it. A policy is either spelled out (`GCRA 100 1s BURST 20`: an algorithm and
-- its parameters, as the commands take them after the key; with a penalty, `FIXED 5 15m
-- PENALTY 15m ESCALATE 24h`, the denial past the limit starts 15 minutes of denials on the
-- key, doubling for each penalty within a day of the last one's end) or the name of a policy
-- held on the server (`free`: the clause `POLICY free`, RL.POLICY SET on the module, a policy
-- file written into the library without it).
local facts = require "resty.rl.facts"

local ceil, tonumber, type = math.ceil, tonumber, type

local _M = {}

-- A server-side policy's name, as the server checks it: 1 to MAX_POLICY_NAME of these.
local NAME = "^[A-Za-z0-9_.:-]+$"

-- The algorithms that admit at a rate (their count before the duration per that duration):
-- the server refuses a rate over 1 per nanosecond.
local RATED = { GCRA = true, TOKENBUCKET = true, LEAKY = true }

-- `text` (digits and an optional unit, a bare integer is seconds) in milliseconds, or nil
-- when the server would refuse it.
local function duration_ms(text)
    local digits, unit = text:match("^(%d+)(%a*)$")
    local per = digits and facts.UNIT_MS[unit:lower()]
    if not per then
        return nil
    end
    local ms = tonumber(digits) * per
    if ms < 1 or ms > facts.MAX_DURATION_MS then
        return nil
    end
    return ms
end

local function is_count(text)
    local n = text:match("^%d+$") and tonumber(text)
    return n ~= nil and n >= 1 and n <= facts.MAX_COUNT
end

local function words(text)
    local out = {}
    for w in text:gmatch("%S+") do
        out[#out + 1] = w
    end
    return out
end

-- `text` as a policy, or nil and why: { clause (its words in RL.ALL), named, quota, window_s,
-- window_ms, fields, command, fcall, args (alone: `<command> key <args>`, `FCALL <fcall> 1 key <args>`) }.
-- A spelled-out policy's `quota` is its count before the duration (GCRA's limit, the token
-- bucket's refill, the leaky bucket's leak, a window's limit) and `window_s` the duration in
-- whole seconds, rounded up (`window_ms` in milliseconds); a named one has neither (the server holds its parameters).
function _M.parse(text)
    if type(text) ~= "string" then
        return nil, "a policy is a string: " .. tostring(text)
    end
    local w = words(text)
    if #w == 1 then
        if #text > facts.MAX_POLICY_NAME or not text:match(NAME) then
            return nil, "a policy name is 1 to " .. facts.MAX_POLICY_NAME
                .. " of A-Z, a-z, 0-9 and _ . : -: '" .. text .. "'"
        end
        return { clause = { "POLICY", text }, named = true, fields = {},
                 command = "RL.LIMIT", fcall = "rl_limit", args = { text } }
    end
    local algo = w[1]:upper()
    local kind = facts.KINDS[algo]
    if not kind then
        return nil, "unknown algorithm '" .. w[1] .. "' in policy '" .. text .. "'"
    end
    local n = #kind.params
    if #w < n + 1 then
        return nil, "policy '" .. text .. "': " .. algo .. " takes "
            .. table.concat(kind.params, ", ")
    end
    for i = 2, n do
        if not is_count(w[i]) then
            return nil, "policy '" .. text .. "': " .. kind.params[i - 1] .. " must be an integer from 1 to "
                .. string.format("%.0f", facts.MAX_COUNT)
        end
    end
    local ms = duration_ms(w[n + 1])
    if not ms then
        return nil, "policy '" .. text .. "': " .. kind.params[n]
            .. " must be a duration from 1ms to 3650d (ms, s, m, h or d; bare integers are seconds)"
    end
    -- The server's bounds on a spelled-out policy, checked here so that a limiter it would
    -- refuse on every request refuses to start instead.
    local count = tonumber(w[n])
    if RATED[algo] and count > ms * 1e6 then
        return nil, "policy '" .. text .. "': " .. kind.params[n - 1] .. " per " .. kind.params[n]
            .. " must be at most 1 per nanosecond"
    end
    if algo == "SLIDINGLOG" and count > facts.SLIDING_LOG_MAX_LIMIT then
        return nil, "policy '" .. text .. "': limit must be an integer from 1 to "
            .. facts.SLIDING_LOG_MAX_LIMIT .. " (rl.sliding-log-max-limit's default; for more, name a policy"
            .. " held on a server configured for it)"
    end
    local clause = { algo }
    for i = 2, n + 1 do
        clause[i] = w[i]
    end
    -- Its options, in any order, each once: GCRA's BURST n, and PENALTY d [ESCALATE max].
    local i, seen = n + 2, {}
    while w[i] do
        local option = w[i]:upper()
        if seen[option] then
            return nil, "policy '" .. text .. "': " .. option .. " given more than once"
        end
        seen[option] = true
        if algo == "GCRA" and option == "BURST" then
            if not (w[i + 1] and is_count(w[i + 1])) then
                return nil, "policy '" .. text .. "': BURST needs an integer from 1 to "
                    .. string.format("%.0f", facts.MAX_COUNT)
            end
            clause[#clause + 1], clause[#clause + 2] = "BURST", w[i + 1]
            i = i + 2
        elseif option == "PENALTY" then
            local d = w[i + 1] and duration_ms(w[i + 1])
            if not d then
                return nil, "policy '" .. text .. "': PENALTY needs a duration from 1ms to 3650d"
                    .. " (ms, s, m, h or d; bare integers are seconds)"
            end
            clause[#clause + 1], clause[#clause + 2] = "PENALTY", w[i + 1]
            i = i + 2
            if w[i] and w[i]:upper() == "ESCALATE" then
                local max = w[i + 1] and duration_ms(w[i + 1])
                if not max then
                    return nil, "policy '" .. text .. "': ESCALATE needs a duration from 1ms to 3650d"
                        .. " (ms, s, m, h or d; bare integers are seconds)"
                end
                if max < d then
                    return nil, "policy '" .. text .. "': " .. facts.ESCALATE_BELOW_PENALTY
                end
                clause[#clause + 1], clause[#clause + 2] = "ESCALATE", w[i + 1]
                i = i + 2
            end
        elseif option == "ESCALATE" then
            return nil, "policy '" .. text .. "': ESCALATE max follows PENALTY d"
        else
            return nil, "policy '" .. text .. "': unexpected '" .. w[i]
                .. "' (a policy is an algorithm and its parameters" .. (algo == "GCRA" and ", BURST n" or "")
                .. " and PENALTY d [ESCALATE max])"
        end
    end
    return {
        clause = clause,
        named = false,
        quota = count,
        window_s = ceil(ms / 1000),
        window_ms = ms,
        fields = {}, -- its RateLimit-Policy field per layer name (headers.lua)
        command = kind.command,
        fcall = kind.fcall,
        args = { unpack(clause, 2) },
    }
end

return _M
