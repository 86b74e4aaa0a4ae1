//! Wall-clock time in Unix microseconds, the unit of every timestamp on the wire.
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Microseconds since the Unix epoch (0 if the clock is before it).
pub fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// `d` in whole microseconds, saturating.
pub fn us(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}
