//! Process supervision with real processes: the pool actor spawns the real Python
//! harness (`tests/workers/misbehave.py`) under rlimits, and every way it can die
//! becomes a classified failure of the job it held, with evidence.
//! Needs the repository's .venv (`workers/setup-venv.sh`; the README's test command makes it).
mod common;

use std::time::{Duration, Instant};

use common::*;
use telha::proto::*;

const T: Duration = Duration::from_secs(20);

fn config(pool_extra: &str, limits: &str, jobs: &str) -> String {
    format!(
        r#"
[server]
listen = "127.0.0.1:0"
data_dir = "data"
shutdown_grace_secs = 10

[jobs]
{jobs}

[pools.misbehave]
formats = ["txt"]
command = ["{{repo}}/.venv/bin/python", "{{repo}}/tests/workers/misbehave.py"]
kill_grace_secs = 0.5
{pool_extra}

[pools.misbehave.limits]
{limits}
"#
    )
}

const ONE_ATTEMPT: &str = "max_attempts = 1\nlease_secs = 60\nbackoff_base_ms = 50\nbackoff_max_ms = 100";

fn venv_ready() {
    let py = concat!(env!("CARGO_MANIFEST_DIR"), "/.venv/bin/python");
    assert!(std::path::Path::new(py).exists(), "{py} is missing: run workers/setup-venv.sh (the README's test command does)");
}

/// Starts a server with the misbehaving pool and waits until its worker polls.
async fn start(pool_extra: &str, limits: &str, jobs: &str) -> Server {
    venv_ready();
    let s = Server::start_config(&config(pool_extra, limits, jobs));
    s.wait_status(T, "the worker to poll", |st| st.pools.iter().all(|p| p.workers.iter().all(|w| w.state == "idle"))).await;
    s
}

async fn run_mode(s: &Server, mode: &str, extra: &str) -> Job {
    let job = s.submit_with("txt", mode, b"x", &format!(r#"{{"mode":"{mode}"{extra}}}"#)).await;
    s.wait_for(&job.id, T, |j| j.state == "dead" || j.state == "succeeded").await
}

fn only_failure(j: &Job) -> &Failure {
    assert_eq!(j.failures.len(), 1, "{j:?}");
    &j.failures[0]
}

/// MemoryError under `memory_mb` (RLIMIT_AS) → the harness exits 86 → `oom`.
#[tokio::test]
async fn memory_error_under_rlimit_as_is_oom() {
    let s = start("", "memory_mb = 400", ONE_ATTEMPT).await;
    let j = run_mode(&s, "memory", "").await;
    let f = only_failure(&j);
    assert_eq!((f.kind.as_str(), f.exit_code), ("oom", Some(86)), "{f:?}");
    assert!(f.peak_rss_bytes > 0 || !f.stderr_tail.is_empty());
}

/// SIGABRT with a native allocation failure in stderr → `oom`, stderr tail kept.
#[tokio::test]
async fn abort_with_allocation_message_is_oom() {
    let s = start("", "", ONE_ATTEMPT).await;
    let j = run_mode(&s, "abort_alloc", "").await;
    let f = only_failure(&j);
    assert_eq!((f.kind.as_str(), f.signal), ("oom", Some(6)), "{f:?}");
    assert!(f.stderr_tail.contains("memory allocation of 1073741824 bytes failed"), "{f:?}");
}

/// SIGSEGV → `crash`, and the pool is back to size with a new process.
#[tokio::test]
async fn segfault_is_crash_and_the_worker_respawns() {
    let s = start("", "", ONE_ATTEMPT).await;
    let before = s.status().await.pools[0].workers[0].pid;
    let j = run_mode(&s, "segv", "").await;
    let f = only_failure(&j);
    assert_eq!((f.kind.as_str(), f.signal), ("crash", Some(11)), "{f:?}");
    assert!(f.reason.contains("SIGSEGV"), "{f:?}");
    let st = s.wait_status(T, "the respawn", |st| st.pools[0].workers[0].state == "idle" && st.pools[0].workers[0].pid != before).await;
    assert_eq!(st.pools[0].live, 1);
    assert_eq!(st.pools[0].restarts, 1);
}

/// Each worker's TMPDIR is its own folder under the data dir, removed when the worker
/// exits: a worker that crashes mid-job leaves no scratch files behind (they piled up in
/// the host's /tmp: a transcoded CSV, Chromium's profile). A new core sweeps what an earlier
/// one's workers left.
#[tokio::test]
async fn a_crashed_workers_scratch_files_are_removed() {
    let mut s = start("", "", ONE_ATTEMPT).await;
    let tmp_root = s.data_dir().join("worker-tmp");
    let before = s.status().await.pools[0].workers[0].pid;
    let j = run_mode(&s, "scratch_segv", "").await;
    let f = only_failure(&j);
    assert_eq!(f.kind, "crash", "{f:?}");
    let line = f.stderr_tail.lines().find(|l| l.starts_with("scratch file ")).unwrap_or_else(|| panic!("{f:?}"));
    let scratch = std::path::PathBuf::from(line.trim_start_matches("scratch file ").trim());
    let worker_dir = scratch.parent().expect("the file's folder").to_path_buf();
    assert_eq!(worker_dir.parent(), Some(tmp_root.as_path()), "{scratch:?}");
    assert!(worker_dir.file_name().is_some_and(|n| n.to_string_lossy().starts_with("misbehave-0-")), "{scratch:?}");
    // What the pool's workers share (TELHA_POOL_TMP) outlives any one of them.
    let pool_dir = s.data_dir().join("pool-tmp").join("misbehave");
    assert!(f.stderr_tail.contains(&format!("pool tmp {}\n", pool_dir.display())), "{f:?}");
    s.wait_status(T, "the respawn", |st| st.pools[0].workers[0].state == "idle" && st.pools[0].workers[0].pid != before).await;
    let deadline = Instant::now() + T;
    while worker_dir.exists() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!worker_dir.exists(), "{worker_dir:?} is still there");
    assert!(pool_dir.is_dir());
    // The new worker has a fresh, empty folder of its own, private to it.
    let dirs: Vec<_> = std::fs::read_dir(&tmp_root).expect("worker-tmp").map(|e| e.expect("entry").path()).collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    assert_eq!(std::fs::read_dir(&dirs[0]).expect("its folder").count(), 0);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&dirs[0]).expect("metadata").permissions().mode() & 0o777, 0o700);
    // kill -9 of the core takes its workers along and removes nothing; the next core does.
    std::fs::write(dirs[0].join("left.partial"), b"x").expect("a file in the live worker's folder");
    s.restart();
    assert!(!dirs[0].join("left.partial").exists(), "the next core did not sweep {:?}", dirs[0]);
}

