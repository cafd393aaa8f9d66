//! The test vectors: scenarios in `tests/vectors/*.txt`, written once in module
//! command words, read here and run on either backend (the module, or the same
//! lines as `FCALL` through the Functions library). The format is described in
//! CONTRIBUTING.md ("Test vectors") and at the top of every file.

use super::backend::Backend;
use super::{error_text, manifest_dir, now_ms, run, Value};

/// A scenario: a `== title` line and the lines under it, run in order on fresh keys.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// `file.txt:line` of its title.
    pub place: String,
    pub title: String,
    pub steps: Vec<Step>,
}

/// One command line, with what it must reply (`None`: not checked) as written
/// after ` -> ` and as parsed.
#[derive(Clone, Debug)]
pub struct Step {
    pub place: String,
    pub words: Vec<Vec<u8>>,
    pub expect: Option<(String, Expect)>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Expect {
    /// `(error) TEXT`: an error reply, `CODE message`, exactly.
    Error(String),
    /// `(nil)`.
    Nil,
    /// `"text"`: a bulk or simple string.
    Text(Vec<u8>),
    /// `[ ... ]`, or several items on a line: an array.
    Array(Vec<Expect>),
    Int(Int),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Int {
    /// `N`
    Exact(i64),
    /// `*`: any integer.
    Any,
    /// `A..B`, inclusive.
    Range(i64, i64),
    /// `~N`: `N`, or less by at most the time elapsed since the scenario began
    /// (in the reply's unit: seconds for `CL.THROTTLE`).
    Elapsed(i64),
    /// `@W` or `@W+D`: the milliseconds from the call to the end of the current
    /// window of length `W` counted from the epoch, plus `D`.
    WindowEnd { window_ms: i64, plus_ms: i64 },
}

/// The time of one call, as the test saw it (ms since the epoch).
#[derive(Clone, Copy, Debug)]
pub struct Span {
    /// When the scenario began (before its keys were prepared).
    pub start_ms: i64,
    /// Just before the call was sent, rounded down.
    pub before_ms: i64,
    /// Just after its reply came back, rounded up.
    pub after_ms: i64,
}

/// Every scenario of every file in `tests/vectors`, in file name order.
pub fn load() -> Vec<Scenario> {
    let dir = manifest_dir().join("tests/vectors");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no vector file in {}", dir.display());
    let mut all = vec![];
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&path).expect("read a vector file");
        let scenarios = parse(&name, &text);
        let checked: usize = scenarios.iter().map(Scenario::checked).sum();
        assert!(checked > 0, "{name} checks no reply");
        all.extend(scenarios);
    }
    all
}

impl Scenario {
    /// How many of its lines have an expected reply.
    pub fn checked(&self) -> usize {
        self.steps.iter().filter(|s| s.expect.is_some()).count()
    }
}

/// Parses one file's text; panics at the first malformed line, naming it.
pub fn parse(name: &str, text: &str) -> Vec<Scenario> {
    let mut scenarios: Vec<Scenario> = vec![];
    for (i, raw) in text.lines().enumerate() {
        let place = format!("{name}:{}", i + 1);
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(title) = line.strip_prefix("==") {
            if let Some(last) = scenarios.last() {
                assert!(!last.steps.is_empty(), "{}: an empty scenario", last.place);
            }
            scenarios.push(Scenario {
                place,
                title: title.trim().to_string(),
                steps: vec![],
            });
            continue;
        }
        let (command, expect) = match line.split_once(" -> ") {
            Some((c, e)) => (c, Some(e.trim())),
            None => (line, None),
        };
        let words: Vec<Vec<u8>> = command
            .split_whitespace()
            .map(|w| word(w).unwrap_or_else(|e| panic!("{place}: {e}")))
            .collect();
        // A reply not set off by spaces would be sent as arguments, and never checked.
        assert!(
            !words.iter().any(|w| w.windows(2).any(|p| p == b"->")),
            "{place}: write ` -> ` (with a space on each side) before the reply"
        );
        let expect = expect.map(|e| {
            let parsed = expectation(e).unwrap_or_else(|why| panic!("{place}: {why}"));
            (e.to_string(), parsed)
        });
        let scenario = scenarios
            .last_mut()
            .unwrap_or_else(|| panic!("{place}: a command before the first `== title`"));
        scenario.steps.push(Step {
            place,
            words,
            expect,
        });
    }
    if let Some(last) = scenarios.last() {
        assert!(!last.steps.is_empty(), "{}: an empty scenario", last.place);
    }
    scenarios
}

