-- Insurance (docs/nginx.md, "Insurance"): while Redis cannot decide, the node decides alone,
-- in a lua_shared_dict its workers share, each layer's policy divided by the number of nodes
-- that share the Redis: a fixed window per layer key, of the policy's count before its duration
-- divided by `nodes` (rounded down, at least 1) per that duration, starting with the key's
-- first request during the outage. Bursts, capacities, penalties and bans are not known here;
-- a policy named on the server has no parameters here, so a request one of its layers applies
-- to is not insured (503, or fail_open, as without insurance).
--
-- A window's count, under "w <layer key>", expires with the window (the dict's TTL); the
-- switch's flag, under "on <Redis>", holds the instant (ms) the first request insured set it,
-- and is taken down by the first request sent after that instant that Redis answers: an answer
-- to a request sent before (read after another worker saw Redis go) is not Redis back. Each
-- logs the switch once per node.
local ngx = ngx
local ceil, floor, ipairs = math.ceil, math.floor, ipairs

local _M = {}

-- Layer `layer`'s local limit (its policy's count divided by `nodes`, at least 1) and window
-- in milliseconds, or nil for a policy named on the server.
local function local_policy(layer, nodes)
    local p = layer.policy
    if p.named then
        return nil
    end
    local limit = floor(p.quota / nodes)
    return limit < 1 and 1 or limit, p.window_ms
end

-- Takes `cost` back from the windows of `layers[1..upto]`.
local function give_back(dict, layers, upto, cost)
    for i = 1, upto do
        dict:incr("w " .. layers[i].key, -cost)
    end
end

-- The node's decision of `layers` for a request of `cost`, in `dict`, all or nothing: a result
-- as Redis's is read ({ allowed, index of the binding layer, replies: five integers each }),
-- or nil when a layer's policy is named on the server (or the dict refused a count).
function _M.decide(dict, layers, cost, nodes)
    local limits, windows = {}, {}
    for i, layer in ipairs(layers) do
        limits[i], windows[i] = local_policy(layer, nodes)
        if not limits[i] then
            return nil
        end
    end
    local counts, denied = {}, nil
    for i, layer in ipairs(layers) do
        local key = "w " .. layer.key
        local count, err = dict:incr(key, cost, 0, windows[i] / 1000)
        if not count then
            ngx.log(ngx.WARN, "rl: insurance: a window was not counted: ", err)
            give_back(dict, layers, i - 1, cost)
            return nil
        end
        counts[i] = count
        if count > limits[i] then
            denied = i
            give_back(dict, layers, i, cost)
            break
        end
    end
    local replies, index = {}, 1
    for i, layer in ipairs(layers) do
        local ttl = dict:ttl("w " .. layer.key)
        local reset = ttl and ttl > 0 and ceil(ttl * 1000) or windows[i]
        if denied then
            if i == denied then
                local never = cost > limits[i] -- a cost no window holds: no wait admits it
                local left = limits[i] - (counts[i] - cost)
                replies[i] = { 0, limits[i], left > 0 and left or 0, never and -1 or reset, reset }
                index = i
            end
        else
            replies[i] = { 1, limits[i], limits[i] - counts[i], 0, reset }
            if replies[i][3] < replies[index][3] then
                index = i
            end
        end
    end
    if denied then
        return { allowed = false, index = denied, replies = { [denied] = replies[denied] } }
    end
    return { allowed = true, index = index, replies = replies }
end

-- The switch: `on` true when Redis could not decide and the node decided, false when Redis
-- answered the request sent at `sent` (ngx.now()). Logs once per node at each switch (`where`
-- names the Redis, `why` its error).
function _M.switch(dict, where, on, why, nodes, sent)
    local flag = "on " .. where
    if on then
        if dict:add(flag, floor(ngx.now() * 1000)) then
            ngx.log(ngx.ERR, "rl: Redis unavailable, insurance on: this node decides alone, each policy divided by ",
                nodes, " (", why, ")")
        end
        return
    end
    local since = dict:get(flag)
    if since and since > 0 and sent * 1000 > since then
        -- Of the workers that see Redis answer at once, the one that brings the flag to 0
        -- logs; the others leave it below 0 (still off) until it is deleted.
        if dict:incr(flag, -since) == 0 then
            dict:delete(flag)
            ngx.log(ngx.WARN, "rl: Redis answers again, insurance off: decisions are Redis's again")
        end
    end
end

return _M
