#!lua name=rl
--[==[
rl as a Redis Functions library: the rl module's commands, with its grammar, replies,
errors and stored state formats, for servers that cannot load modules (managed Redis
and Valkey). Load it with `FUNCTION LOAD REPLACE` (or `redis-cli -x FUNCTION LOAD
REPLACE < functions/rl.lua`) and call

  FCALL rl_gcra 1 key limit period [BURST b] [COST n | REFUND n | DEBIT n] [PEEK] [BLOCK ms]
    [PENALTY d [ESCALATE max]]
    (and rl_tokenbucket, rl_leaky, rl_sliding, rl_slidinglog, rl_fixed likewise;
    DEBIT is never denied and takes neither PEEK nor BLOCK)
  FCALL rl_all numkeys key [key ...] ALGO params [BURST b] [COST n | REFUND n | DEBIT n]
    [PENALTY d [ESCALATE max]] ... [PEEK]
  FCALL rl_ban 1 key ms      (RL.BAN: the key's penalty set by hand; 0 lifts it)
  FCALL rl_acquire 1 key limit timeout lease_id [PEEK] [BLOCK ms]
  FCALL rl_release 1 key lease_id
  FCALL cl_throttle 1 key max_burst count period [quantity]
  FCALL_RO rl_peek 1 key ALGO params [COST n]      (flag no-writes: replicas too)
  FCALL_RO rl_peek 1 key ACQUIRE limit timeout lease_id
  FCALL rl_limit 1 key policy [COST n | REFUND n | DEBIT n] [PEEK] [BLOCK ms]
  FCALL_RO rl_peek 1 key POLICY policy [COST n]
  FCALL_RO rl_policy 0 LIST | GET policy | DIGEST
    (named policies: written into this file by scripts/library-policies.py; rl_all
    takes POLICY policy [COST n | REFUND n | DEBIT n] clauses)

BLOCK is accepted and decides at once: a script cannot wait (a denial it would have
waited out starts no PENALTY). A penalty lives in its limiter's key, as the module
stores it: after a string state (`|penalty:<end>:<len>:<keep>`), as a key's whole
value, or as a sliding log's member scored -1.

Sections: exact integers; exact integers in doubles (the fast paths); the facts
shared with the module and the clients (the kinds, the bounds, the error texts:
generated from facts/rl.toml by scripts/generate-facts.py); errors and the grammar;
state on keys; the algorithms (a line-by-line port of src/algorithm/*.rs,
each with its fast path); penalties; the commands; RL.BAN; registration. Each is a file of
functions/parts/, which scripts/build-library.sh (make library) joins into this file:
edit the parts, not this file.

Invariants:
- Time is the server's TIME, in nanoseconds (microsecond resolution), read once per call.
- Integers are exact. A decision is first made in doubles (the fast path): instants as
  seconds and nanoseconds, every value below 9 * 10^15, products compared and divided
  through an exact two-term product. Whatever does not fit (periods or debts past about
  104 days, states or clocks past the year 2540, sliding windows past 2 * 10^9 ms) is
  decided again by the exact path: a Lua number below 2^53, a table of base-10^7 limbs
  above. No value beyond 2^53 is ever a rounded double, except CL.THROTTLE's emission
  interval, which redis-cell computes in doubles.
- Every call validates and decides everything before its first write, so an error
  reply never follows a partial write; a Lua runtime error becomes the module's
  `ERR internal error in RL.X: the request was not applied`.
- The library's heap stays small (Redis's garbage-collection steps walk all of it on
  every 50th call): at most 512 parsed requests and 64 parsed states are kept.
]==]

-- The named policies this library decides by (FCALL rl_limit, rl_peek's POLICY,
-- rl_all's POLICY clauses, rl_policy): a policy file's lines, each after its number
-- in the file, written in here by scripts/library-policies.py (the one line below,
-- replaced whole); none as built.
local POLICY_SOURCE, POLICY_LINES = nil, {}

-- Redis loads a library with only `redis` in scope (no string, math or table),
-- so everything is built on the first call, inside `build`.
local function build()
  local type, tonumber, assert, error = type, tonumber, assert, error
  local floor = math.floor
  local sub, find, fmt, upper, gsub = string.sub, string.find, string.format, string.upper, string.gsub
  local concat = table.concat