/// A word's bytes: `""` is the empty word, `\xHH` a byte.
fn word(w: &str) -> Result<Vec<u8>, String> {
    if w == "\"\"" {
        return Ok(vec![]);
    }
    unescape(w)
}

fn unescape(w: &str) -> Result<Vec<u8>, String> {
    let (mut out, b) = (vec![], w.as_bytes());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && b.get(i + 1) == Some(&b'x') {
            let hex = w.get(i + 2..i + 4).ok_or(format!("bad escape in {w}"))?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| format!("bad escape in {w}"))?);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Ok(out)
}

/// What follows ` -> `.
fn expectation(text: &str) -> Result<Expect, String> {
    if let Some(error) = text.strip_prefix("(error)") {
        return Ok(Expect::Error(error.trim().to_string()));
    }
    // Tokens: `[`, `]`, "quoted text" (spaces allowed), and words.
    let (mut tokens, mut rest) = (vec![], text.trim());
    while !rest.is_empty() {
        let (token, tail) = if rest.starts_with(['[', ']']) {
            rest.split_at(1)
        } else if let Some(quoted) = rest.strip_prefix('"') {
            let end = quoted.find('"').ok_or("an unclosed \"")?;
            rest.split_at(end + 2)
        } else {
            rest.split_at(rest.find([' ', '[', ']']).unwrap_or(rest.len()))
        };
        tokens.push(token);
        rest = tail.trim_start();
    }
    let mut items = vec![];
    let mut pos = 0;
    while pos < tokens.len() {
        items.push(item(&tokens, &mut pos)?);
    }
    match items.len() {
        0 => Err("an empty expectation".into()),
        1 => Ok(items.pop().unwrap()),
        _ => Ok(Expect::Array(items)),
    }
}

fn item(tokens: &[&str], pos: &mut usize) -> Result<Expect, String> {
    let token = tokens[*pos];
    *pos += 1;
    match token {
        "[" => {
            let mut items = vec![];
            while tokens.get(*pos) != Some(&"]") {
                if *pos >= tokens.len() {
                    return Err("an unclosed [".into());
                }
                items.push(item(tokens, pos)?);
            }
            *pos += 1;
            Ok(Expect::Array(items))
        }
        "]" => Err("an unopened ]".into()),
        "(nil)" => Ok(Expect::Nil),
        "*" => Ok(Expect::Int(Int::Any)),
        t if t.starts_with('"') => Ok(Expect::Text(unescape(&t[1..t.len() - 1])?)),
        t if t.starts_with('~') => Ok(Expect::Int(Int::Elapsed(integer(&t[1..])?))),
        t if t.starts_with('@') => {
            let (window, plus) = t[1..].split_once('+').unwrap_or((&t[1..], "0ms"));
            Ok(Expect::Int(Int::WindowEnd {
                window_ms: duration_ms(window)?,
                plus_ms: duration_ms(plus)?,
            }))
        }
        t => match t.split_once("..") {
            Some((a, b)) => Ok(Expect::Int(Int::Range(integer(a)?, integer(b)?))),
            None => Ok(Expect::Int(Int::Exact(integer(t)?))),
        },
    }
}

fn integer(t: &str) -> Result<i64, String> {
    t.parse().map_err(|_| format!("{t:?} is not an integer"))
}

/// `1500ms`, `90s`, `2m`, `1h`, `3650d`; a bare number is milliseconds.
fn duration_ms(t: &str) -> Result<i64, String> {
    let digits = t.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = match &t[digits.len()..] {
        "" | "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        other => return Err(format!("unknown unit {other:?} in {t:?}")),
    };
    Ok(integer(digits)? * unit)
}

