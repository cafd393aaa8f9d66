-- The Redis protocol (RESP2) on a connection's socket: a command written in one send, and one
-- reply read in as few receives as the network allows (lua-resty-redis reads a reply line by
-- line, a receive per integer: RL.ALL's reply for three layers is 25 lines).
local ngx_null = ngx.null
local concat, find, sub, byte, tonumber, tostring = table.concat, string.find, string.sub, string.byte,
    tonumber, tostring

local _M = {}

-- `args` (strings or numbers) as one RESP array of bulk strings.
function _M.encode(args)
    local out = { "*", #args, "\r\n" }
    for _, a in ipairs(args) do
        a = tostring(a)
        out[#out + 1] = "$"
        out[#out + 1] = #a
        out[#out + 1] = "\r\n"
        out[#out + 1] = a
        out[#out + 1] = "\r\n"
    end
    return concat(out)
end

local PLUS, MINUS, COLON, DOLLAR, STAR = byte("+"), byte("-"), byte(":"), byte("$"), byte("*")

-- One value of `buf` from `at`: the value (an error reply is `false` and its text, as
-- lua-resty-redis gives it: only at the top), and where the next one starts; nil when `buf`
-- holds only part of it. Bulk strings are read by their length, CRLF inside them included.
local function parse(buf, at)
    local eol = find(buf, "\r\n", at, true)
    if not eol then
        return nil
    end
    local kind, line = byte(buf, at), sub(buf, at + 1, eol - 1)
    if kind == COLON then
        return tonumber(line), eol + 2
    elseif kind == PLUS then
        return line, eol + 2
    elseif kind == MINUS then
        return false, eol + 2, line
    elseif kind == DOLLAR then
        local n = tonumber(line)
        if n < 0 then
            return ngx_null, eol + 2
        end
        if #buf < eol + 3 + n then
            return nil
        end
        return sub(buf, eol + 2, eol + 1 + n), eol + 4 + n
    elseif kind == STAR then
        local n = tonumber(line)
        if n < 0 then
            return ngx_null, eol + 2
        end
        local out, next_at = {}, eol + 2
        for i = 1, n do
            local v, after = parse(buf, next_at)
            if after == nil then
                return nil
            end
            out[i], next_at = v, after
        end
        return out, next_at
    end
    error("not a Redis reply: " .. sub(buf, at, at + 40))
end

-- Reads one reply from `sock`: the value; or false and the error reply's text; or nil and the
-- socket's error (the connection is then unusable).
function _M.read(sock)
    local parts = {}
    while true do
        local data, err = sock:receiveany(65536)
        if not data then
            return nil, err
        end
        parts[#parts + 1] = data
        local buf = #parts == 1 and data or concat(parts)
        local ok, value, after, text = pcall(parse, buf, 1)
        if not ok then
            return nil, value
        end
        if after then
            if value == false then
                return false, text
            end
            return value
        end
    end
end

return _M
