-- Decisions counted per layer in a lua_shared_dict (docs/nginx.md, "Metrics"), so that every
-- worker adds to the same counters, and rendered in the Prometheus text exposition format
-- (version 0.0.4): one counter family, rl_decisions_total{layer,result}.
local ngx = ngx
local ipairs, sort, concat, tostring = ipairs, table.sort, table.concat, tostring

local _M = {}

-- What a request's decision was, each counted once per request under one layer.
_M.RESULTS = {
    "within_limit",                -- let through, every layer admitted
    "over_limit",                  -- 429, Redis denied
    "over_limit_with_local_cache", -- 429 from the denial cache, without a call
    "shadow_mode",                 -- let through although denied: a SHADOW policy, or `shadow = true`
    "unavailable_fail_open",       -- Redis could not decide, let through (fail_open)
    "unavailable",                 -- Redis could not decide, 503
    "insured_within_limit",        -- Redis could not decide, let through by this node's insurance
    "insured_over_limit",          -- Redis could not decide, 429 from this node's insurance
    "error",                       -- 500: a configuration to fix
}

local SEP = "\31" -- between a counter's layer and result in its dict key

-- Every layer's counters made (0) if missing: they are listed from the start, and a reload
-- (init_by_lua runs again) keeps the counts.
function _M.init(dict, layers)
    for _, layer in ipairs(layers) do
        for _, result in ipairs(_M.RESULTS) do
            dict:add(layer.name .. SEP .. result, 0)
        end
    end
end

function _M.count(dict, layer_name, result)
    local _, err = dict:incr(layer_name .. SEP .. result, 1, 0)
    if err then
        ngx.log(ngx.WARN, "rl: a decision was not counted: ", err)
    end
end

-- A label's value as the format writes it: backslash, double quote and line feed escaped.
local function label(text)
    return (text:gsub('[\\"\n]', { ["\\"] = "\\\\", ['"'] = '\\"', ["\n"] = "\\n" }))
end
_M.label = label

-- The counters of `dict` as the exposition format's text, sorted by layer and result.
function _M.render(dict)
    local rows = {}
    for _, key in ipairs(dict:get_keys(0)) do
        local layer, result = key:match("^(.*)" .. SEP .. "(.*)$")
        local value = layer and dict:get(key)
        if value then
            rows[#rows + 1] = { layer, result, value }
        end
    end
    sort(rows, function(a, b)
        if a[1] ~= b[1] then
            return a[1] < b[1]
        end
        return a[2] < b[2]
    end)
    local out = {
        "# HELP rl_decisions_total Requests decided by resty.rl, per layer and result (envoy ratelimit's names).",
        "# TYPE rl_decisions_total counter",
    }
    for _, row in ipairs(rows) do
        out[#out + 1] = 'rl_decisions_total{layer="' .. label(row[1]) .. '",result="' .. label(row[2]) .. '"} '
            .. string.format("%.0f", row[3])
    end
    return concat(out, "\n") .. "\n"
end

-- Answers the request with the counters of the lua_shared_dict named `name`.
function _M.serve(name)
    local dict = ngx.shared[name]
    if not dict then
        ngx.status = 500
        ngx.log(ngx.ERR, "rl: metrics: no lua_shared_dict named ", tostring(name))
        ngx.say("no lua_shared_dict named ", tostring(name))
        return ngx.exit(500)
    end
    local text = _M.render(dict)
    ngx.header["Content-Type"] = "text/plain; version=0.0.4; charset=utf-8"
    ngx.header["Content-Length"] = #text
    ngx.print(text)
    return ngx.exit(200)
end

return _M
