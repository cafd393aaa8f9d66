//! A request's amount: `COST n` (the default, 1), `REFUND n` or `DEBIT n`, at
//! most one of them. Every form that takes more than `COST` reads them here.

use super::scalars::{parse_count_from, set_once};
use crate::bounds::MAX_COST;
use crate::error::RlError;

/// How a request's units count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Charge {
    /// `COST n`: spent if admitted, else denied.
    Cost,
    /// `REFUND n`: given back, never beyond the idle state.
    Refund,
    /// `DEBIT n`: charged whatever is left, never denied; the limiter may go
    /// into debt (at most `MAX_DEBT` units beyond what it admits at once).
    Debit,
}

/// The amount options read so far.
#[derive(Default)]
pub struct Amount {
    cost: Option<u64>,
    refund: Option<u64>,
    debit: Option<u64>,
}

impl Amount {
    /// Reads `option` and its value from `rest` if it is `COST`, or `REFUND`
    /// or `DEBIT` where `all` is true; `Ok(false)` if it is none of them.
    pub fn read(
        &mut self,
        option: &[u8],
        rest: &mut std::slice::Iter<'_, &[u8]>,
        all: bool,
    ) -> Result<bool, RlError> {
        // One comparison per option, by its first letter.
        match option.first().map(u8::to_ascii_uppercase) {
            Some(b'C') if option.eq_ignore_ascii_case(b"COST") => {
                set_once(&mut self.cost, "COST", rest.next(), |v| {
                    parse_count_from("COST", v, 0, MAX_COST)
                })?
            }
            Some(b'R') if all && option.eq_ignore_ascii_case(b"REFUND") => {
                set_once(&mut self.refund, "REFUND", rest.next(), |v| {
                    parse_count_from("REFUND", v, 0, MAX_COST)
                })?
            }
            Some(b'D') if all && option.eq_ignore_ascii_case(b"DEBIT") => {
                set_once(&mut self.debit, "DEBIT", rest.next(), |v| {
                    parse_count_from("DEBIT", v, 1, MAX_COST)
                })?
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The units and how they count, once every option is read; `peek` and
    /// `block` are the call's (a debit can neither peek nor wait).
    pub fn finish(self, peek: bool, block: bool) -> Result<(u64, Charge), RlError> {
        if let Some(n) = self.debit {
            let with = match () {
                _ if self.cost.is_some() => "COST",
                _ if self.refund.is_some() => "REFUND",
                _ if peek => "PEEK",
                _ if block => "BLOCK",
                _ => return Ok((n, Charge::Debit)),
            };
            return Err(RlError::DebitWith(with));
        }
        match (self.cost, self.refund) {
            (Some(_), Some(_)) => Err(RlError::CostWithRefund),
            (_, Some(n)) => Ok((n, Charge::Refund)),
            (cost, None) => Ok((cost.unwrap_or(1), Charge::Cost)),
        }
    }
}
