-- A limiter's options (docs/nginx.md, "Options"), checked once, when it is made.
local facts = require "resty.rl.facts"
local policy = require "resty.rl.policy"

local ngx = ngx
local type, ipairs, pairs, tostring = type, ipairs, pairs, tostring

local _M = {}

-- A layer's name goes into keys, headers and a JSON body as it is: it holds nothing to escape,
-- and no `:`, so that no layer's keys are another's (`rl:a:b:x` is layer `a`'s alone).
local LAYER_NAME = "^[A-Za-z0-9_.-]+$"

local OPTIONS = { redis = true, layers = true, prefix = true, tag = true, ipv6_bits = true,
                  headers = true, shadow = true, fail_open = true, library = true, shared_dict = true,
                  denial_cache = true, denial_cache_max_ms = true, denial_cache_exhausted = true,
                  metrics = true, insurance = true }
local REDIS_FIELDS = { host = true, port = true, socket = true, cluster = true, password = true,
                       username = true, database = true, timeout_ms = true, pool_size = true,
                       idle_ms = true }
local LAYER_FIELDS = { name = true, by = true, policy = true }
local INSURANCE_FIELDS = { dict = true, nodes = true }
-- The most nodes insurance divides a policy by.
local MAX_NODES = 1000000

local function refuse(message)
    error("resty.rl: " .. message, 0)
end

-- Refuses a key of `t` that is not in `allowed`.
local function known(t, allowed, what)
    for k in pairs(t) do
        if not allowed[k] then
            refuse(tostring(k) .. " is not " .. what)
        end
    end
end

local function integer_in(value, low, high)
    return type(value) == "number" and value == math.floor(value) and value >= low and value <= high
end

-- The connection options, checked: a server (host and port, or a Unix socket) or a
-- cluster's seed nodes.
local function connection(r)
    if type(r) ~= "table" then
        refuse("`redis` is a table: { host = ..., port = ... }, { socket = ... } or { cluster = { ... } }")
    end
    known(r, REDIS_FIELDS, "a field of `redis`")
    local o = {
        timeout_ms = r.timeout_ms or 500,
        pool_size = r.pool_size or 100,
        idle_ms = r.idle_ms or 60000,
        password = r.password,
        username = r.username,
        database = r.database or 0,
    }
    for _, name in ipairs({ "timeout_ms", "pool_size", "idle_ms" }) do
        if not integer_in(o[name], 1, 2 ^ 31) then
            refuse("redis." .. name .. " is a positive integer: " .. tostring(o[name]))
        end
    end
    if not integer_in(o.database, 0, 2 ^ 31) then
        refuse("redis.database is an integer from 0: " .. tostring(o.database))
    end
    if r.cluster then
        if type(r.cluster) ~= "table" or #r.cluster == 0 then
            refuse("redis.cluster lists the seed nodes: { { host = ..., port = ... }, ... }")
        end
        for _, n in ipairs(r.cluster) do
            if type(n) ~= "table" or type(n.host) ~= "string" or not integer_in(n.port, 1, 65535) then
                refuse("each of redis.cluster is { host = ..., port = ... }")
            end
        end
        if o.database ~= 0 then
            refuse("a cluster has database 0 only")
        end
        o.cluster = r.cluster
    elseif r.socket then
        o.host = "unix:" .. r.socket
    else
        o.host, o.port = r.host or "127.0.0.1", r.port or 6379
        if type(o.host) ~= "string" or not integer_in(o.port, 1, 65535) then
            refuse("redis.host is a string and redis.port an integer from 1 to 65535")
        end
    end
    -- Connections are pooled per server and per login, never shared between two logins.
    o.pool_prefix = "rl:" .. (o.username or "") .. ":" .. (o.password and ngx.md5(o.password) or "")
        .. ":" .. o.database .. ":"
    o.pools = {} -- per server: its connect options (server.lua)
    return o
end

-- A layer's identity source: `"ip"` (the client's address, an IPv6 one by its subnet), an
-- nginx variable (`"$http_x_api_key"`), or a function returning the text. Empty or nil: the
-- layer does not apply to the request.
local function identify_by(by, name)
    if by == "ip" then
        return "ip"
    end
    if type(by) == "string" and by:match("^%$[%w_]+$") then
        return by:sub(2)
    end
    if type(by) == "function" then
        return by
    end
    refuse("layer '" .. name .. "': `by` is \"ip\", an nginx variable (\"$http_x_api_key\") or a function: "
        .. tostring(by))
