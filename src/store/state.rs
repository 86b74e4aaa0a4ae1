//! The job state machine as a pure function, `(state, event) -> state`, with an
//! exhaustive table test. Storage applies its result in one write transaction.
//!
//! ```text
//! queued ──lease──► leased ──succeed──► succeeded
//!   ▲                 │ ├──fail(permanent or attempts exhausted)──► dead ──retry──► queued
//!   │                 │ └──fail(retryable)──► retrying ──due──► queued
//!   └────release──────┘            (queued | leased | retrying) ──cancel──► cancelled ──retry──► queued
//! ```

/// Where a job is. Stored as its `u8` code; codes never change meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum JobState {
    /// Waiting in the ready index for a worker of its format.
    Queued = 0,
    /// Held by a worker under a fenced, expiring lease.
    Leased = 1,
    /// Failed retryably; waits out its backoff, then is queued again.
    Retrying = 2,
    /// Its final submission was accepted.
    Succeeded = 3,
    /// Failed permanently, or ran out of attempts; keeps its whole failure history.
    Dead = 4,
    /// Cancelled by a client.
    Cancelled = 5,
}

impl JobState {
    pub const ALL: [JobState; 6] = [Self::Queued, Self::Leased, Self::Retrying, Self::Succeeded, Self::Dead, Self::Cancelled];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Leased => "leased",
            Self::Retrying => "retrying",
            Self::Succeeded => "succeeded",
            Self::Dead => "dead",
            Self::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|st| st.as_str() == s)
    }

    pub fn code(self) -> u8 {
        self as u8
    }

    pub fn from_code(c: u8) -> Option<Self> {
        Self::ALL.get(usize::from(c)).copied()
    }

    /// No event but `retry` moves a job out of a finished state.
    pub fn is_finished(self) -> bool {
        matches!(self, Self::Succeeded | Self::Dead | Self::Cancelled)
    }
}

/// Something that happens to a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A worker is granted a lease.
    Lease,
    /// The final submission of the current lease was accepted.
    Succeed,
    /// The current attempt failed. `attempts` counts failures including this one.
    Fail { permanent: bool, attempts: u32, max_attempts: u32 },
    /// The retry backoff ran out.
    Due,
    /// The lease is given back without charging an attempt (drain, restart).
    Release,
    /// A client cancels the job.
    Cancel,
    /// A client moves a dead or cancelled job back to the queue.
    Retry,
    /// A partial submission of the current lease was accepted: the job stays leased
    /// (its record notes the progress, its lease is extended).
    Progress,
    /// Another job's final submission names this job as its child: it gains a parent,
    /// whatever its state, and stays there.
    Adopt,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a {} job cannot take {event:?}", state.as_str())]
pub struct TransitionError {
    pub state: JobState,
    pub event: Event,
}

/// The one place that says which transitions exist.
pub fn transition(state: JobState, event: Event) -> Result<JobState, TransitionError> {
    use Event as E;
    use JobState as S;
    let next = match (state, event) {
        (S::Queued, E::Lease) => S::Leased,
        (S::Leased, E::Succeed) => S::Succeeded,
        (S::Leased, E::Fail { permanent, attempts, max_attempts }) => {
            if permanent || attempts >= max_attempts {
                S::Dead
            } else {
                S::Retrying
            }
        }
        (S::Leased, E::Release) => S::Queued,
        (S::Retrying, E::Due) => S::Queued,
        (S::Queued | S::Leased | S::Retrying, E::Cancel) => S::Cancelled,
        (S::Dead | S::Cancelled, E::Retry) => S::Queued,
        (S::Leased, E::Progress) => S::Leased,
        (s, E::Adopt) => s,
        _ => return Err(TransitionError { state, event }),
    };
    Ok(next)
}

