//! The pool actor: one per `[pools.NAME]`. Keeps `workers` processes alive, knows
//! which job each one holds (from the core's lease events), enforces the job
//! timeout, the resident-size watchdog and the per-job CPU budget, classifies
//! every exit and fails the job the process held at once, with evidence; then
//! respawns, backing off when the pool is crash-looping.
use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use tokio::sync::{broadcast, mpsc, oneshot};

use super::{ActorGone, Core, CoreEvent};
use crate::config::PoolConfig;
use crate::store::records::FailureRecord;
use crate::supervise::exit::{classify, Exit, KillReason};
use crate::supervise::procfs;
use crate::supervise::spawn::{SpawnSpec, Spawner, Tail};

/// How often timers and watchdogs are checked.
const TICK: Duration = Duration::from_millis(100);
/// Longest wait between restarts of a crash-looping pool.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Where a worker is, as `telha status` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerState {
    Starting,
    Idle,
    Busy,
    Backoff,
    Stopping,
}

impl WorkerState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Starting => "starting",
            Self::Idle => "idle",
            Self::Busy => "busy",
            Self::Backoff => "backoff",
            Self::Stopping => "stopping",
        }
    }
}

#[derive(Debug, Clone)]
pub struct WorkerStatus {
    pub worker_id: String,
    pub pid: u32,
    pub state: WorkerState,
    pub job_id: Option<u64>,
    pub restarts: u32,
    pub jobs_done: u64,
}

#[derive(Debug, Clone)]
pub struct PoolStatus {
    pub name: String,
    pub formats: Vec<String>,
    pub desired: u32,
    pub live: u32,
    pub degraded: bool,
    pub restarts: u32,
    pub last_error: String,
    pub workers: Vec<WorkerStatus>,
}

enum Msg {
    Reload(Box<PoolConfig>),
    Stop { grace: Duration, reply: oneshot::Sender<()> },
    Status(oneshot::Sender<PoolStatus>),
}

/// A worker process ended: which slot, which of its processes, how.
struct Exited {
    slot: usize,
    generation: u64,
    exit: Exit,
}

/// Handle to one pool actor.
#[derive(Clone)]
pub struct Pool {
    tx: mpsc::Sender<Msg>,
}

/// Where spawned workers find the core.
#[derive(Clone, Debug)]
pub struct CoreContact {
    pub addr: String,
    pub token: String,
    /// The CA file workers verify the core's TLS certificate with (`TELHA_CA`), when TLS is on.
    pub ca: Option<String>,
}

impl Pool {
    pub fn spawn(name: String, config: PoolConfig, core: Core, spawner: Spawner, contact: CoreContact) -> Self {
        let (tx, rx) = mpsc::channel(256);
        let events = core.events.subscribe();
        let actor = PoolActor {
            name,
            slots: Vec::new(),
            config,
            core,
            spawner,
            contact,
            rx,
            exits: tokio::task::JoinSet::new(),
            events,
            generation: 0,
            restarts: VecDeque::new(),
            total_restarts: 0,
            degraded: false,
            failures_in_row: 0,
            last_error: String::new(),
            stopping: None,
        };
        tokio::spawn(actor.run());
        Self { tx }
    }

    pub async fn reload(&self, config: PoolConfig) -> Result<(), ActorGone> {
        self.tx.send(Msg::Reload(Box::new(config))).await.map_err(|_| ActorGone("pool"))
    }

    /// Stops every worker: SIGTERM (each finishes its current job), SIGKILL past `grace`.
    pub async fn stop(&self, grace: Duration) {
        let (reply, rx) = oneshot::channel();
        if self.tx.send(Msg::Stop { grace, reply }).await.is_ok() {
            let _ = rx.await;
        }
    }

    pub async fn status(&self) -> Result<PoolStatus, ActorGone> {
        let (reply, rx) = oneshot::channel();
        self.tx.send(Msg::Status(reply)).await.map_err(|_| ActorGone("pool"))?;
        rx.await.map_err(|_| ActorGone("pool"))
    }
}

