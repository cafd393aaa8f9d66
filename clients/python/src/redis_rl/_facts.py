# generated from facts/rl.toml by scripts/generate-facts.py: do not edit
# ruff: noqa: E501
"""The facts this package shares with the module and the Functions library
(facts/rl.toml): the kinds, the per-call bounds, the duration units and the error texts.
"""

from __future__ import annotations

from typing import NamedTuple


class Kind(NamedTuple):
    """One algorithm: its `RL.ALL` word, command, label, stored tag, positional
    parameters and the Functions library's function."""

    algo: str
    command: str
    label: str
    tag: str
    params: tuple[str, ...]
    fcall: str


#: The algorithms, by their `RL.ALL` word.
KINDS: dict[str, Kind] = {
    'GCRA': Kind('GCRA', 'rl.gcra', 'RL.GCRA', 'gcra', ('limit', 'period',), 'rl_gcra'),
    'TOKENBUCKET': Kind('TOKENBUCKET', 'rl.tokenbucket', 'RL.TOKENBUCKET', 'bucket', ('capacity', 'refill', 'period',), 'rl_tokenbucket'),
    'LEAKY': Kind('LEAKY', 'rl.leaky', 'RL.LEAKY', 'leaky', ('capacity', 'leak', 'period',), 'rl_leaky'),
    'SLIDING': Kind('SLIDING', 'rl.sliding', 'RL.SLIDING', 'sliding', ('limit', 'window',), 'rl_sliding'),
    'SLIDINGLOG': Kind('SLIDINGLOG', 'rl.slidinglog', 'RL.SLIDINGLOG', 'slidinglog', ('limit', 'window',), 'rl_slidinglog'),
    'FIXED': Kind('FIXED', 'rl.fixed', 'RL.FIXED', 'fixed', ('limit', 'window',), 'rl_fixed'),
    'QUOTA': Kind('QUOTA', 'rl.quota', 'RL.QUOTA', 'quota', ('limit', 'unit',), 'rl_quota'),
}

MAX_COUNT = 1_000_000_000_000
MAX_COST = 1_000_000_000_000
MAX_DEBT = 1_000_000_000_000
MAX_DURATION_MS = 3650 * 86_400_000
MAX_LAYERS = 64
MAX_LEASE_ID = 256
MAX_POLICY_NAME = 64
MAX_POLICY_LINE = 1_024
MAX_POLICY_FILE = 16_777_216

#: A key's penalty (`PENALTY d`, `RL.BAN`): `<tag>:<end>:<len>:<keep>` (milliseconds), after
#: the separator in a string state (`gcra:<tat>|penalty:...`), alone in a key holding only
#: a penalty, or a sliding log's member scored `PENALTY_LOG_SCORE`.
PENALTY_TAG = 'penalty'
PENALTY_SEPARATOR = '|'
PENALTY_LOG_SCORE = -1

#: Each duration unit (case-insensitive) in milliseconds; `""` is a bare integer's.
DURATION_UNITS_MS: dict[str, int] = {
    '': 1_000,
    'ms': 1,
    's': 1_000,
    'm': 60_000,
    'h': 3_600_000,
    'd': 86_400_000,
}

