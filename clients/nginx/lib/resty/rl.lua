-- resty.rl: rate limits at the edge, for NGINX's Lua module (OpenResty, or Debian's nginx with
-- libnginx-mod-http-lua). A limiter decides a request's layers (per client address, per API
-- key, per endpoint ...) with ONE RL.ALL, all or nothing, from `access_by_lua*` (a request
-- that only one layer applies to, with that layer's own command: the same decision):
--
--     init_by_lua_block {
--         edge = require("resty.rl").new({
--             redis = { host = "127.0.0.1", port = 6379 },
--             layers = { { name = "ip", by = "ip", policy = "GCRA 100 1s BURST 20" } },
--         })
--     }
--     location / { access_by_lua_block { edge:access() } proxy_pass http://app; }
--
-- `limiter:refund(name)` gives back what a request spent (a login's success, so that only its
-- failures count), `limiter:ban(key, ms)` refuses a key for a time (RL.BAN). On a server
-- without the module it calls the Functions library instead (backend.lua). See docs/nginx.md
-- for every option.
local backend = require "resty.rl.backend"
local cache = require "resty.rl.cache"
local facts = require "resty.rl.facts"
local headers = require "resty.rl.headers"
local identity = require "resty.rl.identity"
local insurance = require "resty.rl.insurance"
local loader = require "resty.rl.loader"
local metrics = require "resty.rl.metrics"
local options = require "resty.rl.options"
local policy = require "resty.rl.policy"
local server = require "resty.rl.server"

local ngx = ngx
local type, ipairs, tostring, floor = type, ipairs, tostring, math.floor

local _M = { _VERSION = "0.1.0" }
local mt = { __index = _M }

-- Per worker, one state per Redis (the backend it answers with, a cluster's slot map, its
-- name in the library loads' gate), shared by the limiters that use it.
local states = {}

-- Policies read from a variable or a function at request time, parsed once per worker (at
-- most this many kept: past it they are parsed on each request).
local PARSED_MAX = 1000
local parsed, parsed_count = {}, 0

local function parse_cached(text)
    local p = parsed[text]
    if p then
        return p
    end
    local err
    p, err = policy.parse(text)
    if p and parsed_count < PARSED_MAX then
        parsed[text], parsed_count = p, parsed_count + 1
    end
    return p, err
end

-- A limiter: `opts.layers` decided together by one RL.ALL per request (options.lua checks
-- `opts`; docs/nginx.md lists them). Raises an error for a configuration it cannot run.
function _M.new(opts)
    local self = options.check(opts)
    self.o.library_text, self.o.library_missing = backend.library_text(opts.library)
    self.o.gate = loader.gate(self.shared_dict)
    local where = self.o.pool_prefix .. (self.o.host or "") .. ":" .. (self.o.port or "")
    for _, n in ipairs(self.o.cluster or {}) do
        where = where .. "," .. n.host .. ":" .. n.port
    end
    states[where] = states[where] or { where = ngx.md5(where) }
    self.state = states[where]
    self.cache = self.denial_cache and ngx.shared[self.denial_cache]
    self.counters = self.metrics_dict and ngx.shared[self.metrics_dict]
    self.insured = self.insurance and ngx.shared[self.insurance.dict]
    if self.counters then
        metrics.init(self.counters, self.layers)
    end
    return setmetatable(self, mt)
end

local function identity_of(self, by)
    if by == "ip" then
        return identity.ip_key(ngx.var.binary_remote_addr or "", self.ipv6_bits) or ngx.var.remote_addr
    end
    local value
    if type(by) == "function" then
        value = by()
    else
        value = ngx.var[by]
    end
    if value == nil or value == "" then
        return nil
    end
    return tostring(value)
end

local function policy_now(p)
    if p.fixed then
        return p.fixed
    end
    local text
    if p.variable then
        text = ngx.var[p.variable]
    else
        text = p.call()
    end
    if text == nil or text == "" then
        return nil
    end
    return parse_cached(text)
end

-- The layers that apply to this request: { name, key, policy } each.
function _M.applying(self)
    local ids = {}
    for i, layer in ipairs(self.layers) do
        ids[i] = identity_of(self, layer.by)
    end
    local base = self.prefix
    if self.tag then
        base = base .. ":{" .. identity.tag_text(ids[self.tag]) .. "}"
    end
    local out = {}
    for i, layer in ipairs(self.layers) do
        if ids[i] then
            local p, err = policy_now(layer.policy)
            if err then
                return nil, "layer '" .. layer.name .. "': " .. err
            end
            if p then
                out[#out + 1] = { name = layer.name, key = base .. ":" .. layer.name .. ":" .. ids[i], policy = p }
            end
        end
    end
    return out
end

-- Client text as a log line may hold it: control characters escaped (`\x0a`).
local function printable(text)
    return (text:gsub("[%c\\]", function(c)
        return string.format("\\x%02x", c:byte())
    end))
end

-- A SHADOW policy's denial is answered as admitted, nothing remaining, a wait (a named LEAKY
-- policy's admission to its queue's last place reads the same).
local function looks_shadowed(layer, r)
    return layer.policy.named and r[1] == 1 and r[3] == 0 and r[4] ~= 0
end

local function failed(err, kind, name)
    return nil, err, kind == server.UNAVAILABLE and "unavailable" or "error", name
end

-- The denial cache's answer for `layers`: the first of them kept as denied for a request of
-- `cost`, as a result, or nil. Of several, the one that waits longest (RL.ALL's binding
-- denial when Redis denied them together).
local function cached(dict, layers, cost)
    local found, reply
    for _, layer in ipairs(layers) do
        local r = cache.get(dict, layer, cost)
        if r and (not reply or r[4] > reply[4]) then
            found, reply = layer, r
        end
    end
    if found then
        return { allowed = false, layer = found, reply = reply, cached = true }
    end
end

-- decide(), and the name of the layer a request without a binding layer (unavailable, an
-- error) is counted under: the first that applies, else the limiter's first.
local function decided(self, cost)
    if cost == nil then
        cost = 1
    elseif type(cost) ~= "number" or cost ~= floor(cost) or cost < 0 or cost > facts.MAX_COUNT then
        return nil, "the cost is an integer from 0 to " .. string.format("%.0f", facts.MAX_COUNT) .. ": "
            .. tostring(cost), "error", self.layers[1].name
    end
    local layers, err = self:applying()
    if not layers then
        return nil, err, "error", self.layers[1].name
    end
    if #layers == 0 then
        return nil
    end
    if cost ~= 1 then -- `COST n` after each layer's clause (1 is the commands' default)
        local extra = { "COST", string.format("%.0f", cost) }
        for _, layer in ipairs(layers) do
            layer.cost, layer.extra = cost, extra
        end
    end
    if self.cache then
        local hit = cached(self.cache, layers, cost)
        if hit then
            return hit
        end
    end
    local sent = ngx.now()
    local res, e, kind = backend.decide(self.o, self.state, layers)
    local insured = self.insured
    if insured then
        local down = res == nil and kind == server.UNAVAILABLE
        if down then
            local local_result = insurance.decide(insured, layers, cost, self.insurance.nodes)
            if local_result then
                insurance.switch(insured, self.state.where, true, printable(e), self.insurance.nodes)
                local index = local_result.index
                return { allowed = local_result.allowed, layer = layers[index], reply = local_result.replies[index],
                         replies = local_result.allowed and local_result.replies or nil, insured = true }
            end
        else
            insurance.switch(insured, self.state.where, false, nil, nil, sent)
        end
    end
    if res == nil then
        return failed(e, kind, layers[1].name)
    end
    local replies = res[6] or { res }
    if self.cache and res[1] == 0 then
        for i, r in ipairs(replies) do
            cache.put(self.cache, layers[i], r, sent, self.denial_cache_max_ms)
        end
    elseif self.cache and self.denial_cache_exhausted then
        for i, r in ipairs(replies) do
            cache.put_exhausted(self.cache, layers[i], r, sent, self.denial_cache_max_ms)
        end
    end
    local index = 1
    for i, r in ipairs(replies) do
        if r[1] == res[1] and r[2] == res[2] and r[3] == res[3] and r[4] == res[4] and r[5] == res[5] then
            index = i
            break
        end
    end
    local shadowed
    for i, r in ipairs(replies) do
        if looks_shadowed(layers[i], r) then
            shadowed = layers[i]
            break
        end
    end
    if res[1] == 1 then
        local ctx = ngx.ctx
        local spent = ctx.rl_spent
        if not spent then
            spent = {}
            ctx.rl_spent = spent
        end
        spent[self] = { layers = layers, replies = replies, sent = sent }
    end
    return { allowed = res[1] == 1, layer = layers[index], reply = replies[index], replies = replies,
             shadowed = shadowed }
end

-- Decides the request, spending `cost` units of each layer (1 if not given; 0 to 10^12): a
-- result, or nil when no layer applies, or nil, the error's text and "unavailable" (Redis out
-- of reach) or "error" (anything else: a policy the server refuses, a key holding another
-- value, the library refused, a cost out of bounds).
--   result.allowed   every layer admitted
--   result.layer     the binding layer ({ name, key, policy }); result.reply its five integers
--   result.replies   every layer's five integers, in order (nil for a cached denial)
--   result.shadowed  the layer a SHADOW policy on the server denied, if one did
--   result.cached    denied from the denial cache, without a call
--   result.insured   decided by this node alone, Redis unavailable (`insurance`)
-- An admitted request's spending is kept in ngx.ctx, for `refund`.
function _M.decide(self, cost)
    local result, err, kind = decided(self, cost)
    return result, err, kind
end

local function refund_later(premature, o, state, layers)
    if premature then
        return
    end
    local res, err = backend.decide(o, state, layers)
    if res == nil then
        ngx.log(ngx.ERR, "rl: a refund failed (", printable(layers[1].key), "): ", printable(err))
    end
end

-- The phases in which the Lua module cannot talk to the network: a refund waits for a timer.
local NO_SOCKETS = { log = true, header_filter = true, body_filter = true }

-- Gives back the units this request's `access()` (or `decide()`) spent on the layer named
-- `name` (every layer it spent on, without a name): `REFUND <cost>` (one RL.ALL for several), so
-- that only some outcomes count, e.g. a login's failures: `log_by_lua_block { if ngx.status
-- == 200 then limits:refund() end }`. Nothing goes to a layer whose units no longer count
-- (its reply's reset time has passed since the call) or that spent nothing (a SHADOW policy's
-- denial), nor twice. In the log, header_filter and body_filter phases, where no connection
-- can be made, it is sent from a timer right after (a failure is logged); elsewhere at once.
-- Returns true when a refund was sent (or its timer set), false when there was nothing to
-- give back, or nil, the error's text and "unavailable" or "error".
function _M.refund(self, name)
    local spent = ngx.ctx.rl_spent
    local mine = spent and spent[self]
    if not mine then
        return false
    end
    spent[self] = nil
    ngx.update_time()
    local elapsed_ms = (ngx.now() - mine.sent) * 1000
    local layers = {}
    for i, layer in ipairs(mine.layers) do
        local r = mine.replies[i]
        if (name == nil or layer.name == name) and not looks_shadowed(layer, r) and elapsed_ms < r[5] then
            local units = layer.cost or 1
            if units > 0 then
                layers[#layers + 1] = { name = layer.name, key = layer.key, policy = layer.policy,
                                        extra = { "REFUND", string.format("%.0f", units) } }
            end
        end
    end
    if #layers == 0 then
        return false
    end
    if self.cache then -- this node's cached denials of those keys no longer hold
        for _, layer in ipairs(layers) do
            cache.drop(self.cache, layer.key)
        end
    end
    if NO_SOCKETS[ngx.get_phase()] then
        local ok, err = ngx.timer.at(0, refund_later, self.o, self.state, layers)
        if not ok then
            return nil, "a refund's timer: " .. tostring(err), "error"
        end
        return true
    end
    local res, err, kind = backend.decide(self.o, self.state, layers)
    if res == nil then
        return failed(err, kind)
    end
    return true
end

-- `RL.BAN key ms` (`FCALL rl_ban 1 key ms` on the library): `key` (a layer's key,
-- `<prefix>:<name>:<identity>`) denied for `ms` milliseconds from now, whatever its limiter
-- and rate; `ms` 0 lifts a ban or a penalty. Returns true if the key existed, false if not, or
-- nil, the error's text and "unavailable" or "error". From a phase that can talk to the
-- network (rewrite, access, content, a timer).
function _M.ban(self, key, ms)
    if type(key) ~= "string" then
        return nil, "ban: the key is a string, not " .. type(key), "error"
    end
    if type(ms) ~= "number" or ms ~= floor(ms) or ms < 0 or ms > facts.MAX_DURATION_MS then
        return nil, "ban: ms is an integer from 0 to " .. string.format("%.0f", facts.MAX_DURATION_MS), "error"
    end
    if self.cache then -- a ban lifted or changed here is seen here at once
        cache.drop(self.cache, key)
    end
    local res, err, kind = backend.ban(self.o, self.state, key, string.format("%.0f", ms))
    if res == nil then
        return failed(err, kind)
    end
    return res == 1
end

-- Answers the request itself: `status`, a JSON `body`, and a denial's headers for `layer`.
local function answer(status, body, layer, reply)
    ngx.status = status
    if layer then
        headers.set(layer.name, layer.policy, reply, true)
    end
    ngx.header["Content-Type"] = "application/json"
    ngx.header["Content-Length"] = #body
    ngx.print(body)
    return ngx.exit(status)
end

-- The access phase: decides the request (of `cost` units, 1 if not given: `limiter:access(5)`
-- for a request that weighs 5) and sets the binding layer's headers on the
-- response; a denial is answered 429 with them, `Retry-After` among them, and a JSON body
-- naming the layer. Redis out of reach: 503 (`fail_open`: let through), logged either way.
-- Any other error: 500, logged; never let through unchecked.
function _M.access(self, cost)
    local result, err, kind, name = decided(self, cost)
    local counters = self.counters
    if not result then
        if not err then
            return -- no layer applies
        end
        if kind == "unavailable" then
            if counters then
                metrics.count(counters, name, self.fail_open and "unavailable_fail_open" or "unavailable")
            end
            if self.fail_open then
                ngx.log(ngx.ERR, "rl: Redis unavailable, request let through (fail_open): ", printable(err))
                return
            end
            ngx.log(ngx.ERR, "rl: Redis unavailable, request refused with 503 (fail closed): ", printable(err))
            return answer(503, '{"error":"rate limiter unavailable"}\n')
        end
        if counters then
            metrics.count(counters, name, "error")
        end
        ngx.log(ngx.ERR, "rl: request refused with 500: ", printable(err))
        return answer(500, '{"error":"rate limiter error"}\n')
    end
    local layer = result.layer
    if counters then
        local counted, what = layer, "within_limit"
        if not result.allowed then
            what = self.shadow and "shadow_mode" or result.cached and "over_limit_with_local_cache"
                or result.insured and "insured_over_limit" or "over_limit"
        elseif result.insured then
            what = "insured_within_limit"
        elseif result.shadowed then
            counted, what = result.shadowed, "shadow_mode"
        end
        metrics.count(counters, counted.name, what)
    end
    if not result.allowed and not self.shadow then
        return answer(429, '{"error":"rate limited","layer":"' .. layer.name .. '"}\n', layer, result.reply)
    end
    local would = not result.allowed and layer or result.shadowed
    if would then
        ngx.log(ngx.WARN, "rl: rate limit would deny ", ngx.var.request_method, " ", printable(ngx.var.uri),
            ": layer ", would.name, ", key ", printable(would.key),
            result.allowed and " (SHADOW policy '" .. would.policy.clause[2] .. "')" or " (shadow = true)")
    end
    if self.headers then
        headers.set(layer.name, layer.policy, result.reply, false)
    end
end

_M.ip_key = identity.ip_key

-- Answers the request (from `content_by_lua_block`, on a location of the operator's choice)
-- with the decisions counted in the lua_shared_dict named `dict_name` (the limiters' `metrics`
-- option), in the Prometheus text exposition format.
_M.metrics = metrics.serve

return _M
