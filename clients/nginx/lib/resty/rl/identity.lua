-- Whose counter a request spends from: the client's address (an IPv6 client by its subnet),
-- and the hash tag that puts a request's keys in one Redis Cluster slot.
local bit = require "bit"
local band, bor, lshift = bit.band, bit.bor, bit.lshift
local byte, format = string.byte, string.format

local _M = {}

local MAPPED = ("\0"):rep(10) .. "\255\255" -- ::ffff:a.b.c.d carries an IPv4 address

-- The key text of a client address given as nginx's `$binary_remote_addr` (4 or 16 bytes):
-- an IPv4 address itself (`192.0.2.1`); an IPv6 address its /`bits` network in RFC 5952 form
-- with the prefix length (`2001:db8:1::/56`, what the Python and Node packages write), since
-- every IPv6 customer holds at least a /64; an IPv4-mapped IPv6 address its IPv4 address.
-- Anything else (a Unix socket's client) is nil.
function _M.ip_key(binary, bits)
    if #binary == 16 and binary:sub(1, 12) == MAPPED then
        binary = binary:sub(13)
    end
    if #binary == 4 then
        local a, b, c, d = byte(binary, 1, 4)
        return a .. "." .. b .. "." .. c .. "." .. d
    end
    if #binary ~= 16 then
        return nil
    end
    local groups = {}
    for g = 1, 8 do
        local value = bor(lshift(byte(binary, 2 * g - 1), 8), byte(binary, 2 * g))
        local keep = bits - (g - 1) * 16 -- the bits of this group inside the prefix
        if keep <= 0 then
            value = 0
        elseif keep < 16 then
            value = band(value, lshift(0xffff, 16 - keep))
        end
        groups[g] = value
    end
    -- RFC 5952: the longest run of two or more zero groups (the first of equals) is `::`.
    local best_at, best_len, at, len = 0, 1, 0, 0
    for g = 1, 8 do
        if groups[g] == 0 then
            if len == 0 then
                at = g
            end
            len = len + 1
            if len > best_len then
                best_at, best_len = at, len
            end
        else
            len = 0
        end
    end
    local out = {}
    local g = 1
    while g <= 8 do
        if g == best_at then
            out[#out + 1] = (g == 1 and ":" or "") .. (g + best_len > 8 and ":" or "")
            g = g + best_len
        else
            out[#out + 1] = format("%x", groups[g])
            g = g + 1
        end
    end
    return table.concat(out, ":") .. "/" .. bits
end

-- The hash tag of a request whose tagged layer's identity is `identity`: `%`, `{` and `}`
-- escaped (`%25`, `%7B`, `%7D`), so it never holds a brace and two identities never share
-- one; `%none` when there is none (no escaped text is `%none`).
function _M.tag_text(identity)
    if not identity or identity == "" then
        return "%none"
    end
    return (identity:gsub("[%%{}]", function(c)
        return format("%%%02X", byte(c))
    end))
end

return _M
