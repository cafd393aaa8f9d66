//! Time units that meet at the same call sites, as types: the server speaks
//! milliseconds (timers, expiries, `BLOCK`), the algorithms nanoseconds.
//! Converting is explicit, and rounding says which way it goes.

/// Nanoseconds per millisecond (the algorithms' constant: one definition).
pub use crate::algorithm::NANOS_PER_MS;

/// A span of milliseconds (`BLOCK ms`, a timer's delay).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Millis(pub u64);

/// A span of nanoseconds, or an instant as nanoseconds since the epoch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Nanos(pub u64);

impl Millis {
    /// The same span in nanoseconds (saturating).
    pub fn as_nanos(self) -> Nanos {
        Nanos(self.0.saturating_mul(NANOS_PER_MS))
    }
}

impl Nanos {
    /// Whole milliseconds, rounded down (an instant's millisecond).
    pub fn floor_ms(self) -> Millis {
        Millis(self.0 / NANOS_PER_MS)
    }

    pub fn saturating_add(self, other: Nanos) -> Nanos {
        Nanos(self.0.saturating_add(other.0))
    }

    /// `self - earlier`, or zero if `earlier` is later.
    pub fn since(self, earlier: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(earlier.0))
    }
}

/// A delay of `ns` nanoseconds (as the algorithms give waits, `u128`) in whole
/// milliseconds, rounded up and kept far from overflow in timer arithmetic.
pub fn delay_ms(ns: u128) -> Millis {
    Millis(ns.div_ceil(NANOS_PER_MS as u128).min(u64::MAX as u128 / 2) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_round_the_way_they_say() {
        assert_eq!(Nanos(1_999_999).floor_ms(), Millis(1));
        assert_eq!(Millis(u64::MAX).as_nanos(), Nanos(u64::MAX));
        assert_eq!(delay_ms(1), Millis(1));
        assert_eq!(delay_ms(u128::MAX), Millis(u64::MAX / 2));
        assert_eq!(Nanos(5).since(Nanos(7)), Nanos(0));
    }
}
