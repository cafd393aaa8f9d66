-- rl's counters for redis_exporter's --script option (prometheus-redis-exporter 1.45 and later).
--
-- redis_exporter runs this script with EVAL on every scrape and exports each returned pair as
-- redis_script_values{key="<name>"} <value> (a gauge whose only label is `key`). Each name here
-- is `<metric>|<label>=<value>[|key=<key>]`; the relabelling in rl-scrape.yml turns it into
-- <metric>{<label>="<value>"[,key="<key>"]}, named and typed as redis_exporter names its own
-- series (`redis_` prefix, `_total` for counters):
--
--   redis_rl_calls_total{command}, redis_rl_admitted_total{command}, redis_rl_denied_total{command},
--   redis_rl_errors_total{command}, redis_rl_cost_admitted_total{command},
--   redis_rl_cost_denied_total{command}, redis_rl_near_limit_total{command}   (INFO rl)
--   redis_rl_waiting, redis_rl_waits_admitted_total, redis_rl_waits_timed_out_total,
--   redis_rl_policies, redis_rl_policy_digest_info{digest} 1
--   redis_rl_policy_calls_total{policy}, ..._admitted_total, ..._denied_total,
--   ..._shadow_denied_total, ..._errors_total, ..._penalties_total, ..._near_limit_total
--                                                                         (INFO rl_policies)
--   redis_rl_top_denials{policy|command,key}, redis_rl_top_overestimate{policy|command,key}
--                                                                         (RL.TOP, COUNT 10)
--
-- The counters clear with CONFIG RESETSTAT, as redis_exporter's redis_commands_total does
-- (Prometheus's rate() takes a reset as a counter reset). RL.TOP's estimates are gauges.
-- The script only reads: INFO and RL.TOP (read-only, per node).

-- luacheck: globals redis

local TOP_COUNT = 10

local out = {}
local function put(name, value)
    out[#out + 1] = name
    out[#out + 1] = tostring(value)
end

-- `name:k=v,k=v` lines of one INFO section, as { name = { k = v } }, in order.
local function section(name)
    local lines = {}
    for line in string.gmatch(redis.call("INFO", name), "[^\r\n]+") do
        local field, rest = string.match(line, "^([^#:][^:]*):(.*)$")
        if field then
            local values = {}
            for k, v in string.gmatch(rest, "([^,=]+)=([^,]*)") do
                values[k] = v
            end
            lines[#lines + 1] = { field = field, raw = rest, values = values }
        end
    end
    return lines
end

-- A command's INFO rl field, as it is registered (RL.TOP COMMAND takes that name).
local function command_name(field)
    if field == "throttle" then return "cl.throttle" end
    if field == "gcra_command" then return "gcra" end
    return "rl." .. field
end

local function top(label, value, args)
    local ok, entries = pcall(redis.call, "RL.TOP", unpack(args))
    if not ok or type(entries) ~= "table" then return end
    for _, e in ipairs(entries) do
        local series = label .. "=" .. value .. "|key=" .. e[1]
        put("redis_rl_top_denials|" .. series, e[2])
        put("redis_rl_top_overestimate|" .. series, e[3])
    end
end

local COMMAND_FIELDS = { "calls", "admitted", "denied", "errors", "cost_admitted", "cost_denied",
                         "near_limit" }
local POLICY_FIELDS = { "calls", "admitted", "denied", "shadow_denied", "errors", "penalties",
                        "near_limit" }

-- INFO rl: the rl_stats section (one line per command, the waits, the policies' number and
-- digest), then rl_policies (one line per policy, read below).
for _, line in ipairs(section("rl")) do
    local field = string.match(line.field, "^rl_(.*)$")
    if field == "waits" then
        put("redis_rl_waiting|", line.values.waiting or 0)
        put("redis_rl_waits_admitted_total|", line.values.admitted or 0)
        put("redis_rl_waits_timed_out_total|", line.values.timed_out or 0)
    elseif field == "policies" then
        put("redis_rl_policies|", line.raw)
    elseif field == "policy_digest" then
        put("redis_rl_policy_digest_info|digest=" .. line.raw, 1)
    elseif field and line.values.calls and not string.find(field, "^policy_") then
        local command = command_name(field)
        for _, k in ipairs(COMMAND_FIELDS) do
            if line.values[k] then
                put("redis_rl_" .. k .. "_total|command=" .. command, line.values[k])
            end
        end
        if field ~= "top" then
            top("command", command, { "COMMAND", command, "COUNT", TOP_COUNT })
        end
    end
end

for _, line in ipairs(section("rl_policies")) do
    local name = string.match(line.field, "^rl_policy_(.*)$")
    if name then
        name = string.gsub(name, "%%3A", ":")
        for _, k in ipairs(POLICY_FIELDS) do
            if line.values[k] then
                put("redis_rl_policy_" .. k .. "_total|policy=" .. name, line.values[k])
            end
        end
        top("policy", name, { name, "COUNT", TOP_COUNT })
    end
end

return out