#: The error replies, as `str.format` templates of their arguments.
ERRORS: dict[str, str] = {
    'wrong_arity': "ERR wrong number of arguments for '{command}' command",
    'bad_integer': 'ERR {name} must be an integer from {min} to {max}',
    'bad_duration': 'ERR {name} must be a duration from 1ms to 3650d: a positive integer with an optional unit ms, s, m, h or d (bare integers are seconds)',
    'unknown_option': "ERR unknown option '{option}' for '{command}' (expected {expected})",
    'unknown_clause_option': "ERR unknown option '{option}' in RL.ALL clause {clause} (expected {expected})",
    'repeated_option': 'ERR option {option} given more than once',
    'missing_value': 'ERR option {option} needs a value',
    'rate_too_high': 'ERR {rate} per {period} must be at most 1 per nanosecond: {period} / {rate} must be at least 1ns',
    'cost_with_refund': 'ERR COST and REFUND cannot be used together',
    'debit_with': 'ERR DEBIT cannot be used with {option}',
    'escalate_below_penalty': 'ERR ESCALATE max must be at least PENALTY d',
    'bad_unit': 'ERR unit must be DAY, WEEK or MONTH',
    'unknown_zone': "ERR unknown time zone '{zone}': expected UTC, an offset such as +05:30 or -08:00, or an IANA name such as Europe/Paris",
    'bad_anchor': 'ERR ANCHOR must be a local date and time yyyy-mm-ddThh:mm (such as 2001-01-15T00:00)',
    'clause_arity': 'ERR RL.ALL clause {algo} has too few parameters',
    'syntax': 'ERR {message}',
    'wrong_type': 'WRONGTYPE Operation against a key holding the wrong kind of value',
    'other_algorithm': 'ERR key holds {found} state, not {expected} state: use another key or DEL it',
    'foreign_value': 'ERR key holds a value that {label} did not write: use another key or DEL it',
    'unblocked': 'UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)',
    'oom': "OOM command not allowed when used memory > 'maxmemory'.",
    'shutting_down': 'UNBLOCKED the server is shutting down',
    'no_such_policy': "ERR no such policy '{name}'",
    'no_such_command': "ERR no such command '{name}' (RL.TOP COMMAND takes a limiter's command, e.g. rl.gcra)",
    'policy_reserved': "ERR the policy name '{name}' is reserved: INFO rl's field rl_policy_{name} is the module's own",
    'policy_name': 'ERR a policy name is 1 to {max} of A-Z, a-z, 0-9 and _ . : -',
    'policy_algorithm': "ERR policy '{name}' is {was}: DEL it before giving it another algorithm",
    'too_many_policies': 'ERR at most {max} policies (rl.max-policies)',
    'no_permission': "NOPERM this user has no permissions to run the '{command}' command",
    'policy_file': 'ERR policy file {file}: {problem}',
    'policy_file_line': 'ERR policy file {file} line {line}: {problem}',
    'no_policy_file': 'ERR no policy file: load the module with policy-file PATH',
    'internal': 'ERR internal error in {label}: the request was not applied',
}

#: Regular expressions matching each error's text after its code (redis-py strips
#: `ERR `), each argument a named group.
ERROR_PATTERNS: dict[str, str] = {
    'wrong_arity': "wrong number of arguments for '(?P<command>.*?)' command",
    'bad_integer': '(?P<name>.*?) must be an integer from (?P<min>.*?) to (?P<max>.*?)',
    'bad_duration': '(?P<name>.*?) must be a duration from 1ms to 3650d: a positive integer with an optional unit ms, s, m, h or d \\(bare integers are seconds\\)',
    'unknown_option': "unknown option '(?P<option>.*?)' for '(?P<command>.*?)' \\(expected (?P<expected>.*?)\\)",
    'unknown_clause_option': "unknown option '(?P<option>.*?)' in RL\\.ALL clause (?P<clause>.*?) \\(expected (?P<expected>.*?)\\)",
    'repeated_option': 'option (?P<option>.*?) given more than once',
    'missing_value': 'option (?P<option>.*?) needs a value',
    'rate_too_high': '(?P<rate>.*?) per (?P<period>.*?) must be at most 1 per nanosecond: (?P=period) \\/ (?P=rate) must be at least 1ns',
    'cost_with_refund': 'COST and REFUND cannot be used together',
    'debit_with': 'DEBIT cannot be used with (?P<option>.*?)',
    'escalate_below_penalty': 'ESCALATE max must be at least PENALTY d',
    'bad_unit': 'unit must be DAY, WEEK or MONTH',
    'unknown_zone': "unknown time zone '(?P<zone>.*?)': expected UTC, an offset such as \\+05:30 or -08:00, or an IANA name such as Europe\\/Paris",
    'bad_anchor': 'ANCHOR must be a local date and time yyyy-mm-ddThh:mm \\(such as 2001-01-15T00:00\\)',
    'clause_arity': 'RL\\.ALL clause (?P<algo>.*?) has too few parameters',
    'syntax': '(?P<message>.*?)',
    'wrong_type': 'Operation against a key holding the wrong kind of value',
    'other_algorithm': 'key holds (?P<found>.*?) state, not (?P<expected>.*?) state: use another key or DEL it',
    'foreign_value': 'key holds a value that (?P<label>.*?) did not write: use another key or DEL it',
    'unblocked': 'force unblock from blocking operation, instance state changed \\(master -> replica\\?\\)',
    'oom': "command not allowed when used memory > 'maxmemory'\\.",
    'shutting_down': 'the server is shutting down',
    'no_such_policy': "no such policy '(?P<name>.*?)'",
    'no_such_command': "no such command '(?P<name>.*?)' \\(RL\\.TOP COMMAND takes a limiter's command, e\\.g\\. rl\\.gcra\\)",
    'policy_reserved': "the policy name '(?P<name>.*?)' is reserved: INFO rl's field rl_policy_(?P=name) is the module's own",
    'policy_name': 'a policy name is 1 to (?P<max>.*?) of A-Z, a-z, 0-9 and _ \\. : -',
    'policy_algorithm': "policy '(?P<name>.*?)' is (?P<was>.*?): DEL it before giving it another algorithm",
    'too_many_policies': 'at most (?P<max>.*?) policies \\(rl\\.max-policies\\)',
    'no_permission': "this user has no permissions to run the '(?P<command>.*?)' command",
    'policy_file': 'policy file (?P<file>.*?): (?P<problem>.*?)',
    'policy_file_line': 'policy file (?P<file>.*?) line (?P<line>.*?): (?P<problem>.*?)',
    'no_policy_file': 'no policy file: load the module with policy-file PATH',
    'internal': 'internal error in (?P<label>.*?): the request was not applied',
}

