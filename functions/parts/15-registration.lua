  -- Each command: its body and its label (decision_command makes the limiters').
  return {
    decision = decision_command,
    kinds = KINDS,
    all = { all_body, 'RL.ALL' },
    limit = { POLICY.limit, 'RL.LIMIT' },
    policy = { POLICY.command, 'RL.POLICY' },
    peek = { peek_body, 'RL.PEEK' },
    throttle = { throttle_body, 'CL.THROTTLE' },
    acquire = { acquire_body, 'RL.ACQUIRE' },
    release = { release_body, 'RL.RELEASE' },
    ban = { ban_body, 'RL.BAN' },
    failed = failed,
    -- The exact integers, for tests (tests/functions_exact.rs registers a caller).
    ints = { big = big, str = str, add = add, sub = sub_, mul = mul, divmod = divmod, cmp = cmp },
    -- The exact products in doubles of the fast paths, for tests likewise.
    doubles = { mul_cmp = mul_cmp, muldiv = muldiv },
  }
end

--------------------------------------------------------------------------------
-- Registration (load time: no standard library, only `redis`).
--------------------------------------------------------------------------------

local api

-- The handler named `name`; the library is built on the first call. Every body
-- runs under pcall: an error becomes the reply `failed` gives.
local function handler(name, arg)
  local body, label, protected
  return function(keys, args)
    if not body then
      api = api or build()
      if name == 'decision' then
        body, label = api.decision(api.kinds[arg[1]], arg[2])
      else
        body, label = api[name][1], api[name][2]
      end
      protected = pcall
    end
    local ok, result = protected(body, keys, args)
    if ok then return result end
    return api.failed(label, result)
  end
end

redis.register_function('rl_gcra', handler('decision', { 'GCRA', 'rl_gcra' }))
redis.register_function('rl_tokenbucket', handler('decision', { 'TOKENBUCKET', 'rl_tokenbucket' }))
redis.register_function('rl_leaky', handler('decision', { 'LEAKY', 'rl_leaky' }))
redis.register_function('rl_sliding', handler('decision', { 'SLIDING', 'rl_sliding' }))
redis.register_function('rl_slidinglog', handler('decision', { 'SLIDINGLOG', 'rl_slidinglog' }))
redis.register_function('rl_fixed', handler('decision', { 'FIXED', 'rl_fixed' }))
redis.register_function('rl_quota', handler('decision', { 'QUOTA', 'rl_quota' }))
redis.register_function('rl_all', handler('all'))
redis.register_function('rl_limit', handler('limit'))
redis.register_function('cl_throttle', handler('throttle'))
redis.register_function('rl_acquire', handler('acquire'))
redis.register_function('rl_ban', handler('ban'))
-- RL.RELEASE is registered without deny-oom (it only frees): so is rl_release.
redis.register_function { function_name = 'rl_release', callback = handler('release'), flags = { 'allow-oom' } }
redis.register_function { function_name = 'rl_peek', callback = handler('peek'), flags = { 'no-writes' } }
redis.register_function { function_name = 'rl_policy', callback = handler('policy'), flags = { 'no-writes' } }