/// A "MemoryError" that an earlier job logged (it then failed cleanly) does not make a
/// later job's SIGSEGV `oom`: an exit is classified from what the process wrote since
/// its current job was leased, and that is the evidence kept.
#[tokio::test]
async fn an_earlier_jobs_log_is_not_evidence_for_a_later_crash() {
    let s = start("", "", ONE_ATTEMPT).await;
    let first = run_mode(&s, "log_memory", "").await;
    assert_eq!(only_failure(&first).kind, "invalid_input", "{first:?}");
    let j = run_mode(&s, "segv", "").await;
    let f = only_failure(&j);
    assert_eq!((f.kind.as_str(), f.signal), ("crash", Some(11)), "{f:?}");
    assert!(!f.stderr_tail.contains("MemoryError"), "{f:?}");
}

/// SIGKILL from outside while busy → `crash` at once (no lease expiry: the lease is
/// 60 s), then the pool size is restored.
#[tokio::test]
async fn sigkill_from_outside_is_crash_at_once() {
    let s = start("", "", ONE_ATTEMPT).await;
    let job = s.submit_with("txt", "sleep", b"x", r#"{"mode":"sleep"}"#).await;
    let st = s.wait_status(T, "the worker to be busy", |st| st.pools[0].workers[0].state == "busy").await;
    let w = &st.pools[0].workers[0];
    assert_eq!(w.job_id, job.id);
    let killed_at = Instant::now();
    // SAFETY: kill(2) on the worker's pid.
    unsafe { libc::kill(w.pid as i32, libc::SIGKILL) };
    let j = s.wait_for(&job.id, T, |j| j.state == "dead").await;
    assert!(killed_at.elapsed() < Duration::from_secs(5), "failed only after {:?}", killed_at.elapsed());
    let f = only_failure(&j);
    assert_eq!((f.kind.as_str(), f.signal), ("crash", Some(9)), "{f:?}");
    s.wait_status(T, "the pool to be whole again", |st| st.pools[0].live == 1 && st.pools[0].workers[0].pid != w.pid && st.pools[0].workers[0].state == "idle").await;
}

/// A busy loop hits the per-job CPU budget (`cpu_secs`) → SIGXCPU → `cpu_limit`.
#[tokio::test]
async fn busy_loop_is_cpu_limit() {
    let s = start("", "cpu_secs = 1", ONE_ATTEMPT).await;
    let j = run_mode(&s, "busy", "").await;
    let f = only_failure(&j);
    assert_eq!((f.kind.as_str(), f.signal), ("cpu_limit", Some(24)), "{f:?}");
}

/// Sleeping past `job_timeout_secs` → SIGTERM, grace, SIGKILL → `timeout`.
#[tokio::test]
async fn sleeping_past_the_job_timeout_is_timeout() {
    let s = start("job_timeout_secs = 1", "", ONE_ATTEMPT).await;
    let started = Instant::now();
    let j = run_mode(&s, "sleep", "").await;
    let f = only_failure(&j);
    assert_eq!(f.kind, "timeout", "{f:?}");
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert!(f.signal.is_some() || f.exit_code.is_some(), "no exit evidence: {f:?}");
}

/// A process tree whose resident size passes `rss_mb` is killed as a group → `oom`,
/// with the peak resident size as evidence.
#[tokio::test]
async fn process_tree_past_rss_mb_is_oom() {
    let s = start("", "rss_mb = 150", ONE_ATTEMPT).await;
    let j = run_mode(&s, "rss", r#","mb":300"#).await;
    let f = only_failure(&j);
    assert_eq!(f.kind, "oom", "{f:?}");
    assert!(f.peak_rss_bytes > 150 << 20, "{f:?}");
    assert!(f.reason.contains("resident size"), "{f:?}");
}

/// `[failures] permanent` changes the policy: a crash dead-letters at once even
/// with attempts left.
#[tokio::test]
async fn failure_policy_is_config() {
    venv_ready();
    let text = config("", "", "max_attempts = 5\nlease_secs = 60\nbackoff_base_ms = 50\nbackoff_max_ms = 100") + "\n[failures]\npermanent = [\"crash\"]\n";
    let s = Server::start_config(&text);
    s.wait_status(T, "the worker to poll", |st| st.pools[0].workers[0].state == "idle").await;
    let j = run_mode(&s, "segv", "").await;
    assert_eq!(j.state, "dead");
    assert!(only_failure(&j).permanent);
}

/// A command that exits at start: the pool goes degraded and backs off (no busy
/// loop, the supervisor stays idle); a SIGHUP with a working command recovers it.
#[tokio::test]
async fn crash_loop_degrades_backs_off_and_recovers_after_sighup() {
    venv_ready();
    let broken = config("", "", ONE_ATTEMPT).replace(r#""{repo}/tests/workers/misbehave.py""#, r#""-c", "import sys; sys.exit(3)""#);
    let s = Server::start_config(&broken);
    let st = s.wait_status(T, "the pool to be degraded", |st| st.pools[0].degraded).await;
    assert!(st.pools[0].last_error.contains("exited with code 3"), "{:?}", st.pools[0]);
    // Backing off: few restarts over the next 3 s, and little supervisor CPU.
    let (r0, cpu0) = (s.status().await.pools[0].restarts, cpu_secs(s.pid()));
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (r1, cpu1) = (s.status().await.pools[0].restarts, cpu_secs(s.pid()));
    assert!(r1 - r0 <= 4, "{} restarts in 3 s while degraded", r1 - r0);
    assert!(cpu1 - cpu0 < 0.6, "supervisor used {:.2} CPU s in 3 s while degraded", cpu1 - cpu0);

    s.rewrite_config(&config("", "", ONE_ATTEMPT));
    s.signal(libc::SIGHUP);
    let st = s.wait_status(Duration::from_secs(90), "recovery", |st| !st.pools[0].degraded && st.pools[0].workers[0].state == "idle").await;
    assert_eq!(st.pools[0].live, 1);
    assert_eq!(run_mode(&s, "ok", "").await.state, "succeeded");
}

/// A command that does not exist (or is not executable) is refused at start-up with
/// an error naming the key (`pools.misbehave.command`) and the command, before the data
/// dir is created.
#[tokio::test]
async fn missing_command_names_pool_and_command() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("supervisor.toml");
    let plain = dir.path().join("worker.py");
    std::fs::write(&plain, "print('not executable')\n").unwrap();
    let plain = plain.to_str().unwrap().to_string();
    for (command, why) in [("/nonexistent/worker", "no such file"), (plain.as_str(), "not executable")] {
        let text = config("", "", ONE_ATTEMPT).replace(r#""{repo}/.venv/bin/python", "{repo}/tests/workers/misbehave.py""#, &format!("{command:?}"));
        std::fs::write(&cfg, text.replace("{repo}", env!("CARGO_MANIFEST_DIR"))).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_telha")).current_dir(dir.path()).args(["--config", cfg.to_str().unwrap(), "serve"]).output().unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("pools.misbehave.command") && err.contains(command) && err.contains(why), "{err}");
        assert!(!dir.path().join("data").exists(), "the data dir was created before the refusal");
    }
}

/// SIGHUP grows the pool, then shrinks it while workers are busy; every job finishes.
#[tokio::test]
async fn sighup_resizes_without_losing_jobs() {
    let s = start("workers = 1", "", ONE_ATTEMPT).await;
    s.rewrite_config(&config("workers = 3", "", ONE_ATTEMPT));
    s.signal(libc::SIGHUP);
    s.wait_status(T, "three idle workers", |st| st.pools[0].workers.iter().filter(|w| w.state == "idle").count() == 3).await;
    let mut ids = Vec::new();
    for i in 0..6 {
        ids.push(s.submit_with("txt", &format!("j{i}"), b"x", r#"{"mode":"sleep","secs":0.5}"#).await.id);
    }
    s.wait_status(T, "busy workers", |st| st.pools[0].workers.iter().filter(|w| w.state == "busy").count() >= 2).await;
    s.rewrite_config(&config("workers = 1", "", ONE_ATTEMPT));
    s.signal(libc::SIGHUP);
    for id in &ids {
        let j = s.wait_for(id, T, |j| j.state == "succeeded" || j.state == "dead").await;
        assert_eq!(j.state, "succeeded", "{j:?}");
    }
    let st = s.wait_status(T, "one worker left", |st| st.pools[0].workers.len() == 1 && st.pools[0].live == 1).await;
    assert_eq!(st.pools[0].desired, 1);
}

/// `max_jobs_per_worker` replaces a worker gracefully after N jobs.
#[tokio::test]
async fn workers_are_recycled_after_max_jobs() {
    let s = start("max_jobs_per_worker = 2", "", ONE_ATTEMPT).await;
    let first = s.status().await.pools[0].workers[0].pid;
    for i in 0..2 {
        assert_eq!(run_mode(&s, "ok", &format!(r#","n":{i}"#)).await.state, "succeeded");
    }
    let st = s.wait_status(T, "a replacement worker", |st| st.pools[0].workers[0].pid != first && st.pools[0].workers[0].state == "idle").await;
    assert_eq!(st.pools[0].restarts, 0, "a recycle is not a crash");
    assert!(!st.pools[0].degraded);
}

/// SIGTERM drains: the in-flight job finishes, then the server exits 0.
#[tokio::test]
async fn sigterm_lets_in_flight_jobs_finish() {
    let mut s = start("", "", ONE_ATTEMPT).await;
    let job = s.submit_with("txt", "slow", b"x", r#"{"mode":"sleep","secs":1}"#).await;
    s.wait_status(T, "busy", |st| st.pools[0].workers[0].state == "busy").await;
    s.signal(libc::SIGTERM);
    let status = s.wait_exit(T).await.unwrap_or_else(|| panic!("server did not exit:\n{}", s.log()));
    assert!(status.success(), "{status:?}");
    s.restart();
    let j = s.job(&job.id).await;
    assert_eq!(j.state, "succeeded", "{j:?}");
}

/// Past `shutdown_grace_secs`, unfinished jobs go back to `queued` without costing an attempt.
#[tokio::test]
async fn sigterm_past_the_grace_requeues_without_charging() {
    venv_ready();
    let text = config("", "", ONE_ATTEMPT).replace("shutdown_grace_secs = 10", "shutdown_grace_secs = 0.5");
    let mut s = Server::start_config(&text);
    s.wait_status(T, "idle", |st| st.pools[0].workers[0].state == "idle").await;
    let job = s.submit_with("txt", "slow", b"x", r#"{"mode":"sleep"}"#).await;
    s.wait_status(T, "busy", |st| st.pools[0].workers[0].state == "busy").await;
    s.signal(libc::SIGTERM);
    assert!(s.wait_exit(T).await.expect("server exited").success());
    s.restart();
    let j = s.job(&job.id).await;
    assert_eq!((j.state.as_str(), j.attempts), ("queued", 0), "{j:?}");
    assert!(j.failures.is_empty(), "{j:?}");
}

/// `kill -9` of the supervisor leaves no worker process behind.
#[tokio::test]
async fn kill9_of_the_supervisor_leaves_no_orphans() {
    let mut s = start("workers = 2", "", ONE_ATTEMPT).await;
    let pids: Vec<u32> = s.wait_status(T, "two workers", |st| st.pools[0].workers.iter().filter(|w| w.state == "idle").count() == 2).await.pools[0].workers.iter().map(|w| w.pid).collect();
    s.kill9();
    let start = Instant::now();
    // SAFETY: kill(pid, 0) only checks existence.
    while pids.iter().any(|p| unsafe { libc::kill(*p as i32, 0) } == 0 && !is_zombie(*p)) {
        assert!(start.elapsed() < Duration::from_secs(5), "worker processes survived the supervisor: {pids:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map(|s| s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z'))).unwrap_or(true)
}

/// CPU seconds (user + system) a process has used.
fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let rest: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let ticks: f64 = rest.get(11).and_then(|v| v.parse().ok()).unwrap_or(0.0) + rest.get(12).and_then(|v| v.parse().ok()).unwrap_or(0.0);
    // SAFETY: sysconf has no preconditions.
    ticks / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}