/// The words with the key placeholders `K`, `K2` … `K9` named `<prefix>:1` … `<prefix>:9`.
pub fn keyed(words: &[Vec<u8>], prefix: &str) -> Vec<Vec<u8>> {
    words
        .iter()
        .map(|w| match key_index(w) {
            Some(n) => format!("{prefix}:{n}").into_bytes(),
            None => w.clone(),
        })
        .collect()
}

fn key_index(w: &[u8]) -> Option<u8> {
    match w {
        b"K" => Some(1),
        [b'K', d @ b'2'..=b'9'] => Some(d - b'0'),
        _ => None,
    }
}

/// The keys a scenario may use, as [`keyed`] names them.
pub fn keys(prefix: &str) -> Vec<String> {
    (1..=9).map(|n| format!("{prefix}:{n}")).collect()
}

/// What every scenario starts from, on both backends alike: `K4` holds the string
/// `hello`, `K5` a sliding log in the legacy format (one bare `<ns>` member per
/// unit, as older modules wrote) with 100 lapsed entries and 3 live ones, a second
/// old; the other keys are absent.
pub fn prepare(c: &mut redis::Connection, prefix: &str, start_ms: i64) {
    let now_ns = start_ms as u64 * 1_000_000;
    let _: () = run(c, &format!("SET {prefix}:4 hello"));
    let mut zadd = redis::cmd("ZADD");
    zadd.arg(format!("{prefix}:5"));
    let lapsed = (0..100u64).map(|i| now_ns - 7_200_000_000_000 + i * 1_000);
    let live = (0..3u64).map(|j| now_ns - 1_000_000_000 + j);
    for ns in lapsed.chain(live) {
        zadd.arg(ns / 1_000).arg(ns);
    }
    let _: i64 = zadd.query(c).unwrap();
}

/// True for the commands the backends provide (`RL.*`, `CL.*`); any other line
/// (`EXISTS`, `GET`, `SET` …) is sent to the server as it is.
pub fn is_limiter(words: &[Vec<u8>]) -> bool {
    let name = words[0].to_ascii_uppercase();
    name.starts_with(b"RL.") || name.starts_with(b"CL.")
}

/// Sends a line (already keyed) through `backend`; the reply or the error text.
pub fn send(
    backend: Backend,
    c: &mut redis::Connection,
    words: &[Vec<u8>],
) -> Result<Value, String> {
    let cmd = if is_limiter(words) {
        backend.cmd_args(words)
    } else {
        Backend::Module.cmd_args(words)
    };
    cmd.query::<Value>(c).map_err(|e| error_text(&e))
}

/// Sends a line and times it.
pub fn call(
    backend: Backend,
    c: &mut redis::Connection,
    words: &[Vec<u8>],
    start_ms: i64,
) -> (Result<Value, String>, Span) {
    let before_ms = now_ms();
    let reply = send(backend, c, words);
    let after_ms = now_ms() + 1;
    let span = Span {
        start_ms,
        before_ms,
        after_ms,
    };
    (reply, span)
}

/// The unit of a command's times in milliseconds: `CL.THROTTLE` replies in seconds.
fn unit_ms(words: &[Vec<u8>]) -> i64 {
    match words[0].eq_ignore_ascii_case(b"CL.THROTTLE") {
        true => 1_000,
        false => 1,
    }
}

/// Whether the reply to `step` (timed by `span`) is the one it expects, if it
/// expects one; else a message naming the line, the command, what was expected and
/// what came, in the files' notation.
pub fn check(step: &Step, reply: &Result<Value, String>, span: Span) -> Result<(), String> {
    let Some((text, expect)) = &step.expect else {
        return Ok(());
    };
    let ok = match (expect, reply) {
        (Expect::Error(text), Err(e)) => text == e,
        (_, Err(_)) | (Expect::Error(_), Ok(_)) => false,
        (e, Ok(v)) => matches(e, v, span, unit_ms(&step.words)),
    };
    let found = match reply {
        Ok(Value::Array(items)) => items.iter().map(written).collect::<Vec<_>>().join(" "),
        Ok(v) => written(v),
        Err(e) => format!("(error) {e}"),
    };
    match ok {
        true => Ok(()),
        false => Err(format!(
            "{} {} -> {text}\n    got: {found}",
            step.place,
            self::text(&step.words)
        )),
    }
}

