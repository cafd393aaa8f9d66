//! The one place that reads the wall clock.

use std::mem::MaybeUninit;

/// The server's wall clock in nanoseconds since the Unix epoch (`CLOCK_REALTIME`:
/// Redis 7.0 offers modules no microsecond clock). A clock before the epoch reads as 0.
pub fn now_ns() -> u64 {
    #[cfg(feature = "debug-commands")]
    return offset::apply(wall_clock_ns());
    #[cfg(not(feature = "debug-commands"))]
    wall_clock_ns()
}

fn wall_clock_ns() -> u64 {
    let mut ts = MaybeUninit::<libc::timespec>::uninit();
    // SAFETY: clock_gettime writes the timespec on success; CLOCK_REALTIME always exists.
    let ts = unsafe {
        if libc::clock_gettime(libc::CLOCK_REALTIME, ts.as_mut_ptr()) != 0 {
            return 0;
        }
        ts.assume_init()
    };
    let secs = u64::try_from(ts.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(ts.tv_nsec).unwrap_or(0);
    secs.saturating_mul(1_000_000_000).saturating_add(nanos)
}

/// Test builds only: a shift of the clock, to simulate a wall clock that steps.
#[cfg(feature = "debug-commands")]
pub mod offset {
    use std::sync::atomic::{AtomicI64, Ordering};

    static OFFSET_NS: AtomicI64 = AtomicI64::new(0);

    pub fn set(ns: i64) {
        OFFSET_NS.store(ns, Ordering::Relaxed);
    }

    pub(super) fn apply(now: u64) -> u64 {
        now.saturating_add_signed(OFFSET_NS.load(Ordering::Relaxed))
    }
}
