-- Redis Cluster routing, which lua-resty-redis does not do: a key's slot (CRC16 of its hash
-- tag), the slots' masters read from `CLUSTER SLOTS`, and the MOVED and ASK redirections.
-- The map is per nginx worker, read on first use and again after a MOVED or a node out of
-- reach.
local bit = require "bit"
local server = require "resty.rl.server"

local band, bxor, lshift, rshift = bit.band, bit.bxor, bit.lshift, bit.rshift
local byte = string.byte

local _M = {}

-- The CRC16 (XMODEM) table Redis Cluster hashes keys with.
local CRC = {}
for i = 0, 255 do
    local c = lshift(i, 8)
    for _ = 1, 8 do
        c = band(band(c, 0x8000) ~= 0 and bxor(lshift(c, 1), 0x1021) or lshift(c, 1), 0xffff)
    end
    CRC[i] = c
end

-- The slot of `key`: of its hash tag (the text between the first `{` and the next `}`) when
-- that is not empty, else of the whole key.
function _M.slot(key)
    local open = key:find("{", 1, true)
    if open then
        local close = key:find("}", open + 1, true)
        if close and close > open + 1 then
            key = key:sub(open + 1, close - 1)
        end
    end
    local crc = 0
    for i = 1, #key do
        crc = bxor(band(lshift(crc, 8), 0xffff), CRC[bxor(rshift(crc, 8), byte(key, i))])
    end
    return band(crc, 16383)
end

-- How many times one call is sent at most, across redirections and refreshed maps.
local ATTEMPTS = 4

local function address(text)
    local host, port = text:match("^(.*):(%d+)$")
    return host, tonumber(port)
end

-- Reads the slot map from the first node that answers (the seeds, then the masters known):
-- true, or nil, the last error and its kind (a node that refuses CLUSTER SLOTS, a server
-- without cluster support named as a seed, is a configuration to fix: server.REPLY).
local function refresh(o, state)
    local tried, last, last_kind = {}, "no node to ask", server.UNAVAILABLE
    local candidates = {}
    for _, n in ipairs(o.cluster) do
        candidates[#candidates + 1] = n.host .. ":" .. n.port
    end
    for _, n in pairs(state.masters or {}) do
        candidates[#candidates + 1] = n
    end
    for _, addr in ipairs(candidates) do
        if not tried[addr] then
            tried[addr] = true
            local host, port = address(addr)
            local res, err, kind = server.call(o, host, port, { "cluster", "slots" })
            if type(res) == "table" then
                local slots, masters = {}, {}
                for _, range in ipairs(res) do
                    local node = range[3]
                    local ip = (node[1] ~= "" and node[1] ~= ngx.null) and node[1] or host
                    local m = ip .. ":" .. node[2]
                    masters[m] = m
                    for s = range[1], range[2] do
                        slots[s] = m
                    end
                end
                state.slots, state.masters = slots, masters
                return true
            end
            last, last_kind = err or "CLUSTER SLOTS answered no slots", kind or server.UNAVAILABLE
        end
    end
    return nil, last, last_kind
end

-- Sends `args` to the master of `key`'s slot, following redirections: the reply, or nil,
-- the error's text and server.UNAVAILABLE or server.REPLY. A command is sent again only
-- when it cannot have run: after a redirection, or when no connection could be made; and
-- not once `timeout_ms` has passed, so a call takes at most about twice that.
function _M.call(o, state, key, args)
    local slot, asking, err, kind = _M.slot(key), nil, nil, nil
    local deadline = ngx.now() + o.timeout_ms / 1000
    for attempt = 1, ATTEMPTS do
        if attempt > 1 and ngx.now() >= deadline then
            break
        end
        if not state.slots then
            local ok, e, k = refresh(o, state)
            if not ok then
                return nil, "cluster slots: " .. tostring(e), k
            end
        end
        local target = asking or state.slots[slot]
        if not target then
            state.slots = nil
            err, kind = "slot " .. slot .. " is served by no node", server.UNAVAILABLE
        else
            local host, port = address(target)
            local res, unsent
            res, err, kind, unsent = server.call(o, host, port, args, asking ~= nil)
            asking = nil
            if res ~= nil then
                return res
            end
            local redirect, to = (err or ""):match("^(%u+) %d+ (%S+)$")
            if redirect == "MOVED" then -- the slots moved: read the map again, go where told
                if not refresh(o, state) then
                    state.slots = {}
                end
                state.slots[slot] = to
            elseif redirect == "ASK" then
                asking = to
            elseif unsent and kind == server.UNAVAILABLE then
                state.slots = nil -- a node gone: read the map again, try its successor
                ngx.sleep(0.05 * attempt)
            elseif err:match("^TRYAGAIN") or err:match("^CLUSTERDOWN") then
                state.slots = nil
                ngx.sleep(0.05 * attempt)
            else
                return nil, err, kind
            end
        end
    end
    return nil, err, kind
end

return _M
