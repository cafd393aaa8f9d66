//! Reservations: a request admitted for an estimate of its cost, settled once its actual cost
//! is known (an LLM call's tokens, a download's bytes).
//!
//! [`Limiter::reserve`] spends `COST estimate`; when admitted, its reservation's
//! [`settle`](Reservation::settle) sends the difference: `DEBIT actual - estimate` when the
//! request cost more (charged whatever is left, never denied), `REFUND estimate - actual` when
//! it cost less, nothing when it cost the estimate. [`Limiter::reserve_all`] does the same over
//! the `RL.ALL` layers that reserved the estimate, in one `RL.ALL`. A reservation settles at
//! most once; one dropped unsettled settles the estimate (nothing is sent: the units stay
//! spent).
//!
//! A reservation never gives back what was not spent, nor what no longer counts: a layer a
//! `SHADOW` policy denied spent nothing and is not settled; a `REFUND` goes only to the layers
//! whose reply's `reset_after_ms` has not passed since just before the reserving call was sent.

use std::time::Instant;

use redis::aio::ConnectionLike;

use crate::command;
use crate::decision::{AllDecision, Decision};
use crate::error::{Error, Result};
use crate::limiter::Limiter;
use crate::policy::Policy;

/// What a settlement sent: the call's decision (an [`AllDecision`] from `reserve_all`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Settled {
    /// The `DEBIT` or `REFUND` of `reserve`'s layer.
    One(Decision),
    /// The `RL.ALL` of `reserve_all`'s layers.
    All(AllDecision),
}

/// A [`Limiter::reserve`]/[`Limiter::reserve_all`] admission, to
/// [`settle`](Reservation::settle) once.
#[derive(Debug)]
pub struct Reservation<C> {
    limiter: Limiter<C>,
    layers: Vec<((String, Policy), i64)>,
    estimate: u64,
    together: bool,
    sent_at: Instant,
    settled: bool,
}

impl<C> Reservation<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    pub(crate) fn new(
        limiter: Limiter<C>,
        layers: Vec<((String, Policy), i64)>,
        estimate: u64,
        together: bool,
        sent_at: Instant,
    ) -> Self {
        Reservation {
            limiter,
            layers,
            estimate,
            together,
            sent_at,
            settled: false,
        }
    }

    /// The (key, policy) layers that spent the estimate, and that `settle` adjusts.
    pub fn layers(&self) -> Vec<(&str, &Policy)> {
        self.layers
            .iter()
            .map(|((k, p), _)| (k.as_str(), p))
            .collect()
    }

    /// The units each of those layers spent.
    pub fn estimate(&self) -> u64 {
        self.estimate
    }

    /// True once `settle` was called, whatever it sent.
    pub fn settled(&self) -> bool {
        self.settled
    }

    /// Settle at `actual` units: `DEBIT actual - estimate` when more (at most 10^12, the
    /// server's cap on a debt), `REFUND estimate - actual` when less, nothing when equal. No
    /// `REFUND` goes to a layer whose reply's `reset_after_ms` has passed since just before the
    /// reserving call was sent. Returns what was sent's decision, or None when nothing was. A
    /// second call is [`Error::ReservationSettled`]. The reservation is marked settled before
    /// the call is sent: a call that fails is not sent again.
    pub async fn settle(&mut self, actual: u64) -> Result<Option<Settled>> {
        if self.settled {
            return Err(Error::ReservationSettled);
        }
        self.settled = true;
        let difference = i128::from(actual) - i128::from(self.estimate);
        let options = command::settle_options(difference);
        let elapsed = self.sent_at.elapsed().as_millis() as i64;
        let layers: Vec<(String, Policy)> = self
            .layers
            .iter()
            .filter(|(_, reset)| difference >= 0 || elapsed < *reset)
            .map(|(l, _)| l.clone())
            .collect();
        if options.is_empty() || layers.is_empty() {
            return Ok(None);
        }
        if self.together {
            let cmd = command::all_clauses(&layers, &vec![options; layers.len()], false)?;
            return Ok(Some(Settled::All(self.limiter.run_all(&cmd).await?)));
        }
        let (key, policy) = &layers[0];
        let n: u64 = options[1].parse().expect("a count");
        let opts = if options[0] == "DEBIT" {
            command::Options {
                cost: 1,
                debit: Some(n),
                ..Default::default()
            }
        } else {
            command::Options {
                cost: 1,
                refund: Some(n),
                ..Default::default()
            }
        };
        let cmd = command::decide(key, policy, opts)?;
        Ok(Some(Settled::One(self.limiter.run_one(&cmd).await?)))
    }
}
