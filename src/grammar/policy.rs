//! Named policies: a name (`[A-Za-z0-9_.:-]`, 1 to `MAX_POLICY_NAME`), a
//! definition `ALGO params [BURST b] [SHADOW]` (what an `RL.ALL` clause takes,
//! without `COST`), `RL.LIMIT`'s options after the policy's name, and the
//! amount of a `POLICY` clause and of `RL.PEEK POLICY`.

use super::amount::{Amount, Charge};
use super::block::parse_block;
use super::form::{parse_form, Form, Request};
use super::limiter::Limiter;
use super::scalars::set_once;
use super::Kind;
use crate::algorithm::penalty::Rule;
use crate::config::Caps;
use crate::error::{sanitize, RlError};
use crate::facts::{messages, MAX_POLICY_NAME};
use crate::units::Millis;

/// A policy's definition, parsed: its algorithm with valid parameters, and
/// whether it is shadowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Definition {
    pub kind: Kind,
    pub limiter: Limiter,
    pub shadow: bool,
    /// `PENALTY d [ESCALATE max]`, if the policy has one.
    pub penalty: Option<Rule>,
}

impl Definition {
    /// A request of `cost` units by this policy, counted as `charge` says
    /// (no `PEEK` or `BLOCK`).
    pub fn request(&self, cost: u64, charge: Charge) -> Request {
        Request {
            limiter: self.limiter,
            cost,
            charge,
            peek: false,
            block: None,
            penalty: self.penalty,
        }
    }
}

/// `name` if it is a valid policy name.
pub fn policy_name(name: &[u8]) -> Result<&str, RlError> {
    let valid = |b: &u8| b.is_ascii_alphanumeric() || b"_.:-".contains(b);
    match (1..=MAX_POLICY_NAME).contains(&name.len()) && name.iter().all(valid) {
        true => Ok(std::str::from_utf8(name).expect("ASCII")),
        false => Err(RlError::PolicyName(MAX_POLICY_NAME)),
    }
}

/// Parses `ALGO params [BURST b] [SHADOW]` (the words after a policy's name;
/// options in any order after the parameters) under `caps`.
pub fn parse_definition(words: &[&[u8]], caps: Caps) -> Result<Definition, RlError> {
    let algorithm = || RlError::Syntax(messages::POLICY_ALGORITHM);
    let (&algo, params) = words.split_first().ok_or_else(algorithm)?;
    let kind = Kind::ALL
        .into_iter()
        .find(|k| algo.eq_ignore_ascii_case(k.tag_upper().as_bytes()))
        .ok_or_else(algorithm)?;
    let positionals = kind.positionals().len().min(params.len());
    let mut shadow = false;
    let mut rest: Vec<&[u8]> = params[..positionals].to_vec();
    for &word in &params[positionals..] {
        if word.eq_ignore_ascii_case(b"SHADOW") {
            if shadow {
                return Err(RlError::RepeatedOption("SHADOW"));
            }
            shadow = true;
        } else {
            rest.push(word);
        }
    }
    let request = parse_form(kind, &rest, caps, Form::Policy)?;
    Ok(Definition {
        kind,
        limiter: request.limiter,
        shadow,
        penalty: request.penalty,
    })
}

/// The definition's words as a policy file holds them: the algorithm's word
/// and options in capitals, the parameters as given.
pub fn canonical(words: &[&[u8]]) -> String {
    let mut text = String::new();
    for (i, word) in words.iter().enumerate() {
        if i > 0 {
            text.push(' ');
        }
        let word = String::from_utf8_lossy(word);
        let upper = word.to_ascii_uppercase();
        let keyword =
            i == 0 || ["BURST", "SHADOW", "PENALTY", "ESCALATE"].contains(&upper.as_str());
        text.push_str(if keyword { &upper } else { &word });
    }
    text
}

/// `RL.LIMIT`'s options after the policy's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LimitOptions {
    /// Units to consume, give back or charge, as `charge` says.
    pub cost: u64,
    pub charge: Charge,
    pub peek: bool,
    /// `BLOCK ms`, if given.
    pub block: Option<Millis>,
}

/// Parses `[COST n | REFUND n | DEBIT n] [PEEK] [BLOCK ms]`, left to right.
pub fn parse_limit_options(options: &[&[u8]]) -> Result<LimitOptions, RlError> {
    let (mut amount, mut peek, mut block) = (Amount::default(), false, None);
    let mut rest = options.iter();
    while let Some(&option) = rest.next() {
        if amount.read(option, &mut rest, true)? {
            continue;
        }
        if option.eq_ignore_ascii_case(b"PEEK") {
            if peek {
                return Err(RlError::RepeatedOption("PEEK"));
            }
            peek = true;
        } else if option.eq_ignore_ascii_case(b"BLOCK") {
            set_once(&mut block, "BLOCK", rest.next(), parse_block)?;
        } else {
            return Err(RlError::UnknownOption {
                option: sanitize(option),
                command: "rl.limit",
                expected: "COST, REFUND, DEBIT, PEEK or BLOCK",
            });
        }
    }
    let (cost, charge) = amount.finish(peek, block.is_some())?;
    Ok(LimitOptions {
        cost,
        charge,
        peek,
        block,
    })
}