/// Delay before a retry: `base · 2^(attempts-1)` capped at `max`, with "equal jitter"
/// (half fixed, half drawn from `jitter` in [0, 1)) so a burst of failures spreads out
/// instead of returning in lockstep. Pure: the caller draws `jitter`.
pub fn backoff_ms(attempts: u32, base_ms: u64, max_ms: u64, jitter: f64) -> u64 {
    let exp = attempts.saturating_sub(1).min(62);
    let full = base_ms.saturating_mul(1u64 << exp).min(max_ms);
    let half = full / 2;
    let jitter = jitter.clamp(0.0, 1.0);
    (half + (half as f64 * jitter) as u64).min(max_ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Event as E;
    use JobState as S;

    fn all_events() -> Vec<Event> {
        vec![
            E::Lease,
            E::Succeed,
            E::Fail { permanent: true, attempts: 1, max_attempts: 5 },
            E::Fail { permanent: false, attempts: 1, max_attempts: 5 },
            E::Fail { permanent: false, attempts: 5, max_attempts: 5 },
            E::Due,
            E::Release,
            E::Cancel,
            E::Retry,
            E::Progress,
            E::Adopt,
        ]
    }

    /// The whole table: every state × every event, with the expected outcome.
    fn expected(state: JobState, event: Event) -> Option<JobState> {
        match (state, event) {
            (s, E::Adopt) => Some(s),
            (S::Leased, E::Progress) => Some(S::Leased),
            (S::Queued, E::Lease) => Some(S::Leased),
            (S::Queued, E::Cancel) => Some(S::Cancelled),
            (S::Queued, _) => None,
            (S::Leased, E::Succeed) => Some(S::Succeeded),
            (S::Leased, E::Fail { permanent: true, .. }) => Some(S::Dead),
            (S::Leased, E::Fail { permanent: false, attempts: 1, .. }) => Some(S::Retrying),
            (S::Leased, E::Fail { permanent: false, .. }) => Some(S::Dead),
            (S::Leased, E::Release) => Some(S::Queued),
            (S::Leased, E::Cancel) => Some(S::Cancelled),
            (S::Leased, _) => None,
            (S::Retrying, E::Due) => Some(S::Queued),
            (S::Retrying, E::Cancel) => Some(S::Cancelled),
            (S::Retrying, _) => None,
            (S::Succeeded, _) => None,
            (S::Dead | S::Cancelled, E::Retry) => Some(S::Queued),
            (S::Dead | S::Cancelled, _) => None,
        }
    }

    #[test]
    fn every_state_times_every_event() {
        let mut checked = 0;
        for state in JobState::ALL {
            for event in all_events() {
                let got = transition(state, event).ok();
                assert_eq!(got, expected(state, event), "{state:?} × {event:?}");
                checked += 1;
            }
        }
        assert_eq!(checked, 6 * 11);
    }

    #[test]
    fn finished_states_only_leave_by_retry() {
        for state in JobState::ALL.into_iter().filter(|s| s.is_finished()) {
            for event in all_events().into_iter().filter(|e| !matches!(e, E::Retry | E::Adopt)) {
                assert!(transition(state, event).is_err(), "{state:?} × {event:?}");
            }
            // Gaining a parent is not leaving.
            assert_eq!(transition(state, E::Adopt), Ok(state));
        }
    }

    #[test]
    fn state_codes_and_names_round_trip() {
        for s in JobState::ALL {
            assert_eq!(JobState::from_code(s.code()), Some(s));
            assert_eq!(JobState::parse(s.as_str()), Some(s));
        }
        assert_eq!(JobState::from_code(6), None);
    }

    #[test]
    fn backoff_grows_exponentially_and_is_capped() {
        assert_eq!(backoff_ms(1, 1000, 300_000, 0.0), 500);
        assert_eq!(backoff_ms(1, 1000, 300_000, 0.999_999), 999);
        assert_eq!(backoff_ms(3, 1000, 300_000, 0.0), 2000);
        assert_eq!(backoff_ms(40, 1000, 300_000, 1.0), 300_000);
        // No overflow at the extremes: the doubling saturates at the cap.
        assert!(backoff_ms(u32::MAX, u64::MAX, u64::MAX, 0.5) >= u64::MAX / 2);
        for a in 1..70 {
            assert!(backoff_ms(a, 1000, 300_000, 0.7) <= 300_000);
        }
    }
}
