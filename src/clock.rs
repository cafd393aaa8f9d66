//! The one place that reads the wall clock.

use std::mem::MaybeUninit;

/// The server's wall clock in nanoseconds since the Unix epoch (`CLOCK_REALTIME`:
/// Redis 7.0 offers modules no microsecond clock). A clock before the epoch reads as 0.
pub fn now_ns() -> u64 {
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
