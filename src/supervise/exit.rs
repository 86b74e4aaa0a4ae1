//! Exit classification: every way a worker process can end, mapped to a failure
//! kind in one table. The Python harness shares the meaning of the exit codes
//! through the proto's `WorkerExit` enum.
use crate::failure::FailureKind;
use crate::proto::WorkerExit;

/// Why the supervisor itself ended a process, when it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillReason {
    /// Past `job_timeout_secs`.
    Timeout,
    /// The process group's resident size passed `rss_mb`.
    RssLimit { rss_bytes: u64 },
    /// Asked to stop (drain, shrink, recycle): not a failure.
    Stop,
}

/// How a process ended, as the OS reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exit {
    pub code: Option<i32>,
    pub signal: Option<i32>,
}

impl Exit {
    pub fn from_status(status: std::process::ExitStatus) -> Self {
        use std::os::unix::process::ExitStatusExt;
        Self { code: status.code(), signal: status.signal() }
    }
}

/// The classification of an exit: a failure kind (None for a clean, expected stop)
/// and a one-line reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classified {
    pub kind: Option<FailureKind>,
    pub reason: String,
}

/// Markers of memory exhaustion in the stderr tail: Python's MemoryError (under
/// RLIMIT_AS, if the harness did not catch it) and Rust's allocation-failure abort
/// (polars and other native extensions).
const OOM_MARKERS: &[&str] = &["MemoryError", "memory allocation of"];

fn signal_name(sig: i32) -> String {
    nix::sys::signal::Signal::try_from(sig).map(|s| s.as_str().to_string()).unwrap_or_else(|_| format!("signal {sig}"))
}

/// The one table. Order matters: the supervisor's own kills first, then the
/// harness's exit codes, then evidence in stderr, then signals, then other codes.
pub fn classify(exit: Exit, stderr_tail: &str, killed: Option<KillReason>) -> Classified {
    let c = |kind: Option<FailureKind>, reason: String| Classified { kind, reason };
    match (killed, exit.code, exit.signal) {
        (Some(KillReason::Timeout), _, _) => c(Some(FailureKind::Timeout), "killed by the supervisor past job_timeout_secs".into()),
        (Some(KillReason::RssLimit { rss_bytes }), _, _) => {
            c(Some(FailureKind::Oom), format!("killed by the supervisor: the process group's resident size reached {} MiB", rss_bytes >> 20))
        }
        (Some(KillReason::Stop), Some(0), _) | (Some(KillReason::Stop), _, Some(_)) => c(None, "stopped by the supervisor".into()),
        (_, Some(code), _) if code == WorkerExit::Oom as i32 => c(Some(FailureKind::Oom), "the worker ran out of memory (MemoryError)".into()),
        (_, _, _) if OOM_MARKERS.iter().any(|m| stderr_tail.contains(m)) => {
            let how = exit.signal.map(signal_name).or(exit.code.map(|c| format!("exit code {c}"))).unwrap_or_default();
            c(Some(FailureKind::Oom), format!("out of memory ({how}; allocation failure in stderr)"))
        }
        (_, _, Some(sig)) if sig == libc::SIGXCPU => c(Some(FailureKind::CpuLimit), "CPU-seconds limit reached (SIGXCPU)".into()),
        (_, _, Some(sig)) => c(Some(FailureKind::Crash), format!("killed by {}", signal_name(sig))),
        (_, Some(code), _) if code == WorkerExit::Config as i32 => c(Some(FailureKind::Crash), "the worker refused its configuration (exit code 78)".into()),
        (_, Some(0), _) => c(Some(FailureKind::Crash), "exited (code 0) without being asked to".into()),
        (_, Some(code), _) => c(Some(FailureKind::Crash), format!("exited with code {code}")),
        (_, None, None) => c(Some(FailureKind::Crash), "ended without an exit status".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(c: i32) -> Exit {
        Exit { code: Some(c), signal: None }
    }
    fn sig(s: i32) -> Exit {
        Exit { code: None, signal: Some(s) }
    }

    #[test]
    fn every_row_of_the_table() {
        let k = |e, tail: &str, killed| classify(e, tail, killed).kind;
        assert_eq!(k(sig(9), "", Some(KillReason::Timeout)), Some(FailureKind::Timeout));
        assert_eq!(k(sig(9), "", Some(KillReason::RssLimit { rss_bytes: 1 << 30 })), Some(FailureKind::Oom));
        assert_eq!(k(code(0), "", Some(KillReason::Stop)), None);
        assert_eq!(k(sig(15), "", Some(KillReason::Stop)), None);
        assert_eq!(k(code(86), "", None), Some(FailureKind::Oom));
        assert_eq!(k(code(1), "Traceback...\nMemoryError\n", None), Some(FailureKind::Oom));
        assert_eq!(k(sig(6), "memory allocation of 1048576 bytes failed\n", None), Some(FailureKind::Oom));
        assert_eq!(k(sig(24), "", None), Some(FailureKind::CpuLimit));
        assert_eq!(k(sig(11), "", None), Some(FailureKind::Crash));
        assert_eq!(k(sig(6), "", None), Some(FailureKind::Crash));
        assert_eq!(k(sig(9), "", None), Some(FailureKind::Crash));
        assert_eq!(k(code(78), "", None), Some(FailureKind::Crash));
        assert_eq!(k(code(0), "", None), Some(FailureKind::Crash));
        assert_eq!(k(code(3), "", None), Some(FailureKind::Crash));
        // A stop request that ends in a crash is still a crash.
        assert_eq!(k(code(3), "", Some(KillReason::Stop)), Some(FailureKind::Crash));
        assert!(classify(sig(11), "", None).reason.contains("SIGSEGV"));
    }
}
