-- Which side answers: the module's RL.ALL where the server has it, else the Functions
-- library's rl_all (FCALL), loaded where it is missing, as the Python and Node packages do.
--
-- A limiter starts on the module. A server that answers `unknown command` has no module:
-- from then on (per nginx worker) the limiter calls the library, and where the library is
-- missing (`Function not found`: never loaded, FUNCTION FLUSH, a failover to a server
-- without it) it loads the copy this package ships (FUNCTION LOAD REPLACE) on the server
-- that said so, one load at a time with a backoff after a failure (loader.lua), and calls
-- again, once.
local cluster = require "resty.rl.cluster"
local loader = require "resty.rl.loader"
local server = require "resty.rl.server"

local _M = { MODULE = "module", LIBRARY = "library" }

local default_text, default_missing -- the shipped library's text, read once per process

-- The library's text, or nil and why: the file `library` when given; else the one beside
-- this package, in the release package (`resty/rl/library.lua`) or in a checkout of the
-- repository (`functions/rl.lua`, five folders above `resty/rl/`). Read when a limiter is made
-- (in init_by_lua, by NGINX's master, before its workers drop their privileges), never while
-- a request waits.
function _M.library_text(library)
    if not library and (default_text or default_missing) then
        return default_text, default_missing
    end
    local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
    local paths = library and { library } or { here .. "/library.lua", here .. "/../../../../../functions/rl.lua" }
    local text, why
    for _, path in ipairs(paths) do
        local f = io.open(path, "rb")
        if f then
            text = f:read("*a")
            f:close()
            break
        end
    end
    if not text then
        why = "the Functions library is not at " .. table.concat(paths, " or ")
    end
    if not library then
        default_text, default_missing = text, why
    end
    return text, why
end

local function send(o, state, key, args)
    if o.cluster then
        return cluster.call(o, state, key, args)
    end
    return server.call(o, o.host, o.port, args)
end

-- `args` with a layer's `extra` words after its own (`COST 3`, `REFUND 3`), if it has any.
local function with_extra(args, layer)
    local extra = layer.extra
    if extra then
        for _, word in ipairs(extra) do
            args[#args + 1] = word
        end
    end
    return args
end

-- The module's call for `layers` (rl.lua's { key, policy, extra }, in order): one layer by its
-- own command (`RL.GCRA key params`, `RL.LIMIT key name`), whose reply is its five integers;
-- several by `RL.ALL`, whose reply adds every layer's.
local function module_call(layers)
    local n = #layers
    if n == 1 then
        local p = layers[1].policy
        return with_extra({ p.command, layers[1].key, unpack(p.args) }, layers[1])
    end
    local args = { "RL.ALL", n }
    for i = 1, n do
        args[2 + i] = layers[i].key
    end
    for _, l in ipairs(layers) do
        for _, word in ipairs(l.policy.clause) do
            args[#args + 1] = word
        end
        with_extra(args, l)
    end
    return args
end

-- The library's: `FCALL rl_<algo> 1 key params`, `FCALL rl_limit 1 key name`, or
-- `FCALL rl_all n keys clauses`.
local function library_call(layers)
    if #layers == 1 then
        local p = layers[1].policy
        return with_extra({ "FCALL", p.fcall, 1, layers[1].key, unpack(p.args) }, layers[1])
    end
    local args = module_call(layers)
    args[1], args[2] = "FCALL", "rl_all"
    table.insert(args, 3, #layers)
    return args
end

-- The command of `what` (a request's layers) for the module, or for the library.
local function layers_call(layers, library)
    if library then
        return library_call(layers)
    end
    return module_call(layers)
end

-- `RL.BAN key ms`, `FCALL rl_ban 1 key ms`; `what` is { key, ms (text) }.
local function ban_call(what, library)
    if library then
        return { "FCALL", "rl_ban", 1, what[1], what[2] }
    end
    return { "RL.BAN", what[1], what[2] }
end

-- Sends `build(what, library)` (the module's command, or with `library` true the library's)
-- to the node of `key`: the reply, or nil, the error's text and server.UNAVAILABLE or
-- server.REPLY.
local function call(o, state, key, build, what)
    if state.backend ~= _M.LIBRARY then
        local res, err, kind = send(o, state, key, build(what, false))
        if res ~= nil or not err:lower():match("^err unknown command") then
            if res ~= nil or kind == server.REPLY then
                state.backend = _M.MODULE
            end
            return res, err, kind
        end
        state.backend = _M.LIBRARY
    end
    local args = build(what, true)
    local sent = ngx.now()
    local res, err, kind = send(o, state, key, args)
    if res == nil and kind == server.REPLY and err:lower():match("function not found") then
        if not o.library_text then
            return nil, o.library_missing, server.REPLY
        end
        local ready, e, k = loader.ensure(o, o.gate, state.where, sent, function(load)
            return send(o, state, key, load)
        end)
        if not ready then
            return nil, e, k
        end
        res, err, kind = send(o, state, key, args)
    end
    return res, err, kind
end

-- Decides `layers`: the reply, or nil, the error's text and server.UNAVAILABLE or
-- server.REPLY. Every key is in the first's slot (a cluster routes by it).
function _M.decide(o, state, layers)
    return call(o, state, layers[1].key, layers_call, layers)
end

-- `RL.BAN key ms` (`ms` as text): 1 if the key existed, else 0; or nil, the error's text and
-- server.UNAVAILABLE or server.REPLY.
function _M.ban(o, state, key, ms)
    return call(o, state, key, ban_call, { key, ms })
end

return _M
