//! Test builds only (`debug-commands`): a pause inside every server call made
//! with a key's handle closed, so that tests can make the key expire during
//! the call at will, and a count of the keys that did (`RL.DEBUG`).

use std::sync::atomic::{AtomicU64, Ordering};

static CALL_DELAY_US: AtomicU64 = AtomicU64::new(0);
static VANISHED: AtomicU64 = AtomicU64::new(0);

/// Every later server call about a key first sleeps `us` microseconds.
pub fn set_call_delay(us: u64) {
    CALL_DELAY_US.store(us, Ordering::Relaxed);
}

/// Keys that vanished during a server call so far.
pub fn vanished() -> u64 {
    VANISHED.load(Ordering::Relaxed)
}

pub(super) fn before_call() {
    let us = CALL_DELAY_US.load(Ordering::Relaxed);
    if us > 0 {
        std::thread::sleep(std::time::Duration::from_micros(us));
    }
}

pub(super) fn note_vanished() {
    VANISHED.fetch_add(1, Ordering::Relaxed);
}