#: The error codes (a reply's first word) that mean Redis cannot decide right now: a
#: middleware answers 503, or lets the request through with fail_open. Every other error
#: is a configuration error: 500.
UNAVAILABLE_CODES: frozenset[str] = frozenset({
    'LOADING',
    'BUSY',
    'MASTERDOWN',
    'CLUSTERDOWN',
    'TRYAGAIN',
    'OOM',
    'READONLY',
})

#: The `syntax` error's fixed texts (after `ERR `), by name.
MESSAGES: dict[str, str] = {
    'all_shape': 'RL.ALL needs numkeys keys followed by one algorithm clause per key',
    'all_algorithm': 'RL.ALL expects an algorithm after the keys: GCRA, TOKENBUCKET, LEAKY, SLIDING, SLIDINGLOG, FIXED or QUOTA',
    'all_clauses': 'RL.ALL needs exactly one algorithm clause per key',
    'all_distinct': 'RL.ALL keys must be distinct',
    'peek_algorithm': 'RL.PEEK expects an algorithm: GCRA, TOKENBUCKET, LEAKY, SLIDING, SLIDINGLOG, FIXED, QUOTA or ACQUIRE',
    'lease_id': 'lease_id must be 1 to 256 bytes',
    'throttle_zero_rate': 'count must be at most period * 10^9: period / count below 1 nanosecond is a zero rate',
    'policy_algorithm': 'RL.POLICY SET expects an algorithm after the name: GCRA, TOKENBUCKET, LEAKY, SLIDING, SLIDINGLOG, FIXED or QUOTA',
    'policy_line_long': 'a line is longer than 1024 bytes',
    'policy_long': "a policy's line (its name and definition, as RL.POLICY GET gives it) is at most 1024 bytes",
    'policy_file_large': 'larger than 16777216 bytes',
    'policy_file_not_regular': 'not a regular file',
    'policy_file_link': "a symbolic link: RL.POLICY SAVE replaces only a regular file (name the link's target in policy-file)",
    'policy_save_large': "the policies' lines come to more than 16777216 bytes, more than a policy file may hold: nothing was written",
    'policy_file_folder_sync': 'replaced, but its folder could not be flushed to disk',
    'policy_twice': 'a policy of this name is on an earlier line',
    'top_shape': 'syntax error: RL.TOP name [COUNT n] or RL.TOP COMMAND cmd [COUNT n]',
    'throttle_burst': 'max_burst is too large: (max_burst + 1) * period / count must be at most 3650 days',
}
