-- The denial cache (docs/nginx.md, "The denial cache"): once Redis denies a layer's key with a
-- wait R > 0, the node's workers deny that key's requests under the same policy themselves,
-- from a lua_shared_dict, until R has passed, with the answer Redis gave, its times counted
-- down, without a call. An entry only ever denies: a key without one (never denied, expired,
-- evicted by the dict's LRU when full, dropped by a refund or a ban made here) is asked of
-- Redis, so the dict's size bounds the memory and never the exactness of admissions.
--
-- An entry, under the layer's key: "<deny_end> <retry_end> <reset_end> <limit> <remaining>
-- <cost> <clause>", instants in milliseconds of ngx.now(). The instants count from the call's
-- start, before Redis decided, so a cached denial ends no later than Redis's (a request Redis
-- would admit is never denied from here, but for a REFUND, a raised policy or a lifted ban
-- made elsewhere: seen when the entry ends, at most R later).
local ngx = ngx
local ceil, floor, format, tonumber, concat = math.ceil, math.floor, string.format, tonumber, table.concat

local _M = {}

local function clause_text(p)
    local text = p.clause_text
    if not text then
        text = concat(p.clause, " ")
        p.clause_text = text
    end
    return text
end

-- Keeps layer `layer`'s denial of `cost` for `wait` ms (at most `max_ms` when given) from
-- `sent`, with `r`'s limit and reset and `remaining`.
local function keep_denial(dict, layer, r, sent, max_ms, wait, cost, remaining)
    local keep = wait
    if max_ms and max_ms < keep then
        keep = max_ms
    end
    local start = floor(sent * 1000)
    local value = format("%.0f %.0f %.0f %.0f %.0f %d %s", start + keep, start + wait, start + r[5], r[2], remaining,
        cost, clause_text(layer.policy))
    local ok, err = dict:set(layer.key, value, keep / 1000)
    if not ok then
        ngx.log(ngx.WARN, "rl: the denial cache did not keep a denial: ", err)
    end
end

-- Records layer `layer`'s denial `r` (its five integers) of a request whose call started at
-- `sent` (seconds, ngx.now()), when it says when the same request is admitted (R > 0), for at
-- most `max_ms` when given.
function _M.put(dict, layer, r, sent, max_ms)
    local wait = r[4]
    if r[1] ~= 0 or wait <= 0 then
        return
    end
    keep_denial(dict, layer, r, sent, max_ms, wait, layer.cost or 1, r[3])
end

-- The limiters whose admission leaving nothing says when the next unit is free: those at a
-- rate (one instant, when they are idle: the next unit is free (limit - 1) units' time
-- before it) and those on windows (at the window's end, the renewal: no unit's time).
local RATES = { GCRA = true, TOKENBUCKET = true, LEAKY = true }
local WINDOWS = { FIXED = true, QUOTA = true }

-- The time one unit of policy `p` costs in ms for a rate, 0 for a window, or false when its
-- admissions are not kept: another algorithm, a policy named on the server (its algorithm is
-- Redis's), a penalty (the denial that starts it must reach Redis). Kept in `p`.
local function unit_ms(p)
    local u = p.unit_ms
    if u ~= nil then
        return u
    end
    u = false
    local algo = not p.named and p.clause[1]
    if algo then
        for _, word in ipairs(p.clause) do
            if word == "PENALTY" then
                algo = nil
                break
            end
        end
    end
    if algo and WINDOWS[algo] then
        u = 0
    elseif algo and RATES[algo] then
        u = p.window_ms / p.quota
    end
    p.unit_ms = u
    return u
end

-- With `denial_cache_exhausted`: records layer `layer`'s admission `r` that left nothing
-- (remaining 0) as a denial of every cost until its next unit is free, `reset_after` less
-- (limit - 1) units' time, 1 ms less again (Redis rounds its times up): never past the
-- instant Redis would admit, counted from `sent` as a denial is.
function _M.put_exhausted(dict, layer, r, sent, max_ms)
    if r[1] ~= 1 or r[3] ~= 0 then
        return
    end
    local u = unit_ms(layer.policy)
    if not u then
        return
    end
    local wait = floor(r[5] - 1 - (r[2] - 1) * u)
    if wait >= 1 then
        keep_denial(dict, layer, r, sent, max_ms, wait, 1, 0)
    end
end

-- Layer `layer`'s cached denial of a request of cost `cost`, as Redis's five integers with the
-- times counted down to now, or nil: none kept, one that has ended, one of another policy
-- (the layer's policy read from a variable, or changed by a reload), or one for a cost above
-- `cost` (a smaller cost is asked of Redis, which may admit it). A cost above the one denied
-- is denied too (what a cost did not fit, a larger one does not), its wait the smaller one
-- kept: when it ends, Redis is asked.
function _M.get(dict, layer, cost)
    local value = dict:get(layer.key)
    if not value then
        return nil
    end
    local deny_end, retry_end, reset_end, limit, remaining, denied_cost, clause =
        value:match("^(%d+) (%d+) (%d+) (%d+) (%d+) (%d+) (.*)$")
    if not clause or clause ~= clause_text(layer.policy) or cost < tonumber(denied_cost) then
        return nil
    end
    ngx.update_time()
    local now = ngx.now() * 1000
    deny_end = tonumber(deny_end)
    if now >= deny_end then
        return nil
    end
    local retry = ceil(tonumber(retry_end) - now)
    local reset = ceil(tonumber(reset_end) - now)
    return { 0, tonumber(limit), tonumber(remaining), retry, reset > 0 and reset or 0 }
end

-- Forgets `key`'s cached denial (a refund or a ban made on this node).
function _M.drop(dict, key)
    dict:delete(key)
end

return _M
