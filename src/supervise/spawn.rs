//! Starting worker processes: one long-lived spawner thread (the parent-death
//! signal fires when the *thread* that forked the child exits, NOTES.md), each child
//! in its own process group, under rlimits, with a clean environment; a waiter
//! thread per child reports its exit, and reader threads send its stdout/stderr to
//! the log and keep the last 8 KiB of stderr as evidence.
use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{mpsc as std_mpsc, Arc, Mutex};

use nix::sys::resource::{setrlimit, Resource};
use tokio::sync::oneshot;

use super::exit::Exit;

/// Bytes of stderr kept as evidence.
pub const STDERR_TAIL_BYTES: usize = 8 * 1024;
/// Longest log line taken from a worker; the rest of the line is dropped.
const MAX_LINE_BYTES: usize = 16 * 1024;
use crate::config::CLEAN_PATH;

/// What to start.
#[derive(Debug, Clone)]
pub struct SpawnSpec {
    pub pool: String,
    pub worker_id: String,
    pub program: String,
    pub args: Vec<String>,
    /// TELHA_* plus the pool's env table.
    pub env: BTreeMap<String, String>,
    pub cwd: Option<PathBuf>,
    pub memory_mb: Option<u64>,
    pub cpu_secs: Option<u64>,
    pub open_files: Option<u64>,
}

/// The last bytes a process wrote to stderr (and how many it wrote in all), and whether
/// the stream has ended.
#[derive(Debug, Default, Clone)]
pub struct Tail(Arc<Mutex<TailBytes>>, Arc<std::sync::atomic::AtomicBool>);

#[derive(Debug, Default)]
struct TailBytes {
    kept: VecDeque<u8>,
    /// Every byte ever pushed, so a mark says where later output starts.
    written: u64,
    /// When each kept line was read, with the byte count before it: a lease's instant
    /// finds where that job's output starts.
    lines: VecDeque<(std::time::Instant, u64)>,
}