struct Proc {
    generation: u64,
    pid: u32,
    worker_id: String,
    tail: Tail,
    /// Where the current (or last) job's stderr starts in `tail`: an exit is classified
    /// from what the process wrote since its job was leased, not from an earlier job's log.
    job_mark: u64,
    polling: bool,
    /// The job held: (id, lease number, since).
    job: Option<(u64, u64, Instant)>,
    /// Where a prefetching worker writes the job it runs (`TELHA_RUNNING_FILE`).
    running_file: Option<PathBuf>,
    /// The worker's own temporary folder (its `TMPDIR`), removed when it exits.
    tmp_dir: Option<PathBuf>,
    jobs_done: u64,
    killed: Option<KillReason>,
    /// When the supervisor sent SIGTERM, to escalate to SIGKILL after the grace.
    term_at: Option<Instant>,
    peak_rss: u64,
}

#[derive(Default)]
struct Slot {
    proc: Option<Proc>,
    /// Not before this instant (crash-loop backoff).
    next_start: Option<Instant>,
    restarts: u32,
    /// Shrunk away: stop after the current job and do not come back.
    retire: bool,
}

/// The next worker process's generation, unique in this core process (worker ids are
/// `<pool>-<slot>-<generation>`).
static NEXT_GENERATION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

struct PoolActor {
    name: String,
    config: PoolConfig,
    core: Core,
    spawner: Spawner,
    contact: CoreContact,
    rx: mpsc::Receiver<Msg>,
    /// One waiter per live process, resolving with its exit (the actor holds no sender
    /// to its own inbox).
    exits: tokio::task::JoinSet<Option<Exited>>,
    events: broadcast::Receiver<CoreEvent>,
    slots: Vec<Slot>,
    generation: u64,
    /// Unexpected exits within the restart window (OTP restart intensity).
    restarts: VecDeque<Instant>,
    total_restarts: u32,
    degraded: bool,
    failures_in_row: u32,
    last_error: String,
    stopping: Option<(Instant, oneshot::Sender<()>)>,
}

