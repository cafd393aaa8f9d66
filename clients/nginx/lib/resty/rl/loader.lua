-- The Functions library's load (FUNCTION LOAD REPLACE, 139 KB) where a server says it is
-- missing: one load at a time per Redis, and none for a while after one failed.
--
-- The gate is the `lua_shared_dict` named by the `shared_dict` option, shared by the NGINX
-- node's workers; without one, a table of this worker's. In it, per Redis (`where`):
--   <where>:lock    held while a load is under way (expires, should its worker die mid-load)
--   <where>:loaded  when the last load succeeded (ngx.now())
--   <where>:failed  "<class> <error>" of the last failed load, for as long as its backoff lasts
--   <where>:delay   that backoff in seconds: 1 after a failure, doubled after each consecutive
--                   one up to 30; removed by a success
-- A request that finds a load under way waits for it (at most timeout_ms), then calls again;
-- one that finds a failed load's backoff answers with that load's error and class.
local server = require "resty.rl.server"

local ngx = ngx
local min, tostring = math.min, tostring

local _M = { FIRST_DELAY = 1, MAX_DELAY = 30 }

-- A worker's own gate, with the shared dict's methods this file uses: values that expire
-- after `ttl` seconds (0 or nil: never).
local function worker_gate()
    local values, expiry = {}, {}
    local gate = {}
    function gate.get(_, k)
        local e = expiry[k]
        if e and e <= ngx.now() then
            values[k], expiry[k] = nil, nil
        end
        return values[k]
    end
    function gate.set(_, k, v, ttl)
        values[k], expiry[k] = v, (ttl and ttl > 0) and ngx.now() + ttl or nil
        return true
    end
    function gate.add(self, k, v, ttl)
        if self:get(k) ~= nil then
            return false, "exists"
        end
        return self:set(k, v, ttl)
    end
    function gate.delete(_, k)
        values[k], expiry[k] = nil, nil
    end
    return gate
end

local own = worker_gate()

-- The gate a limiter's loads go through: the shared dict `name`, or this worker's.
function _M.gate(name)
    return name and ngx.shared[name] or own
end

local POLL_S = 0.002 -- how often a waiting request looks whether the load is done

-- The last failed load's error and class while its backoff lasts, else nil.
local function backing_off(gate, where)
    local failed = gate:get(where .. ":failed")
    if not failed then
        return nil
    end
    local class, err = failed:match("^(%S+) (.*)$")
    return "the Functions library's load failed (" .. err .. "); no new load before its backoff ends", class
end

local function load(o, gate, where, send)
    local res, err, class = send({ "FUNCTION", "LOAD", "REPLACE", o.library_text })
    ngx.update_time()
    if res then
        gate:set(where .. ":loaded", ngx.now())
        gate:delete(where .. ":delay")
        gate:delete(where .. ":failed")
        ngx.log(ngx.NOTICE, "rl: loaded the Functions library (FUNCTION LOAD REPLACE)")
    else
        local last = gate:get(where .. ":delay")
        local delay = last and min(last * 2, _M.MAX_DELAY) or _M.FIRST_DELAY
        gate:set(where .. ":delay", delay)
        gate:set(where .. ":failed", class .. " " .. tostring(err), delay)
    end
    gate:delete(where .. ":lock")
    if not res then
        return nil, "loading the Functions library: " .. tostring(err), class
    end
    return true
end

-- Makes sure the library is there for a request whose call, sent at `sent` (ngx.now()),
-- found it missing: true when it should be there now (this request loaded it, or another did
-- since `sent`), or nil, an error and its class. `send(args)` sends to the server that said so.
function _M.ensure(o, gate, where, sent, send)
    local deadline = ngx.now() + o.timeout_ms / 1000
    while true do
        local err, class = backing_off(gate, where)
        if err then
            return nil, err, class
        end
        local loaded = gate:get(where .. ":loaded")
        if loaded and loaded >= sent then
            return true
        end
        -- The lock outlives the longest load: connecting, sending and reading, each within
        -- timeout_ms (on a cluster, about twice that).
        if gate:add(where .. ":lock", true, 4 * o.timeout_ms / 1000) then
            return load(o, gate, where, send)
        end
        if ngx.now() >= deadline then
            return nil, "the Functions library is being loaded by another request (waited timeout_ms)",
                server.UNAVAILABLE
        end
        ngx.sleep(POLL_S)
    end
end

return _M