impl Tail {
    /// Waits (briefly) until the reader saw the end of stderr, so the tail is complete.
    pub async fn settled(&self) {
        for _ in 0..40 {
            if self.1.load(std::sync::atomic::Ordering::Acquire) {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }

    fn push(&self, bytes: &[u8]) {
        if let Ok(mut t) = self.0.lock() {
            let start = t.written;
            t.lines.push_back((std::time::Instant::now(), start));
            t.kept.extend(bytes);
            t.written += bytes.len() as u64;
            let excess = t.kept.len().saturating_sub(STDERR_TAIL_BYTES);
            t.kept.drain(..excess);
            let kept_from = t.written - t.kept.len() as u64;
            while t.lines.len() > 1 && t.lines.get(1).is_some_and(|l| l.1 <= kept_from) {
                t.lines.pop_front();
            }
        }
    }

    /// Where the output written from now on starts (see [`Tail::text_since`]).
    pub fn mark(&self) -> u64 {
        self.0.lock().map(|t| t.written).unwrap_or(0)
    }

    /// Where the output read at or after `at` starts: the mark of a job leased at `at`,
    /// however late the supervisor hears of the lease.
    pub fn mark_at(&self, at: std::time::Instant) -> u64 {
        self.0.lock().map(|t| t.lines.iter().find(|(when, _)| *when >= at).map_or(t.written, |l| l.1)).unwrap_or(0)
    }

    /// The kept tail: the last [`STDERR_TAIL_BYTES`] the process wrote.
    pub fn text(&self) -> String {
        self.text_since(0)
    }

    /// What the process wrote after `mark` (of it, what the tail still keeps): the
    /// evidence of one job, without what earlier jobs logged.
    pub fn text_since(&self, mark: u64) -> String {
        let bytes: Vec<u8> = self
            .0
            .lock()
            .map(|t| {
                let kept_from = t.written - t.kept.len() as u64;
                let skip = usize::try_from(mark.saturating_sub(kept_from)).unwrap_or(usize::MAX);
                t.kept.iter().skip(skip).copied().collect()
            })
            .unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// A started process.
#[derive(Debug)]
pub struct Spawned {
    pub pid: u32,
    pub stderr_tail: Tail,
    /// Resolves with the exit once the process (not its group) is gone.
    pub exited: oneshot::Receiver<Exit>,
}

#[derive(Debug, thiserror::Error)]
#[error("pool {pool}: cannot start {command:?}: {error}")]
pub struct SpawnError {
    pub pool: String,
    pub command: String,
    pub error: std::io::Error,
}

type Request = (SpawnSpec, oneshot::Sender<Result<Spawned, SpawnError>>);

/// Checks that `program` names an executable file (a path, or a name on the clean
/// PATH workers get), so a pool whose command cannot start is refused up front.
pub fn check_command(pool: &str, program: &str) -> Result<(), SpawnError> {
    match crate::config::program_problem(program) {
        None => Ok(()),
        Some(msg) => Err(SpawnError { pool: pool.to_string(), command: program.to_string(), error: std::io::Error::new(std::io::ErrorKind::NotFound, msg) }),
    }
}

/// Handle to the spawner thread. Cheap to clone.
#[derive(Clone)]
pub struct Spawner {
    tx: std_mpsc::Sender<Request>,
}

impl Spawner {
    pub fn start() -> std::io::Result<Self> {
        let (tx, rx) = std_mpsc::channel::<Request>();
        std::thread::Builder::new().name("telha-spawner".into()).spawn(move || {
            // Lives as long as the process: children's parent-death signal is tied to it.
            while let Ok((spec, reply)) = rx.recv() {
                let _ = reply.send(spawn(spec));
            }
            // Every handle is gone; keep the thread alive anyway so that children
            // spawned from it are not killed before the process itself ends.
            loop {
                std::thread::park();
            }
        })?;
        Ok(Self { tx })
    }

    pub async fn spawn(&self, spec: SpawnSpec) -> Result<Spawned, SpawnError> {
        let (reply, rx) = oneshot::channel();
        let (pool, command) = (spec.pool.clone(), spec.program.clone());
        let gone = |what: &str| SpawnError { pool: pool.clone(), command: command.clone(), error: std::io::Error::other(what.to_string()) };
        self.tx.send((spec, reply)).map_err(|_| gone("the spawner thread is gone"))?;
        rx.await.map_err(|_| gone("the spawner thread dropped the request"))?
    }
}

fn spawn(spec: SpawnSpec) -> Result<Spawned, SpawnError> {
    let err = |error| SpawnError { pool: spec.pool.clone(), command: std::iter::once(spec.program.as_str()).chain(spec.args.iter().map(String::as_str)).collect::<Vec<_>>().join(" "), error };
    let mut cmd = Command::new(&spec.program);
    cmd.args(&spec.args)
        .env_clear()
        .env("PATH", CLEAN_PATH)
        .envs(&spec.env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(dir) = &spec.cwd {
        cmd.current_dir(dir);
    }
    let parent = std::process::id();
    let (mem, cpu, files) = (spec.memory_mb, spec.cpu_secs, spec.open_files);
    // SAFETY: the closure runs between fork and exec in the child; it only makes
    // async-signal-safe system calls (prctl, getppid, setrlimit, getrlimit) and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL).map_err(std::io::Error::from)?;
            // The parent may have died before the prctl took effect.
            if nix::unistd::getppid().as_raw() as u32 != parent {
                return Err(std::io::Error::other("the supervisor is gone"));
            }
            setrlimit(Resource::RLIMIT_CORE, 0, 0).map_err(std::io::Error::from)?;
            // The core opted out of transparent huge pages (main.rs); a worker gets the
            // host's policy (polars' large buffers may gain from it). A hint: ignored if refused.
            let _ = nix::sys::prctl::set_thp_disable(false);
            if let Some(mb) = mem {
                let bytes = mb.saturating_mul(1 << 20);
                setrlimit(Resource::RLIMIT_AS, bytes, bytes).map_err(std::io::Error::from)?;
            }
            if let Some(n) = files {
                let (_, hard) = nix::sys::resource::getrlimit(Resource::RLIMIT_NOFILE).map_err(std::io::Error::from)?;
                setrlimit(Resource::RLIMIT_NOFILE, n.min(hard), n.min(hard)).map_err(std::io::Error::from)?;
            }
            if let Some(secs) = cpu {
                // Only the soft limit: it is raised per job (prlimit), and the hard limit
                // cannot be raised again without CAP_SYS_RESOURCE.
                let (_, hard) = nix::sys::resource::getrlimit(Resource::RLIMIT_CPU).map_err(std::io::Error::from)?;
                setrlimit(Resource::RLIMIT_CPU, secs.min(hard), hard).map_err(std::io::Error::from)?;
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().map_err(err)?;
    let pid = child.id();
    let tail = Tail::default();
    let tags = (spec.pool.clone(), spec.worker_id.clone());
    if let Some(out) = child.stdout.take() {
        let tags = tags.clone();
        let _ = std::thread::Builder::new().name(format!("out-{pid}")).spawn(move || pump(out, "stdout", &tags.0, &tags.1, pid, None));
    }
    if let Some(errp) = child.stderr.take() {
        let tail = tail.clone();
        let tags = tags.clone();
        let _ = std::thread::Builder::new().name(format!("err-{pid}")).spawn(move || pump(errp, "stderr", &tags.0, &tags.1, pid, Some(tail)));
    }
    let (exit_tx, exited) = oneshot::channel();
    std::thread::Builder::new()
        .name(format!("wait-{pid}"))
        .spawn(move || {
            let exit = match child.wait() {
                Ok(status) => Exit::from_status(status),
                Err(_) => Exit { code: None, signal: None },
            };
            let _ = exit_tx.send(exit);
        })
        .map_err(err)?;
    Ok(Spawned { pid, stderr_tail: tail, exited })
}

/// Copies a child's output to the log line by line (tagged with pool, worker and
/// pid), keeping the stderr tail.
fn pump(stream: impl Read, which: &str, pool: &str, worker: &str, pid: u32, tail: Option<Tail>) {
    let mut reader = BufReader::with_capacity(64 * 1024, stream);
    let mut line = Vec::with_capacity(256);
    loop {
        line.clear();
        match reader.by_ref().take(MAX_LINE_BYTES as u64).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => {
                if let Some(t) = &tail {
                    t.1.store(true, std::sync::atomic::Ordering::Release);
                }
                return;
            }
            Ok(_) => {
                if let Some(t) = &tail {
                    t.push(&line);
                }
                let text = String::from_utf8_lossy(&line);
                let text = text.trim_end();
                if !text.is_empty() {
                    tracing::info!(target: "telha::worker", pool, worker, pid, stream = which, "{text}");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tail_gives_what_was_written_since_a_mark() {
        let t = Tail::default();
        t.push(b"MemoryError\n");
        let mark = t.mark();
        t.push(b"Segmentation fault\n");
        assert_eq!(t.text_since(mark), "Segmentation fault\n");
        assert_eq!(t.text(), "MemoryError\nSegmentation fault\n");
        // A mark older than the kept window gives the whole window.
        t.push(&vec![b'x'; STDERR_TAIL_BYTES]);
        assert_eq!(t.text_since(mark).len(), STDERR_TAIL_BYTES);
        assert_eq!(t.text_since(t.mark()), "");
        let t = Tail::default();
        t.push(b"earlier job\n");
        let leased = std::time::Instant::now();
        t.push(b"this job\n");
        assert_eq!(t.text_since(t.mark_at(leased)), "this job\n");
    }
}