impl PoolActor {
    async fn run(mut self) {
        self.resize();
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                msg = self.rx.recv() => match msg {
                    Some(msg) => self.handle(msg).await,
                    None => return,
                },
                Some(done) = self.exits.join_next(), if !self.exits.is_empty() => {
                    if let Ok(Some(Exited { slot, generation, exit })) = done {
                        self.on_exit(slot, generation, exit).await;
                    }
                }
                ev = self.events.recv() => match ev {
                    Ok(ev) => self.on_event(ev),
                    Err(broadcast::error::RecvError::Lagged(n)) => tracing::warn!(pool = %self.name, missed = n, "lease events lagged"),
                    Err(broadcast::error::RecvError::Closed) => return,
                },
                _ = tick.tick() => {
                    self.on_tick().await;
                    if self.stopping.is_some() && self.slots.iter().all(|s| s.proc.is_none()) {
                        if let Some((_, reply)) = self.stopping.take() {
                            let _ = reply.send(());
                        }
                        tracing::info!(pool = %self.name, "pool stopped");
                        return;
                    }
                }
            }
        }
    }

    fn slot_of(&mut self, worker: &str) -> Option<&mut Proc> {
        self.slots.iter_mut().filter_map(|s| s.proc.as_mut()).find(|p| p.worker_id == worker)
    }

    fn on_event(&mut self, ev: CoreEvent) {
        let queue = self.core.queue.clone();
        let cpu_secs = self.config.limits.cpu_secs;
        let max_jobs = self.config.max_jobs_per_worker;
        match ev {
            CoreEvent::Polling { worker } => {
                let name = self.name.clone();
                let Some(p) = self.slot_of(&worker) else { return };
                p.polling = true;
                if self.degraded {
                    tracing::info!(pool = %name, "pool recovered: a worker is polling again");
                    self.degraded = false;
                    self.failures_in_row = 0;
                }
            }
            CoreEvent::Granted { worker, job, attempt, at } => {
                let Some(p) = self.slot_of(&worker) else { return };
                p.job = Some((job, attempt, Instant::now()));
                p.job_mark = p.tail.mark_at(at);
                if let Some(budget) = cpu_secs {
                    if let Err(e) = procfs::grant_cpu(p.pid, budget) {
                        tracing::warn!(worker = %worker, error = %e, "cannot set the per-job CPU limit");
                    }
                }
            }
            CoreEvent::Ended { worker, job } => {
                let retire: Vec<bool> = self.slots.iter().map(|s| s.retire).collect();
                let Some((i, p)) = self.slots.iter_mut().enumerate().find_map(|(i, s)| s.proc.as_mut().filter(|p| p.worker_id == worker).map(|p| (i, p))) else {
                    return;
                };
                if p.job.is_some_and(|(j, _, _)| j == job) {
                    p.job = None;
                    p.jobs_done += 1;
                }
                let recycle = max_jobs.is_some_and(|n| p.jobs_done >= n);
                if (recycle || retire[i]) && p.job.is_none() && p.killed.is_none() {
                    if recycle {
                        tracing::info!(pool = %self.name, worker = %p.worker_id, jobs = p.jobs_done, "recycling worker after max_jobs_per_worker");
                    }
                    terminate(p, KillReason::Stop, &queue);
                }
            }
            // Observers' events (crate::ops).
            _ => {}
        }
    }

    async fn handle(&mut self, msg: Msg) {
        match msg {
            Msg::Reload(config) => {
                tracing::info!(pool = %self.name, workers = config.workers, "pool reconfigured");
                self.config = *config;
                self.resize();
            }
            Msg::Stop { grace, reply } => {
                let queue = self.core.queue.clone();
                self.stopping = Some((Instant::now() + grace, reply));
                for s in &mut self.slots {
                    s.retire = true;
                    if let Some(p) = s.proc.as_mut() {
                        if p.killed.is_none() {
                            terminate(p, KillReason::Stop, &queue);
                        }
                    }
                }
            }
            Msg::Status(reply) => {
                let _ = reply.send(self.status());
            }
        }
    }

    /// Matches the slots to `config.workers`: new slots start at the next tick;
    /// extra slots retire after their current job.
    fn resize(&mut self) {
        let queue = self.core.queue.clone();
        let want = self.config.workers as usize;
        for (i, s) in self.slots.iter_mut().enumerate() {
            s.retire = i >= want;
            if s.retire {
                if let Some(p) = s.proc.as_mut() {
                    if p.job.is_none() && p.killed.is_none() {
                        terminate(p, KillReason::Stop, &queue);
                    }
                }
            }
        }
        while self.slots.len() < want {
            self.slots.push(Slot::default());
        }
    }

    async fn on_tick(&mut self) {
        let queue = self.core.queue.clone();
        let now = Instant::now();
        let grace = Duration::from_secs_f64(self.config.kill_grace_secs);
        let timeout = self.config.job_timeout_secs.map(Duration::from_secs_f64);
        let rss_limit = self.config.limits.rss_mb.map(|mb| mb << 20);
        let stop_deadline = self.stopping.as_ref().map(|(d, _)| *d);
        for s in &mut self.slots {
            let Some(p) = s.proc.as_mut() else { continue };
            // Evidence: the high-water mark of the worker (or its whole group, for watched pools).
            let rss = match rss_limit {
                Some(_) => procfs::group_rss_bytes(p.pid),
                None => procfs::peak_rss_bytes(p.pid).unwrap_or(0),
            };
            p.peak_rss = p.peak_rss.max(rss);
            if let (Some(limit), None) = (rss_limit, p.killed) {
                if rss > limit {
                    tracing::warn!(worker = %p.worker_id, rss_mb = rss >> 20, "resident size over rss_mb: killing the process group");
                    p.killed = Some(KillReason::RssLimit { rss_bytes: rss });
                    let _ = killpg(Pid::from_raw(p.pid as i32), Signal::SIGKILL);
                }
            }
            if let (Some(t), Some((job, _, since)), None) = (timeout, p.job, p.killed) {
                if now.duration_since(since) > t {
                    tracing::warn!(worker = %p.worker_id, job, "job past job_timeout_secs: stopping the worker");
                    terminate(p, KillReason::Timeout, &queue);
                }
            }
            let escalate = match (p.term_at, stop_deadline) {
                (_, Some(d)) if now >= d => true,
                (Some(at), None) => now.duration_since(at) > grace,
                _ => false,
            };
            if escalate && p.killed.is_some() {
                let _ = killpg(Pid::from_raw(p.pid as i32), Signal::SIGKILL);
            }
        }
        if self.stopping.is_none() {
            self.start_due().await;
        }
    }

    async fn start_due(&mut self) {
        let now = Instant::now();
        for i in 0..self.slots.len() {
            let s = &self.slots[i];
            if s.proc.is_some() || s.retire || s.next_start.is_some_and(|t| t > now) {
                continue;
            }
            self.start(i).await;
        }
        // Retired slots at the end that are empty go away.
        while self.slots.last().is_some_and(|s| s.retire && s.proc.is_none()) {
            self.slots.pop();
        }
    }

    async fn start(&mut self, i: usize) {
        // Numbered across every pool actor of this core: a pool removed and added back by
        // reloads starts afresh, and its workers must not take the ids of processes the
        // lease actor knows are gone.
        self.generation = NEXT_GENERATION.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let generation = self.generation;
        let worker_id = format!("{}-{}-{}", self.name, i, generation);
        let mut env: BTreeMap<String, String> = self.config.env.clone();
        env.insert("TELHA_CORE_ADDR".into(), self.contact.addr.clone());
        env.insert("TELHA_WORKER_ID".into(), worker_id.clone());
        env.insert("TELHA_TOKEN".into(), self.contact.token.clone());
        env.insert("TELHA_FORMATS".into(), self.config.formats.join(","));
        let mut running_file = None;
        if self.config.max_in_flight > 1 {
            env.insert("TELHA_MAX_IN_FLIGHT".into(), self.config.max_in_flight.to_string());
            let path = running_path(&self.core.config().server.data_dir, &worker_id);
            env.insert("TELHA_RUNNING_FILE".into(), path.display().to_string());
            running_file = Some(path);
        }
        if let Some(ca) = &self.contact.ca {
            env.insert("TELHA_CA".into(), ca.clone());
        }
        // The pool's own TMPDIR (its env table) wins: the operator chose where.
        let data_dir = self.core.config().server.data_dir.clone();
        let tmp_dir = if env.contains_key("TMPDIR") { None } else { worker_tmp(&data_dir, &worker_id) };
        if let Some(dir) = &tmp_dir {
            env.insert("TMPDIR".into(), dir.display().to_string());
        }
        if let Some(dir) = pool_tmp(&data_dir, &self.name) {
            env.insert("TELHA_POOL_TMP".into(), dir.display().to_string());
        }
        let spec = SpawnSpec {
            pool: self.name.clone(),
            worker_id: worker_id.clone(),
            program: self.config.command[0].clone(),
            args: self.config.command[1..].to_vec(),
            env,
            cwd: self.core.config().path.as_ref().and_then(|p| p.parent().map(|d| if d.as_os_str().is_empty() { ".".into() } else { d.to_path_buf() })),
            memory_mb: self.config.limits.memory_mb,
            cpu_secs: self.config.limits.cpu_secs,
            open_files: self.config.limits.open_files,
        };
        match self.spawner.spawn(spec).await {
            Ok(spawned) => {
                tracing::info!(pool = %self.name, worker = %worker_id, pid = spawned.pid, "worker started");
                let exited = spawned.exited;
                self.exits.spawn(async move { exited.await.ok().map(|exit| Exited { slot: i, generation, exit }) });
                self.slots[i].proc = Some(Proc {
                    generation,
                    pid: spawned.pid,
                    worker_id,
                    tail: spawned.stderr_tail,
                    job_mark: 0,
                    polling: false,
                    job: None,
                    running_file,
                    tmp_dir,
                    jobs_done: 0,
                    killed: None,
                    term_at: None,
                    peak_rss: 0,
                });
            }
            Err(e) => {
                if let Some(dir) = tmp_dir {
                    remove_worker_tmp(dir);
                }
                tracing::error!(pool = %self.name, error = %e, "worker cannot start");
                self.last_error = e.to_string();
                self.note_restart(i);
            }
        }
    }

    /// Counts an unexpected exit (or failed start) towards the restart intensity and
    /// schedules the slot's next start.
    fn note_restart(&mut self, i: usize) {
        let now = Instant::now();
        let window = Duration::from_secs_f64(self.config.restart_window_secs);
        self.restarts.push_back(now);
        while self.restarts.front().is_some_and(|t| now.duration_since(*t) > window) {
            self.restarts.pop_front();
        }
        self.total_restarts += 1;
        self.slots[i].restarts += 1;
        if self.restarts.len() > self.config.max_restarts as usize {
            self.failures_in_row += 1;
            let backoff = Duration::from_millis(500u64.saturating_mul(1 << self.failures_in_row.min(7))).min(MAX_BACKOFF);
            if !self.degraded {
                tracing::warn!(pool = %self.name, restarts = self.restarts.len(), window_secs = self.config.restart_window_secs, "pool degraded: crash loop, backing off");
            }
            self.degraded = true;
            self.slots[i].next_start = Some(now + backoff);
            tracing::info!(pool = %self.name, slot = i, backoff_ms = backoff.as_millis() as u64, "next start delayed");
        } else {
            self.slots[i].next_start = None;
        }
    }

    async fn on_exit(&mut self, i: usize, generation: u64, exit: Exit) {
        let Some(slot) = self.slots.get_mut(i) else { return };
        if slot.proc.as_ref().is_none_or(|p| p.generation != generation) {
            return;
        }
        let Some(p) = slot.proc.take() else { return };
        p.tail.settled().await;
        let tail = p.tail.text_since(p.job_mark);
        let class = classify(exit, &tail, p.killed);
        let _ = self.core.events.send(CoreEvent::Exited { pool: self.name.clone(), slot: i, worker: p.worker_id.clone(), kind: class.kind.map(|k| k.as_str()), code: exit.code, signal: exit.signal });
        let stopping = self.stopping.is_some();
        let running = p.running_file.as_deref().and_then(read_running);
        if let Some(file) = &p.running_file {
            let _ = std::fs::remove_file(file);
        }
        if let Some(dir) = p.tmp_dir.clone() {
            remove_worker_tmp(dir);
        }
        match class.kind {
            None => {
                tracing::info!(pool = %self.name, worker = %p.worker_id, pid = p.pid, "worker stopped");
                // A job that reached its stream after the stop request goes back unharmed.
                match self.core.leases.release_worker(&p.worker_id).await {
                    Ok(jobs) if !jobs.is_empty() => tracing::info!(worker = %p.worker_id, ?jobs, "released the jobs of a stopped worker"),
                    Ok(_) => {}
                    Err(e) => tracing::error!(worker = %p.worker_id, error = %e, "cannot release the worker's jobs"),
                }
            }
            Some(kind) => {
                tracing::warn!(pool = %self.name, worker = %p.worker_id, pid = p.pid, kind = %kind, code = ?exit.code, signal = ?exit.signal, reason = %class.reason, "worker exited");
                if !stopping {
                    let failure = FailureRecord {
                        kind: kind.as_str().into(),
                        permanent: self.core.policy.is_permanent(kind),
                        reason: crate::failure::reason(kind, &class.reason),
                        worker_id: p.worker_id.clone(),
                        exit_code: exit.code,
                        signal: exit.signal,
                        stderr_tail: tail,
                        peak_rss_bytes: p.peak_rss,
                        ..Default::default()
                    };
                    match self.core.leases.fail_worker(&p.worker_id, running, failure).await {
                        Ok(jobs) if !jobs.is_empty() => tracing::warn!(pool = %self.name, worker = %p.worker_id, ?jobs, kind = %kind, "failed the jobs the worker held"),
                        Ok(_) => {}
                        Err(e) => tracing::error!(worker = %p.worker_id, error = %e, "cannot fail the worker's jobs"),
                    }
                }
            }
        }
        if stopping {
            return;
        }
        // Only exits the supervisor did not cause count towards the crash loop.
        if p.killed.is_none() {
            self.last_error = format!("{}: {}", p.worker_id, class.reason);
            self.note_restart(i);
        }
    }

    fn status(&self) -> PoolStatus {
        let now = Instant::now();
        let workers: Vec<WorkerStatus> = self
            .slots
            .iter()
            .enumerate()
            .map(|(i, s)| match &s.proc {
                Some(p) => WorkerStatus {
                    worker_id: p.worker_id.clone(),
                    pid: p.pid,
                    state: if p.killed.is_some() {
                        WorkerState::Stopping
                    } else if p.job.is_some() {
                        WorkerState::Busy
                    } else if p.polling {
                        WorkerState::Idle
                    } else {
                        WorkerState::Starting
                    },
                    job_id: p.job.map(|(j, _, _)| j),
                    restarts: s.restarts,
                    jobs_done: p.jobs_done,
                },
                None => WorkerStatus {
                    worker_id: format!("{}-{}", self.name, i),
                    pid: 0,
                    state: if s.next_start.is_some_and(|t| t > now) { WorkerState::Backoff } else { WorkerState::Starting },
                    job_id: None,
                    restarts: s.restarts,
                    jobs_done: 0,
                },
            })
            .collect();
        PoolStatus {
            name: self.name.clone(),
            formats: self.config.formats.clone(),
            desired: self.config.workers,
            live: workers.iter().filter(|w| w.pid != 0).count() as u32,
            degraded: self.degraded,
            restarts: self.total_restarts,
            last_error: self.last_error.clone(),
            workers,
        }
    }
}

