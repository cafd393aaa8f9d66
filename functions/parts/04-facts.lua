  -- generated from facts/rl.toml by scripts/generate-facts.py: do not edit
  --------------------------------------------------------------------------------
  -- The facts the library shares with the module and the client packages: the
  -- kinds, the per-call bounds, the duration units, the settings' defaults and the
  -- error texts (src/error.rs's, byte for byte).
  --------------------------------------------------------------------------------

  local MAX_COUNT = 1000000000000
  local MAX_COST = 1000000000000
  local MAX_DEBT = 1000000000000
  local MAX_DURATION_MS = 3650 * 86400000
  local MAX_LAYERS = 64
  local MAX_LEASE_ID = 256
  -- A key's penalty: its tag, the separator after a string state, its sliding-log score.
  local PENALTY = { tag = 'penalty', separator = '|', log_score = -1 }
  -- rl.sliding-log-max-limit's default (the library has no settings).
  local SLIDING_LOG_MAX = 100000
  -- The named policies' bounds (rl.max-policies: its default); 09-policies.lua adds
  -- the policies' functions to this table.
  local POLICY = { max_name = 64, max_count = 1000 }

  -- Each duration unit in milliseconds, by its upper-case suffix ('' is a bare integer's).
  local UNIT_MS = { [''] = 1000, ['MS'] = 1, ['S'] = 1000, ['M'] = 60000, ['H'] = 3600000, ['D'] = 86400000 }

  -- The algorithms, by their RL.ALL word: their command, label, stored tag, positional
  -- parameters and function.
  local KINDS = {
    GCRA = { command = 'rl.gcra', label = 'RL.GCRA', tag = 'gcra', params = { 'limit', 'period' }, fcall = 'rl_gcra' },
    TOKENBUCKET = { command = 'rl.tokenbucket', label = 'RL.TOKENBUCKET', tag = 'bucket', params = { 'capacity', 'refill', 'period' }, fcall = 'rl_tokenbucket' },
    LEAKY = { command = 'rl.leaky', label = 'RL.LEAKY', tag = 'leaky', params = { 'capacity', 'leak', 'period' }, fcall = 'rl_leaky' },
    SLIDING = { command = 'rl.sliding', label = 'RL.SLIDING', tag = 'sliding', params = { 'limit', 'window' }, fcall = 'rl_sliding' },
    SLIDINGLOG = { command = 'rl.slidinglog', label = 'RL.SLIDINGLOG', tag = 'slidinglog', params = { 'limit', 'window' }, fcall = 'rl_slidinglog' },
    FIXED = { command = 'rl.fixed', label = 'RL.FIXED', tag = 'fixed', params = { 'limit', 'window' }, fcall = 'rl_fixed' },
    QUOTA = { command = 'rl.quota', label = 'RL.QUOTA', tag = 'quota', params = { 'limit', 'unit' }, fcall = 'rl_quota' },
  }

  -- The error replies: a text, or a function of the text's arguments (in the order
  -- they first appear) returning it.
  local ERR = {
    wrong_arity = function(command) return fmt("ERR wrong number of arguments for '%s' command", command) end,
    bad_integer = function(name, min, max) return fmt('ERR %s must be an integer from %.0f to %.0f', name, min, max) end,
    bad_duration = function(name) return fmt('ERR %s must be a duration from 1ms to 3650d: a positive integer with an optional unit ms, s, m, h or d (bare integers are seconds)', name) end,
    unknown_option = function(option, command, expected) return fmt("ERR unknown option '%s' for '%s' (expected %s)", option, command, expected) end,
    unknown_clause_option = function(option, clause, expected) return fmt("ERR unknown option '%s' in RL.ALL clause %s (expected %s)", option, clause, expected) end,
    repeated_option = function(option) return fmt('ERR option %s given more than once', option) end,
    missing_value = function(option) return fmt('ERR option %s needs a value', option) end,
    rate_too_high = function(rate, period) return fmt('ERR %s per %s must be at most 1 per nanosecond: %s / %s must be at least 1ns', rate, period, period, rate) end,
    cost_with_refund = 'ERR COST and REFUND cannot be used together',
    debit_with = function(option) return fmt('ERR DEBIT cannot be used with %s', option) end,
    escalate_below_penalty = 'ERR ESCALATE max must be at least PENALTY d',
    bad_unit = 'ERR unit must be DAY, WEEK or MONTH',
    unknown_zone = function(zone) return fmt("ERR unknown time zone '%s': expected UTC, an offset such as +05:30 or -08:00, or an IANA name such as Europe/Paris", zone) end,
    bad_anchor = 'ERR ANCHOR must be a local date and time yyyy-mm-ddThh:mm (such as 2001-01-15T00:00)',
    clause_arity = function(algo) return fmt('ERR RL.ALL clause %s has too few parameters', algo) end,
    syntax = function(message) return fmt('ERR %s', message) end,
    wrong_type = 'WRONGTYPE Operation against a key holding the wrong kind of value',
    other_algorithm = function(found, expected) return fmt('ERR key holds %s state, not %s state: use another key or DEL it', found, expected) end,
    foreign_value = function(label) return fmt('ERR key holds a value that %s did not write: use another key or DEL it', label) end,
    unblocked = 'UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)',
    oom = "OOM command not allowed when used memory > 'maxmemory'.",
    shutting_down = 'UNBLOCKED the server is shutting down',
    no_such_policy = function(name) return fmt("ERR no such policy '%s'", name) end,
    no_such_command = function(name) return fmt("ERR no such command '%s' (RL.TOP COMMAND takes a limiter's command, e.g. rl.gcra)", name) end,
    policy_reserved = function(name) return fmt("ERR the policy name '%s' is reserved: INFO rl's field rl_policy_%s is the module's own", name, name) end,
    policy_name = function(max) return fmt('ERR a policy name is 1 to %.0f of A-Z, a-z, 0-9 and _ . : -', max) end,
    policy_algorithm = function(name, was) return fmt("ERR policy '%s' is %s: DEL it before giving it another algorithm", name, was) end,
    too_many_policies = function(max) return fmt('ERR at most %.0f policies (rl.max-policies)', max) end,
    no_permission = function(command) return fmt("NOPERM this user has no permissions to run the '%s' command", command) end,
    policy_file = function(file, problem) return fmt('ERR policy file %s: %s', file, problem) end,
    policy_file_line = function(file, line, problem) return fmt('ERR policy file %s line %.0f: %s', file, line, problem) end,
    no_policy_file = 'ERR no policy file: load the module with policy-file PATH',
    internal = function(label) return fmt('ERR internal error in %s: the request was not applied', label) end,
  }

  -- The syntax error's fixed replies, by name.
  local MSG = {
    all_shape = 'ERR RL.ALL needs numkeys keys followed by one algorithm clause per key',
    all_algorithm = 'ERR RL.ALL expects an algorithm after the keys: GCRA, TOKENBUCKET, LEAKY, SLIDING, SLIDINGLOG, FIXED or QUOTA',
    all_clauses = 'ERR RL.ALL needs exactly one algorithm clause per key',
    all_distinct = 'ERR RL.ALL keys must be distinct',
    peek_algorithm = 'ERR RL.PEEK expects an algorithm: GCRA, TOKENBUCKET, LEAKY, SLIDING, SLIDINGLOG, FIXED, QUOTA or ACQUIRE',
    lease_id = 'ERR lease_id must be 1 to 256 bytes',
    throttle_zero_rate = 'ERR count must be at most period * 10^9: period / count below 1 nanosecond is a zero rate',
    policy_algorithm = 'ERR RL.POLICY SET expects an algorithm after the name: GCRA, TOKENBUCKET, LEAKY, SLIDING, SLIDINGLOG, FIXED or QUOTA',
    policy_line_long = 'ERR a line is longer than 1024 bytes',
    policy_long = "ERR a policy's line (its name and definition, as RL.POLICY GET gives it) is at most 1024 bytes",
    policy_file_large = 'ERR larger than 16777216 bytes',
    policy_file_not_regular = 'ERR not a regular file',
    policy_file_link = "ERR a symbolic link: RL.POLICY SAVE replaces only a regular file (name the link's target in policy-file)",
    policy_save_large = "ERR the policies' lines come to more than 16777216 bytes, more than a policy file may hold: nothing was written",
    policy_file_folder_sync = 'ERR replaced, but its folder could not be flushed to disk',
    policy_twice = 'ERR a policy of this name is on an earlier line',
    top_shape = 'ERR syntax error: RL.TOP name [COUNT n] or RL.TOP COMMAND cmd [COUNT n]',
    throttle_burst = 'ERR max_burst is too large: (max_burst + 1) * period / count must be at most 3650 days',
  }
