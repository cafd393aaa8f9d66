-- generated from facts/rl.toml by scripts/generate-facts.py: do not edit
-- The facts the NGINX package shares with the module, the library and the other
-- packages: the kinds, the per-call bounds it checks layers against, the duration units.
return {
  MAX_COUNT = 1000000000000,
  MAX_DURATION_MS = 315360000000,
  MAX_LAYERS = 64,
  MAX_POLICY_NAME = 64,
  -- rl.sliding-log-max-limit's default: the largest SLIDINGLOG limit (the library's
  -- bound; a module loaded with another setting holds its own).
  SLIDING_LOG_MAX_LIMIT = 100000,
  -- The server's text (after `ERR `) for a policy's PENALTY d ESCALATE max with max below d.
  ESCALATE_BELOW_PENALTY = 'ESCALATE max must be at least PENALTY d',
  -- The error codes (a reply's first word) that mean Redis cannot decide right now: 503,
  -- or fail_open. Every other error is a configuration error: 500.
  UNAVAILABLE = {
    LOADING = true,
    BUSY = true,
    MASTERDOWN = true,
    CLUSTERDOWN = true,
    TRYAGAIN = true,
    OOM = true,
    READONLY = true,
  },
  -- Each duration unit in milliseconds, by its lower-case suffix ('' is a bare integer's).
  UNIT_MS = { [''] = 1000, ['ms'] = 1, ['s'] = 1000, ['m'] = 60000, ['h'] = 3600000, ['d'] = 86400000 },
  -- The algorithms, by their RL.ALL word: their positional parameters after the key,
  -- their command and the Functions library's function.
  KINDS = {
    GCRA = { params = { 'limit', 'period' }, command = 'rl.gcra', fcall = 'rl_gcra' },
    TOKENBUCKET = { params = { 'capacity', 'refill', 'period' }, command = 'rl.tokenbucket', fcall = 'rl_tokenbucket' },
    LEAKY = { params = { 'capacity', 'leak', 'period' }, command = 'rl.leaky', fcall = 'rl_leaky' },
    SLIDING = { params = { 'limit', 'window' }, command = 'rl.sliding', fcall = 'rl_sliding' },
    SLIDINGLOG = { params = { 'limit', 'window' }, command = 'rl.slidinglog', fcall = 'rl_slidinglog' },
    FIXED = { params = { 'limit', 'window' }, command = 'rl.fixed', fcall = 'rl_fixed' },
    QUOTA = { params = { 'limit', 'unit' }, command = 'rl.quota', fcall = 'rl_quota' },
  },
}