/// `<data_dir>/run/<worker id>.running`, made ready for a new worker: the folder exists and
/// no file is left from an earlier process of that id (ids repeat across core restarts).
fn running_path(data_dir: &Path, worker_id: &str) -> PathBuf {
    let dir = data_dir.join("run");
    if let Err(e) = std::fs::create_dir_all(&dir) {
        tracing::warn!(dir = %dir.display(), error = %e, "cannot make the folder for running-job files");
    }
    let path = dir.join(format!("{worker_id}.running"));
    let _ = std::fs::remove_file(&path);
    path
}

/// Every worker's temporary folder is under this one in the data dir.
pub const WORKER_TMP: &str = "worker-tmp";

/// `<data_dir>/worker-tmp/<worker id>`, the worker's `TMPDIR`, made empty for a new worker
/// (ids repeat across core restarts) and private to it (0700). A worker killed mid-job
/// (oom, timeout, a crash) cannot clean up after itself: a transcoded CSV, a converter's
/// scratch files or Chromium's profile would pile up in the host's /tmp; here they go
/// when the worker exits. None (the inherited default) when the folder cannot be made.
fn worker_tmp(data_dir: &Path, worker_id: &str) -> Option<PathBuf> {
    let dir = data_dir.join(WORKER_TMP).join(worker_id);
    let _ = std::fs::remove_dir_all(&dir);
    private_dir(dir, "the worker's temporary folder (it keeps the inherited one)")
}

