-- One command to one Redis server over lua-resty-redis, on a pooled connection: every path
-- either puts the connection back in nginx's pool (a whole reply was read) or closes it.
--
-- lua-resty-redis is `resty.redis` in OpenResty and `nginx.redis` in Debian's
-- lua-nginx-redis package: whichever is there (OpenResty's first).
local found, redis = pcall(require, "resty.redis")
if not found then
    redis = require "nginx.redis"
end

local facts = require "resty.rl.facts"
local resp = require "resty.rl.resp"

local _M = { redis = redis }

-- What a command's outcome is, besides its reply: UNAVAILABLE (Redis cannot decide right now:
-- 503, or let through with fail_open) or REPLY (a configuration to fix: 500 whatever
-- fail_open says).
_M.UNAVAILABLE = "unavailable"
_M.REPLY = "reply"

-- The class of an error reply, by its code (its first word): facts.UNAVAILABLE's codes (loading
-- its data, busy with a script, no master or quorum, out of memory, a replica) are a server
-- that cannot decide now, as one out of reach is; any other is the configuration's.
function _M.class_of(err)
    return facts.UNAVAILABLE[tostring(err):match("^(%u+)")] and _M.UNAVAILABLE or _M.REPLY
end

-- The connect options of a server: its pool's name, made once per server and login (looked
-- up by host, then port: 0 for a Unix socket).
local function pool_of(o, host, port)
    local ports = o.pools[host]
    if not ports then
        ports = {}
        o.pools[host] = ports
    end
    local pool = ports[port or 0]
    if not pool then
        pool = { pool = o.pool_prefix .. (port and host .. ":" .. port or host) }
        ports[port or 0] = pool
    end
    return pool
end

local function connect(o, host, port)
    local red = redis:new()
    red:set_timeout(o.timeout_ms)
    local ok, err
    if port then
        ok, err = red:connect(host, port, pool_of(o, host, port))
    else
        ok, err = red:connect(host, pool_of(o, host))
    end
    if not ok then
        return nil, "connecting to " .. host .. (port and ":" .. port or "") .. ": " .. tostring(err)
    end
    if red:get_reused_times() == 0 then -- a new connection: log in, choose the database
        local setup = {}
        if o.password then
            setup[#setup + 1] = o.username and { "auth", o.username, o.password } or { "auth", o.password }
        end
        if o.database and o.database ~= 0 then
            setup[#setup + 1] = { "select", o.database }
        end
        for _, args in ipairs(setup) do
            local res, e = red[args[1]](red, unpack(args, 2))
            if not res then
                red:close()
                return nil, args[1] .. " refused: " .. tostring(e), res == false and _M.class_of(e)
            end
        end
    end
    return red
end

-- `args` sent on `red`, its reply read: lua-resty-redis connected it (pool, login, database);
-- the command goes on its socket in one send and the reply is read in as few receives as it
-- arrives in (resp.lua). A lua-resty-redis without its `_sock` field is asked as usual.
local function command(red, args)
    local sock = rawget(red, "_sock")
    if not sock then
        return red[args[1]](red, unpack(args, 2))
    end
    local sent, err = sock:send(resp.encode(args))
    if not sent then
        return nil, err
    end
    return resp.read(sock)
end

-- Sends `args` (a command and its arguments) to `host`:`port` (`port` nil: `host` is a Unix
-- socket, `unix:/path`), `asking` first when set (a cluster's ASK redirection). Returns the
-- reply, or nil, the error's text, UNAVAILABLE or REPLY, and true when the command was not
-- sent (no connection could be made or logged in). An AUTH or SELECT refused is classed by
-- its code as any error reply is (WRONGPASS: a configuration to fix, not a server out of reach).
function _M.call(o, host, port, args, asking)
    local red, err, class = connect(o, host, port)
    if not red then
        return nil, err, class or _M.UNAVAILABLE, true
    end
    if asking then
        local ok, e = command(red, { "ASKING" })
        if not ok then
            red:close()
            return nil, "ASKING: " .. tostring(e), ok == false and _M.class_of(e) or _M.UNAVAILABLE
        end
    end
    local res, e = command(red, args)
    if res == nil then -- nothing or part of a reply was read: the connection is unusable
        red:close()
        return nil, host .. (port and ":" .. port or "") .. ": " .. tostring(e), _M.UNAVAILABLE
    end
    red:set_keepalive(o.idle_ms, o.pool_size)
    if res == false then
        return nil, e, _M.class_of(e)
    end
    return res
end

return _M
