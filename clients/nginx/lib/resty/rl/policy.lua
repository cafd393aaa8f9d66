-- A layer's policy: the words of its RL.ALL clause, and what the IETF `RateLimit-Policy`
-- field says of it. A policy is either spelled out (`GCRA 100 1s BURST 20`: an algorithm and
-- its parameters, as the commands take them after the key; with a penalty, `FIXED 5 15m
-- PENALTY 15m ESCALATE 24h`, the denial past the limit starts 15 minutes of denials on the
-- key, doubling for each penalty within a day of the last one's end) or the name of a policy
-- held on the server (`free`: the clause `POLICY free`, RL.POLICY SET on the module, a policy
-- file written into the library without it).
local facts = require "resty.rl.facts"

local ceil, floor, tonumber, type = math.ceil, math.floor, tonumber, type

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

-- The penalty's words at w[i] (`PENALTY d [ESCALATE max]`) appended to `clause`: the next
-- index, or nil and why.
local function penalty_words(text, w, i, clause)
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
    return i
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
    if algo == "QUOTA" then
        return _M.parse_quota(text, w, kind)
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
            local next_i, err = penalty_words(text, w, i, clause)
            if not next_i then return nil, err end
            i = next_i
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

-- A quota's units, and the window its insurance counts in (the longest such period).
local QUOTA_UNITS = { DAY = 86400000, WEEK = 7 * 86400000, MONTH = 31 * 86400000 }


-- `QUOTA limit DAY|WEEK|MONTH [TZ zone] [ANCHOR yyyy-mm-ddThh:mm] [PENALTY d [ESCALATE max]]`
-- (RL.QUOTA's): its `calendar` is { unit, the anchor's day of the month }, for its
-- RateLimit-Policy (headers.lua: the current period's length); `window_ms` is the longest
-- such period, the window its insurance counts in. The zone goes as given (the server
-- checks it: an unknown one is its error, 500 on every request).
function _M.parse_quota(text, w, kind)
    if not (w[2] and is_count(w[2])) then
        return nil, "policy '" .. text .. "': limit must be an integer from 1 to "
            .. string.format("%.0f", facts.MAX_COUNT)
    end
    local unit = w[3] and w[3]:upper()
    if not QUOTA_UNITS[unit] then
        return nil, "policy '" .. text .. "': unit must be DAY, WEEK or MONTH"
    end
    local clause, day = { "QUOTA", w[2], unit }, 1
    local i, seen = 4, {}
    while w[i] do
        local option = w[i]:upper()
        if seen[option] then
            return nil, "policy '" .. text .. "': " .. option .. " given more than once"
        end
        seen[option] = true
        if option == "TZ" then
            if not w[i + 1] then
                return nil, "policy '" .. text .. "': TZ needs a zone (UTC, +05:30, Europe/Paris)"
            end
            clause[#clause + 1], clause[#clause + 2] = "TZ", w[i + 1]
            i = i + 2
        elseif option == "ANCHOR" then
            local d = w[i + 1] and w[i + 1]:match("^%d%d%d%d%-%d%d%-(%d%d)T%d%d:%d%d$")
            if not d then
                return nil, "policy '" .. text .. "': ANCHOR must be a local date and time"
                    .. " yyyy-mm-ddThh:mm (such as 2001-01-15T00:00)"
            end
            day = tonumber(d)
            clause[#clause + 1], clause[#clause + 2] = "ANCHOR", w[i + 1]
            i = i + 2
        elseif option == "PENALTY" then
            local next_i, err = penalty_words(text, w, i, clause)
            if not next_i then
                return nil, err
            end
            i = next_i
        elseif option == "ESCALATE" then
            return nil, "policy '" .. text .. "': ESCALATE max follows PENALTY d"
        else
            return nil, "policy '" .. text .. "': unexpected '" .. w[i]
                .. "' (a quota is QUOTA limit DAY|WEEK|MONTH [TZ zone] [ANCHOR yyyy-mm-ddThh:mm]"
                .. " and PENALTY d [ESCALATE max])"
        end
    end
    return {
        clause = clause,
        named = false,
        quota = tonumber(w[2]),
        window_ms = QUOTA_UNITS[unit],
        calendar = { unit = unit, day = day },
        fields = {},
        command = kind.command,
        fcall = kind.fcall,
        args = { unpack(clause, 2) },
    }
end

-- Days since 1970-01-01 of the date y-m-d (Howard Hinnant's days_from_civil).
local function epoch_day(y, m, d)
    if m <= 2 then
        y = y - 1
    end
    local era = floor(y / 400)
    local yoe = y - era * 400
    local mp = (m + 9) % 12
    local doy = floor((153 * mp + 2) / 5) + d - 1
    local doe = yoe * 365 + floor(yoe / 4) - floor(yoe / 100) + doy
    return era * 146097 + doe - 719468
end

-- The date of epoch day `z`: y, m, d (civil_from_days).
local function civil(z)
    z = z + 719468
    local era = floor(z / 146097)
    local doe = z - era * 146097
    local yoe = floor((doe - floor(doe / 1460) + floor(doe / 36524) - floor(doe / 146096)) / 365)
    local doy = doe - (365 * yoe + floor(yoe / 4) - floor(yoe / 100))
    local mp = floor((5 * doy + 2) / 153)
    local d = doy - floor((153 * mp + 2) / 5) + 1
    local m = mp < 10 and mp + 3 or mp - 9
    return yoe + era * 400 + (m <= 2 and 1 or 0), m, d
end

-- The month's renewal day (an epoch day) of an anchor on `day`: that day, or the month's last.
local function renewal_day(y, m, day)
    local ny, nm = y, m + 1
    if nm == 13 then
        ny, nm = y + 1, 1
    end
    local last = epoch_day(ny, nm, 1) - epoch_day(y, m, 1)
    return epoch_day(y, m, day < last and day or last)
end

-- The length in seconds of the quota period that ends at `renewal_ms` (epoch ms), on
-- `calendar`: a day 86,400, a week 604,800, a month the whole days from the renewal before
-- it to it. The renewal's local date is within a day of its UTC date (a zone's offset is
-- under 24 hours) and renewals are at least 28 days apart, so it is the first renewal date
-- from the day before the UTC date on: no time zone database. A change of offset inside the
-- period (DST) is not counted. As the Python and Node packages compute it.
function _M.quota_period_s(calendar, renewal_ms)
    if calendar.unit ~= "MONTH" then
        return calendar.unit == "DAY" and 86400 or 604800
    end
    local from = floor(renewal_ms / 86400000) - 1
    local y, m = civil(from)
    if from > renewal_day(y, m, calendar.day) then
        m = m + 1
        if m == 13 then
            y, m = y + 1, 1
        end
    end
    local py, pm = y, m - 1
    if pm == 0 then
        py, pm = y - 1, 12
    end
    return (renewal_day(y, m, calendar.day) - renewal_day(py, pm, calendar.day)) * 86400
end

return _M
