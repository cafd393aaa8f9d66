//! `BLOCK ms`, an option of the limiters and `RL.ACQUIRE`, read in its place
//! by their parsers (whether a call may wait is the wait queue's to decide).

use super::scalars::parse_count_from;
use crate::bounds::MAX_BLOCK_MS;
use crate::error::RlError;
use crate::units::Millis;

/// `BLOCK ms`: milliseconds from 0 (no time limit) to [`MAX_BLOCK_MS`].
pub fn parse_block(bytes: &[u8]) -> Result<Millis, RlError> {
    parse_count_from("BLOCK", bytes, 0, MAX_BLOCK_MS).map(Millis)
}