/// `dir` made (with its parents) and private to the core's user (0700); None, logged as
/// `what` could not be made, when that fails.
fn private_dir(dir: PathBuf, what: &str) -> Option<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&dir) {
        Ok(()) => Some(dir),
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot make {what}");
            None
        }
    }
}

/// Every pool's shared folder is under this one in the data dir.
pub const POOL_TMP: &str = "pool-tmp";

/// `<data_dir>/pool-tmp/<pool>` (0700), `TELHA_POOL_TMP`: what the workers of one pool share
/// while the core runs (the web pool's per-host turns), now that each has a TMPDIR of its
/// own. Kept across its workers' restarts, emptied when a core starts.
fn pool_tmp(data_dir: &Path, pool: &str) -> Option<PathBuf> {
    private_dir(data_dir.join(POOL_TMP).join(pool), "the pool's shared temporary folder")
}

/// Removes a worker's temporary folder off the actor's thread (it may hold gigabytes).
fn remove_worker_tmp(dir: PathBuf) {
    tokio::task::spawn_blocking(move || {
        if let Err(e) = std::fs::remove_dir_all(&dir) {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(dir = %dir.display(), error = %e, "cannot remove a worker's temporary folder");
            }
        }
    });
}

/// Removes what workers of an earlier core process left in their temporary folders (a core
/// killed with its workers cannot remove them). Called once the store is open: the store's
/// lock says no other core uses this data dir, so none of these folders is in use.
pub fn sweep_worker_tmp(data_dir: &Path) {
    for dir in [data_dir.join(WORKER_TMP), data_dir.join(POOL_TMP)] {
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => tracing::info!(dir = %dir.display(), "removed the temporary folders of an earlier run's workers"),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!(dir = %dir.display(), error = %e, "cannot remove the temporary folders of an earlier run's workers"),
        }
    }
}