end

-- A layer's policy: text parsed now (spelled out, or a policy's name on the server), or an
-- nginx variable / a function whose value is such text, parsed when a request is decided.
local function policy_of(p, name)
    if type(p) == "string" and p:match("^%$[%w_]+$") then
        return { variable = p:sub(2) }
    end
    if type(p) == "function" then
        return { call = p }
    end
    local parsed_policy, err = policy.parse(p)
    if not parsed_policy then
        refuse("layer '" .. name .. "': " .. err)
    end
    return { fixed = parsed_policy }
end

-- `opts` checked: a limiter's settings, or an error raised for a configuration it cannot run
-- (in init_by_lua, nginx then refuses to start: never unlimited). An option, a `redis` field
-- or a layer's field that is none of these is refused too, so that a misspelt `fail_open`
-- cannot pass unnoticed.
--   redis      { host, port } | { socket } | { cluster = { { host, port }, ... } }, with
--              password, username, database, timeout_ms (500), pool_size (100), idle_ms (60000)
--   layers     { { name, by, policy }, ... }
--   prefix     the start of every key ("rl")
--   tag        the name of the layer whose identity is the hash tag of every key (Cluster)
--   ipv6_bits  the subnet an IPv6 client is keyed by (56)
--   headers    set the binding layer's headers on admitted responses too (true; a 429 always has them)
--   shadow     let denials through, logged (false)
--   fail_open  let requests through, logged, when Redis cannot be reached (false: 503)
--   library    the Functions library's file (default: the one this package ships)
--   shared_dict the lua_shared_dict through which the workers load the library one at a time
--              (default none: one load at a time per worker)
--   denial_cache the lua_shared_dict in which the workers keep Redis's denials until their
--              wait ends, and deny from it without a call (default none: every request asks)
--   denial_cache_max_ms  at most this long a denial is kept (default none: all of its wait)
--   denial_cache_exhausted  keep an admission that left nothing too, as a denial until the
--              next unit is free (false: cache.lua's put_exhausted)
--   metrics    the lua_shared_dict in which the workers count decisions (default none)
--   insurance  { dict, nodes }: while Redis cannot decide, this node decides alone in the
--              lua_shared_dict `dict`, each policy divided by `nodes` (default none: off)
function _M.check(opts)
    if type(opts) ~= "table" then
        refuse("new() takes a table of options")
    end
    known(opts, OPTIONS, "an option")
    local layers = opts.layers
    if type(layers) ~= "table" or #layers == 0 then
        refuse("`layers` lists at least one { name = ..., by = ..., policy = ... }")
    end
    if #layers > facts.MAX_LAYERS then
        refuse("at most " .. facts.MAX_LAYERS .. " layers (one RL.ALL): " .. #layers)
    end
    local self = {
        o = connection(opts.redis),
        prefix = opts.prefix or "rl",
        ipv6_bits = opts.ipv6_bits or 56,
        shadow = opts.shadow == true,
        headers = opts.headers ~= false,
        fail_open = opts.fail_open == true,
        layers = {},
    }
    -- Each dict's name, as the limiter keeps it (`metrics` is also rl.lua's function).
    for _, names in ipairs({ { "shared_dict", "shared_dict" }, { "denial_cache", "denial_cache" },
                             { "metrics", "metrics_dict" } }) do
        local name, field = names[1], names[2]
        local dict = opts[name]
        if dict ~= nil then
            if type(dict) ~= "string" or not ngx.shared[dict] then
                refuse("`" .. name .. "` names a lua_shared_dict the configuration declares "
                    .. "(`lua_shared_dict rl 1m;` in `http`): '" .. tostring(dict) .. "' is none")
            end
            self[field] = dict
        end
    end
    if self.denial_cache and (self.denial_cache == self.metrics_dict or self.denial_cache == self.shared_dict) then
        refuse("`denial_cache` is a lua_shared_dict of its own: a flood fills it, and its least recently "
            .. "used entries make room, whatever else it holds")
    end
    if opts.insurance ~= nil then
        local ins = opts.insurance
        if type(ins) ~= "table" then
            refuse("`insurance` is a table: { dict = \"<lua_shared_dict>\", nodes = <the nodes sharing Redis> }")
        end
        known(ins, INSURANCE_FIELDS, "a field of `insurance`")
        if type(ins.dict) ~= "string" or not ngx.shared[ins.dict] then
            refuse("insurance.dict names a lua_shared_dict the configuration declares "
                .. "(`lua_shared_dict rl_insurance 1m;` in `http`): '" .. tostring(ins.dict) .. "' is none")
        end
        if ins.dict == self.denial_cache or ins.dict == self.metrics_dict or ins.dict == self.shared_dict then
            refuse("insurance.dict is a lua_shared_dict of its own: its windows and the other's entries "
                .. "would make room for each other")
        end
        if not integer_in(ins.nodes, 1, MAX_NODES) then
            refuse("insurance.nodes is the number of NGINX nodes sharing the Redis, an integer from 1 to "
                .. MAX_NODES .. ": " .. tostring(ins.nodes))
        end
        self.insurance = { dict = ins.dict, nodes = ins.nodes }
    end
    if opts.denial_cache_max_ms ~= nil then
        if not integer_in(opts.denial_cache_max_ms, 1, facts.MAX_DURATION_MS) then
            refuse("`denial_cache_max_ms` is an integer from 1 to "
                .. string.format("%.0f", facts.MAX_DURATION_MS) .. ": " .. tostring(opts.denial_cache_max_ms))
        end
        if not self.denial_cache then
            refuse("`denial_cache_max_ms` bounds the denial cache: name its lua_shared_dict in `denial_cache`")
        end
        self.denial_cache_max_ms = opts.denial_cache_max_ms
    end
    if opts.denial_cache_exhausted ~= nil then
        if type(opts.denial_cache_exhausted) ~= "boolean" then
            refuse("`denial_cache_exhausted` is true or false: " .. tostring(opts.denial_cache_exhausted))
        end
        if opts.denial_cache_exhausted and not self.denial_cache then
            refuse("`denial_cache_exhausted` keeps admissions in the denial cache: name its lua_shared_dict in "
                .. "`denial_cache`")
        end
        self.denial_cache_exhausted = opts.denial_cache_exhausted
    end
    if opts.library ~= nil and type(opts.library) ~= "string" then
        refuse("`library` is the path of the Functions library's file")
    end
    if type(self.prefix) ~= "string" then
        refuse("`prefix` is a string")
    end
    if not integer_in(self.ipv6_bits, 1, 128) then
        refuse("`ipv6_bits` is an integer from 1 to 128: " .. tostring(self.ipv6_bits))
    end
    for _, name in ipairs({ "shadow", "fail_open", "headers" }) do
        if opts[name] ~= nil and type(opts[name]) ~= "boolean" then
            refuse("`" .. name .. "` is true or false: " .. tostring(opts[name]))
        end
    end
    local seen = {}
    for i, layer in ipairs(layers) do
        local name = type(layer) == "table" and layer.name
        if type(name) ~= "string" or not name:match(LAYER_NAME) then
            refuse("layer " .. i .. ": `name` is 1 or more of A-Z, a-z, 0-9 and _ . -")
        end
        if seen[name] then
            refuse("layer names are distinct: '" .. name .. "' twice")
        end
        seen[name] = i
        known(layer, LAYER_FIELDS, "a field of layer '" .. name .. "'")
        self.layers[i] = { name = name, by = identify_by(layer.by, name), policy = policy_of(layer.policy, name) }
    end
    if opts.tag ~= nil then
        if not seen[opts.tag] then
            refuse("`tag` names a layer: '" .. tostring(opts.tag) .. "' is none of them")
        end
        if self.prefix:find("[{}]") then
            refuse("with a tag, the prefix holds no brace (the tag is the keys' hash tag)")
        end
        self.tag = seen[opts.tag]
    elseif self.o.cluster and #layers > 1 then
        refuse("on a cluster, `tag` names the layer whose identity puts a request's keys in one slot")
    end
    return self
end

return _M