/// Parses the amount of an `RL.ALL` `POLICY` clause (`[COST n | REFUND n |
/// DEBIT n]`, `all`) or of `RL.PEEK POLICY` (`[COST n]`); any other option is
/// the error `unknown` makes of it.
pub fn parse_amount(
    options: &[&[u8]],
    all: bool,
    unknown: impl Fn(String) -> RlError,
) -> Result<(u64, Charge), RlError> {
    let mut amount = Amount::default();
    let mut rest = options.iter();
    while let Some(&option) = rest.next() {
        if !amount.read(option, &mut rest, all)? {
            return Err(unknown(sanitize(option)));
        }
    }
    amount.finish(false, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<&[u8]> {
        text.split(' ').map(str::as_bytes).collect()
    }

    #[test]
    fn names_are_bounded_and_of_a_fixed_alphabet() {
        assert_eq!(policy_name(b"free-tier:v2_1.0"), Ok("free-tier:v2_1.0"));
        assert!(policy_name(&[b'a'; MAX_POLICY_NAME]).is_ok());
        for bad in [
            &b""[..],
            &[b'a'; MAX_POLICY_NAME + 1],
            b"a b",
            b"a{b}",
            b"\xff",
            b"a\n",
        ] {
            assert_eq!(policy_name(bad), Err(RlError::PolicyName(MAX_POLICY_NAME)));
        }
    }

    #[test]
    fn definitions_are_a_clause_without_cost_and_may_be_shadowed() {
        let caps = Caps::default();
        let d = parse_definition(&words("gcra 10 1s shadow BURST 5"), caps).unwrap();
        assert_eq!((d.kind, d.shadow), (Kind::Gcra, true));
        let d = parse_definition(&words("FIXED 100 1m"), caps).unwrap();
        assert_eq!((d.kind, d.shadow), (Kind::Fixed, false));
        let err = |text| {
            parse_definition(&words(text), caps)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err("FIXED 100 1m COST 2"),
            "ERR unknown option 'COST' for 'rl.policy|set' (expected PENALTY or SHADOW)"
        );
        assert_eq!(
            err("FIXED 100 1m SHADOW SHADOW"),
            "ERR option SHADOW given more than once"
        );
        assert_eq!(
            err("FIXED 100"),
            "ERR wrong number of arguments for 'rl.policy|set' command"
        );
        assert!(err("NOPE 1 1s").starts_with("ERR RL.POLICY SET expects an algorithm"));
        assert_eq!(
            err("FIXED 0 1m"),
            "ERR limit must be an integer from 1 to 1000000000000"
        );
    }

    #[test]
    fn the_canonical_text_capitalises_keywords_only() {
        assert_eq!(
            canonical(&words("gcra 10 1S burst 5 shadow")),
            "GCRA 10 1S BURST 5 SHADOW"
        );
    }

    #[test]
    fn limit_options_are_the_limiters() {
        let o = parse_limit_options(&words("COST 3 PEEK BLOCK 10")).unwrap();
        assert_eq!(
            (o.cost, o.charge, o.peek, o.block),
            (3, Charge::Cost, true, Some(Millis(10)))
        );
        assert_eq!(parse_limit_options(&[]).unwrap().cost, 1);
        assert_eq!(parse_limit_options(&[]).unwrap().block, None);
        assert_eq!(
            parse_limit_options(&words("BURST 10"))
                .unwrap_err()
                .to_string(),
            "ERR unknown option 'BURST' for 'rl.limit' (expected COST, REFUND, DEBIT, PEEK or BLOCK)"
        );
        assert_eq!(
            parse_limit_options(&words("BLOCK 1 BLOCK 2")),
            Err(RlError::RepeatedOption("BLOCK"))
        );
        assert_eq!(
            parse_limit_options(&words("COST 1 REFUND 1")),
            Err(RlError::CostWithRefund)
        );
        let o = parse_limit_options(&words("debit 7")).unwrap();
        assert_eq!((o.cost, o.charge), (7, Charge::Debit));
        for (text, with) in [
            ("DEBIT 1 PEEK", "PEEK"),
            ("BLOCK 5 DEBIT 1", "BLOCK"),
            ("COST 2 DEBIT 1", "COST"),
            ("DEBIT 1 REFUND 1", "REFUND"),
        ] {
            assert_eq!(
                parse_limit_options(&words(text)),
                Err(RlError::DebitWith(with))
            );
        }
        assert_eq!(
            parse_limit_options(&words("DEBIT 0")),
            Err(RlError::BadInteger {
                name: "DEBIT",
                min: 1,
                max: 1_000_000_000_000
            })
        );
    }
}
