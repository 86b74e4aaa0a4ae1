//! Every row of the exit classification table against a real process's real exit
//! status (the supervision tests cover the same rows through the pool actor).
use std::process::{Command, Stdio};

use telha::failure::FailureKind;
use telha::supervise::exit::{classify, Exit, KillReason};

/// Runs `sh -c script` and returns its exit and stderr.
fn run(script: &str) -> (Exit, String) {
    let out = Command::new("sh").args(["-c", script]).stdin(Stdio::null()).output().expect("sh");
    (Exit::from_status(out.status), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn kind(script: &str, killed: Option<KillReason>) -> Option<FailureKind> {
    let (exit, tail) = run(script);
    classify(exit, &tail, killed).kind
}

#[test]
fn harness_oom_exit_code_is_oom() {
    assert_eq!(kind("exit 86", None), Some(FailureKind::Oom));
}

#[test]
fn uncaught_memory_error_is_oom() {
    // Python's own MemoryError, uncaught: exit 1 with the traceback on stderr.
    assert_eq!(kind("python3 -c 'raise MemoryError'", None), Some(FailureKind::Oom));
}

#[test]
fn abort_after_a_native_allocation_failure_is_oom() {
    assert_eq!(kind("echo 'memory allocation of 4096 bytes failed' >&2; kill -ABRT $$", None), Some(FailureKind::Oom));
}

#[test]
fn plain_abort_is_crash() {
    assert_eq!(kind("kill -ABRT $$", None), Some(FailureKind::Crash));
}

#[test]
fn sigxcpu_is_cpu_limit() {
    assert_eq!(kind("kill -XCPU $$", None), Some(FailureKind::CpuLimit));
}

#[test]
fn segfault_and_outside_sigkill_are_crash() {
    assert_eq!(kind("kill -SEGV $$", None), Some(FailureKind::Crash));
    assert_eq!(kind("kill -KILL $$", None), Some(FailureKind::Crash));
}

#[test]
fn exit_codes_are_crash_unless_asked() {
    assert_eq!(kind("exit 78", None), Some(FailureKind::Crash));
    assert_eq!(kind("exit 3", None), Some(FailureKind::Crash));
    assert_eq!(kind("exit 0", None), Some(FailureKind::Crash));
    assert_eq!(kind("exit 0", Some(KillReason::Stop)), None);
    assert_eq!(kind("kill -TERM $$", Some(KillReason::Stop)), None);
}

#[test]
fn the_supervisors_own_kills_name_their_reason() {
    assert_eq!(kind("kill -KILL $$", Some(KillReason::Timeout)), Some(FailureKind::Timeout));
    assert_eq!(kind("kill -KILL $$", Some(KillReason::RssLimit { rss_bytes: 1 << 30 })), Some(FailureKind::Oom));
}
