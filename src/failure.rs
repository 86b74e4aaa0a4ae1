//! The failure taxonomy (DESIGN.md §6): one table of kinds, who raises them and
//! whether they are permanent by default, plus the wire's `"{kind}: {detail}"` reason.

/// Upper bound of a wire `failure_reason`, in bytes (rules.json).
pub const MAX_REASON_BYTES: usize = crate::rules::MAX_REASON_BYTES;

/// Why an attempt failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FailureKind {
    /// Retryable; also any unexpected exception in a worker.
    Transient,
    /// The bytes are not a valid instance of the format.
    InvalidInput,
    /// Valid, but this worker cannot handle it.
    Unsupported,
    /// Over a configured size limit.
    TooLarge,
    /// A network fetch failed.
    FetchFailed,
    /// Memory limit hit (supervisor).
    Oom,
    /// CPU-seconds limit hit (supervisor).
    CpuLimit,
    /// Wall-clock job timeout (supervisor).
    Timeout,
    /// Died by a signal or an unexpected exit code (supervisor).
    Crash,
    /// No heartbeat within the lease (core).
    LeaseExpired,
    /// Malformed submission (core).
    Protocol,
}

impl FailureKind {
    pub const ALL: [FailureKind; 11] = [
        Self::Transient,
        Self::InvalidInput,
        Self::Unsupported,
        Self::TooLarge,
        Self::FetchFailed,
        Self::Oom,
        Self::CpuLimit,
        Self::Timeout,
        Self::Crash,
        Self::LeaseExpired,
        Self::Protocol,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Transient => "transient",
            Self::InvalidInput => "invalid_input",
            Self::Unsupported => "unsupported",
            Self::TooLarge => "too_large",
            Self::FetchFailed => "fetch_failed",
            Self::Oom => "oom",
            Self::CpuLimit => "cpu_limit",
            Self::Timeout => "timeout",
            Self::Crash => "crash",
            Self::LeaseExpired => "lease_expired",
            Self::Protocol => "protocol",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// DESIGN.md §6 defaults, from rules.json; `[failures] permanent` in the config replaces them.
    pub fn permanent_by_default(self) -> bool {
        crate::rules::FAILURE_KINDS.iter().any(|(k, permanent, _)| *k == self.as_str() && *permanent)
    }
}

impl std::fmt::Display for FailureKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Splits a worker's `"{kind}: {detail}"`. A reason without a known kind prefix is
/// `transient` (the worker's `permanent` flag still counts for unknown kinds).
pub fn split_reason(reason: &str) -> (Option<FailureKind>, &str) {
    match reason.split_once(':') {
        Some((kind, detail)) => match FailureKind::parse(kind.trim()) {
            Some(k) => (Some(k), detail.trim_start()),
            None => (None, reason),
        },
        None => (None, reason),
    }
}

/// `s` cut to at most `max` bytes, on a UTF-8 character boundary.
pub fn truncate_utf8(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The wire form of a failure: `"{kind}: {detail}"`, capped at [`MAX_REASON_BYTES`].
pub fn reason(kind: FailureKind, detail: &str) -> String {
    truncate_utf8(&format!("{kind}: {detail}"), MAX_REASON_BYTES).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_through_their_names() {
        for k in FailureKind::ALL {
            assert_eq!(FailureKind::parse(k.as_str()), Some(k));
        }
        assert_eq!(FailureKind::parse("nope"), None);
    }

    /// The enum and rules.json (which the workers read too) list the same kinds, in order.
    #[test]
    fn kinds_are_the_shared_table() {
        let names: Vec<&str> = FailureKind::ALL.iter().map(|k| k.as_str()).collect();
        let table: Vec<&str> = crate::rules::FAILURE_KINDS.iter().map(|(k, _, _)| *k).collect();
        assert_eq!(names, table);
        assert!(FailureKind::Protocol.permanent_by_default() && !FailureKind::Oom.permanent_by_default());
    }

    #[test]
    fn reasons_split_on_the_first_colon() {
        assert_eq!(split_reason("invalid_input: bad: header"), (Some(FailureKind::InvalidInput), "bad: header"));
        assert_eq!(split_reason("weird: thing"), (None, "weird: thing"));
        assert_eq!(split_reason("no colon"), (None, "no colon"));
    }

    #[test]
    fn reasons_are_capped_on_a_char_boundary() {
        let long = "é".repeat(400); // 800 bytes
        let r = reason(FailureKind::Crash, &long);
        assert!(r.len() <= MAX_REASON_BYTES && r.len() >= MAX_REASON_BYTES - 1);
        assert!(r.starts_with("crash: é"));
        assert_eq!(truncate_utf8("aé", 2), "a");
    }
}
