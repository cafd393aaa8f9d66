-- generated from facts/rl.toml by scripts/generate-facts.py: do not edit
-- The facts the NGINX package shares with the module, the library and the other
-- packages: the kinds, the per-call bounds it checks layers against, the duration units.
return {
  MAX_COUNT = 1000000000000,
  MAX_DURATION_MS = 315360000000,
  MAX_LAYERS = 64,
  MAX_POLICY_NAME = 64,
  -- Each duration unit in milliseconds, by its lower-case suffix ('' is a bare integer's).
  UNIT_MS = { [''] = 1000, ['ms'] = 1, ['s'] = 1000, ['m'] = 60000, ['h'] = 3600000, ['d'] = 86400000 },
  -- The algorithms, by their RL.ALL word: their positional parameters after the key.
  KINDS = {
    GCRA = { params = { 'limit', 'period' } },
    TOKENBUCKET = { params = { 'capacity', 'refill', 'period' } },
    LEAKY = { params = { 'capacity', 'leak', 'period' } },
    SLIDING = { params = { 'limit', 'window' } },
    SLIDINGLOG = { params = { 'limit', 'window' } },
    FIXED = { params = { 'limit', 'window' } },
  },
}