/// A reply in the files' notation.
fn written(v: &Value) -> String {
    match v {
        Value::Int(i) => i.to_string(),
        Value::Nil => "(nil)".into(),
        Value::Okay => "\"OK\"".into(),
        Value::SimpleString(s) => format!("{s:?}"),
        Value::BulkString(b) => format!("{:?}", String::from_utf8_lossy(b)),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(written).collect();
            format!("[{}]", items.join(" "))
        }
        other => format!("{other:?}"),
    }
}

fn matches(expect: &Expect, value: &Value, span: Span, unit: i64) -> bool {
    match (expect, value) {
        (Expect::Nil, Value::Nil) => true,
        (Expect::Text(t), Value::BulkString(b)) => t == b,
        (Expect::Text(t), Value::SimpleString(s)) => t == s.as_bytes(),
        (Expect::Text(t), Value::Okay) => t == b"OK",
        (Expect::Array(items), Value::Array(values)) => {
            items.len() == values.len()
                && items
                    .iter()
                    .zip(values)
                    .all(|(e, v)| matches(e, v, span, unit))
        }
        (Expect::Int(pattern), Value::Int(i)) => int_matches(pattern, *i, span, unit),
        _ => false,
    }
}

fn int_matches(pattern: &Int, v: i64, span: Span, unit: i64) -> bool {
    match *pattern {
        Int::Exact(n) => v == n,
        Int::Any => true,
        Int::Range(a, b) => (a..=b).contains(&v),
        Int::Elapsed(n) => {
            // In the reply's unit, rounded up as the replies round.
            let elapsed = (span.after_ms - span.start_ms + unit - 1) / unit;
            (n - elapsed..=n).contains(&v)
        }
        Int::WindowEnd { window_ms, plus_ms } => {
            // The server read its clock between `before` and `after`; a window
            // may have ended in between.
            let end = |t: i64| (t.div_euclid(window_ms) + 1) * window_ms + plus_ms;
            [end(span.before_ms), end(span.after_ms)]
                .iter()
                .any(|e| (e - span.after_ms..=e - span.before_ms).contains(&(v * unit)))
        }
    }
}

/// Words as text, for messages.
pub fn text(words: &[Vec<u8>]) -> String {
    let words: Vec<String> = words
        .iter()
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    words.join(" ")
}

/// What a run of scenarios found.
#[derive(Debug, Default)]
pub struct Report {
    pub scenarios: usize,
    pub lines: usize,
    pub checked: usize,
    /// One line per mismatch: where, the command, what was expected and found.
    pub failures: Vec<String>,
}

/// Runs every scenario through `backend`, each on its own keys (`<tag>.<n>:1` …),
/// prepared by [`prepare`], and checks every expected reply. A mismatch is
/// recorded and the scenario goes on.
pub fn run_all(
    backend: Backend,
    c: &mut redis::Connection,
    scenarios: &[Scenario],
    tag: &str,
) -> Report {
    let mut report = Report::default();
    for (n, scenario) in scenarios.iter().enumerate() {
        let prefix = format!("{tag}.{n}");
        let start_ms = now_ms();
        prepare(c, &prefix, start_ms);
        report.scenarios += 1;
        for step in &scenario.steps {
            let words = keyed(&step.words, &prefix);
            let (reply, span) = call(backend, c, &words, start_ms);
            report.lines += 1;
            report.checked += usize::from(step.expect.is_some());
            if let Err(why) = check(step, &reply, span) {
                report.failures.push(why);
            }
        }
    }
    report
}