/// The job a prefetching worker last said it runs: `<job id> <lease number>` (the harness
/// rewrites it as each job starts). None when there is no such file or it says nothing
/// readable: then every job the worker held is charged, as without prefetch.
fn read_running(path: &Path) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut words = text.split_whitespace();
    let found = (words.next()?.parse().ok()?, words.next()?.parse().ok()?);
    words.next().is_none().then_some(found)
}

/// SIGTERM to the worker's process group; the harness finishes its current job and exits.
/// A stopped worker is leased nothing more.
fn terminate(p: &mut Proc, why: KillReason, queue: &crate::actors::Queue) {
    let (queue, worker) = (queue.clone(), p.worker_id.clone());
    tokio::spawn(async move { queue.retire(worker).await });
    p.killed = Some(why);
    p.term_at = Some(Instant::now());
    let _ = killpg(Pid::from_raw(p.pid as i32), Signal::SIGTERM);
}

#[cfg(test)]
mod tests {
    use super::{read_running, running_path};

    #[test]
    fn the_running_file_says_one_job_and_lease_or_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = running_path(dir.path(), "text-0-1");
        assert_eq!(read_running(&path), None, "no file yet");
        for (text, want) in [
            ("17 3\n", Some((17, 3))),
            (&format!("{:<47}\n", "12 1"), Some((12, 1))),
            ("", None),
            ("17\n", None),
            ("17 3 4\n", None),
            ("x 3\n", None),
            ("-1 3\n", None),
        ] {
            std::fs::write(&path, text).unwrap();
            assert_eq!(read_running(&path), want, "{text:?}");
        }
        // A new worker of the same id (ids repeat across core restarts) starts clean.
        assert_eq!(read_running(&running_path(dir.path(), "text-0-1")), None);
    }
}
