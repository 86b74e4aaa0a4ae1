//! The actors of the core, and [`Core`], the one value that wires them to the store.
//!
//! - [`queue`]: the ready index in memory, `PollJobs` streams, fair dispatch.
//! - [`pool`]: one per `[pools.NAME]`: keeps its worker processes alive and classifies their exits.
//! - [`supervisor`]: owns the pool actors; SIGHUP reloads and the SIGTERM drain.
//! - [`submission`]: a worker's result, from converted request to reply (waits, validation).
//! - [`lease`]: grants, heartbeats, submissions and failures (fenced), and the
//!   expiry and retry timers.
//!
//! Each actor is a private task owning its state plus a cheap `Clone` handle that
//! holds only a bounded sender; requests carry oneshot replies. No actor holds a
//! sender to its own inbox: work it hands to tasks comes back through a `JoinSet`.
//!
//! ## Message flow between the queue and the lease actors
//!
//! ```text
//!   RPC / Core ──ready, remove, register──► queue ──Grant (short task)──► lease
//!                                             ▲                             │
//!                                             └──── Returned (unbounded) ───┘
//!                                               credit back (Done), jobs queued
//!                                               again (released, due, children)
//!   RPC ──submit, fail, heartbeat, keep_alive──► lease ──CoreEvent (broadcast)──► pools, drain
//!   pools ──fail_worker, release_worker──► lease
//! ```
//!
//! One direction only: the queue holds the lease handle and asks it to grant; the
//! lease actor never holds the queue's handle. What it gives back travels on the
//! [`queue::Returned`] channel that [`Core::start`] creates and hands to both ends:
//! lossless (a lost credit would strand a worker) and unbounded, so the lease
//! actor's tasks never wait on the queue, and the bounded edge (queue → lease) is
//! only ever awaited from short tasks, never from the queue's loop: no cycle of
//! bounded channels to deadlock on. The lease events broadcast is for observers that
//! can resync (pool actors read the store when they lag; the drain re-reads).

pub mod lease;
pub mod pool;
pub mod queue;
pub mod submission;
pub mod supervisor;

use std::sync::{Arc, RwLock};

use tokio::sync::{broadcast, mpsc};

pub use lease::Leases;
pub use queue::{Queue, ReadyJob};

use crate::config::Config;
use crate::store::jobs::{self, Cancelled, JobError, NewJob, Policy};
use crate::store::records::{JobRecord, LeaseRecord};
use crate::store::state::JobState;
use crate::store::{Store, StoreError};
use crate::time::now_us;

/// An actor's channel is closed: it has stopped (only during shutdown).
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the {0} actor has stopped")]
pub struct ActorGone(pub &'static str);

#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Job(#[from] JobError),
    #[error(transparent)]
    Gone(#[from] ActorGone),
    /// Content i/o of ours failed (a child job's content being stored), or a blocking task died.
    #[error("{0}")]
    Io(String),
}

/// What pool actors hear about the workers they supervise.
#[derive(Debug, Clone)]
pub enum CoreEvent {
    /// A worker opened a PollJobs stream.
    Polling { worker: String },
    /// A worker was sent a job under lease `attempt`; `at` is before the job can have
    /// reached it (its stderr from `at` on is that job's).
    Granted { worker: String, job: u64, attempt: u64, at: std::time::Instant },
    /// A worker's lease on a job ended (finished, failed, expired, cancelled, released).
    Ended { worker: String, job: u64 },
    // The variants below are for observers (metrics, the status page: `crate::ops`);
    // each is sent on the line where the thing happened, after its commit.
    /// A job was created (by a client or as a child job).
    Enqueued { job: u64, format: String },
    /// Lease `attempt` of `job` was granted; `waited_us` from the job's creation, on its first lease.
    Leased { job: u64, format: String, attempt: u64, waited_us: Option<i64> },
    /// A submission was accepted: `partial` or the final one (the job succeeded).
    Submitted { job: u64, partial: bool, bytes: usize, nodes: usize },
    /// Lease `attempt` of `job` failed as `kind`; `dead` when the job will not run again.
    Failed { job: u64, attempt: u64, kind: String, dead: bool },
    /// A supervised worker process exited; `kind` is its failure kind, `None` for a clean stop.
    Exited { pool: String, slot: usize, worker: String, kind: Option<&'static str>, code: Option<i32>, signal: Option<i32> },
}

/// Tells observers that lease `attempt` of `job` failed as `kind` (nothing, when the
/// lease was not current and nothing changed).
pub(crate) fn note_failed(events: &broadcast::Sender<CoreEvent>, job: u64, attempt: u64, kind: &str, outcome: &jobs::FailOutcome) {
    let dead = match outcome {
        jobs::FailOutcome::NotCurrent(_) => return,
        jobs::FailOutcome::Retrying { .. } => false,
        jobs::FailOutcome::Dead { .. } => true,
    };
    let _ = events.send(CoreEvent::Failed { job, attempt, kind: kind.to_string(), dead });
}

/// The running core: store plus actors. Cheap to clone.
#[derive(Clone)]
pub struct Core {
    pub store: Store,
    pub queue: Queue,
    pub leases: Leases,
    /// Retry and permanence policy, from the configuration at start.
    pub policy: Arc<Policy>,
    /// Lease events for the pool actors. A broadcast: a slow pool cannot hold up
    /// dispatch; one that lags is told so and resyncs from the store.
    pub events: broadcast::Sender<CoreEvent>,
    /// Swapped whole on SIGHUP; readers take a snapshot.
    config: Arc<RwLock<Arc<Config>>>,
    /// The submissions being received, parsed, validated or applied now, by lease:
    /// a partial waiting for its predecessor tells a slow predecessor from a gap.
    pub(crate) arriving: submission::Arriving,
}

impl Core {
    /// Opens the store, releases the leases of the previous run (their processes died
    /// with it), rebuilds the in-memory indexes and starts the actors.
    pub async fn start(config: Config) -> Result<Self, CoreError> {
        let store = Store::open_with(&config.server.data_dir, config.store.max_batch, config.store.cache_mb.saturating_mul(1 << 20), config.store.merge_rows)?;
        let policy = Arc::new(Policy::from_config(&config));
        let released = store.write(|t| crate::lifecycle::release_all(t, now_us())).await?;
        if !released.is_empty() {
            tracing::info!(count = released.len(), "released the leases of the previous run");
        }
        let (events, _) = broadcast::channel(1 << 16);
        let (returned_tx, returned_rx) = mpsc::unbounded_channel();
        let leases = Leases::start(store.clone(), policy.clone(), returned_tx, events.clone());
        let queue = Queue::start(leases.clone(), returned_rx, events.clone());

        // redb reads are blocking work: off the async workers.
        let snapshot = store.clone();
        let (ready, retrying) = tokio::task::spawn_blocking(move || -> Result<_, StoreError> {
            let ready = queue::ready_from_store(&snapshot)?;
            let retrying = jobs::retrying(&snapshot.read()?)?;
            Ok((ready, retrying))
        })
        .await
        .map_err(|e| StoreError::Corrupt(format!("start-up read task: {e}")))??;
        tracing::info!(queued = ready.len(), retrying = retrying.len(), "queue restored");
        queue.ready(ready).await?;
        for (id, due) in retrying {
            leases.schedule(id, due).await?;
        }
        Ok(Self { store, queue, leases, policy, events, config: Arc::new(RwLock::new(Arc::new(config))), arriving: submission::Arriving::default() })
    }

    /// Stops the lease and queue actors, then closes the store (its writer thread joined,
    /// the redb file closed). Called by `serve` after the pools have stopped.
    pub async fn shutdown(&self) {
        self.leases.shutdown().await;
        self.queue.shutdown().await;
        self.store.close().await;
    }

    /// The configuration in force.
    pub fn config(&self) -> Arc<Config> {
        match self.config.read() {
            Ok(c) => c.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Puts a reloaded configuration in force (pools and known formats; the store's
    /// settings apply from the next start).
    pub fn set_config(&self, config: Config) {
        match self.config.write() {
            Ok(mut c) => *c = Arc::new(config),
            Err(poisoned) => *poisoned.into_inner() = Arc::new(config),
        }
    }

    /// Enqueues a validated job; it is durable when this returns. A job whose
    /// idempotency key the tenant already used is the job that key created.
    /// Creates a client's job; `inline` is its content when that is kept in the database
    /// (`new.inline`), stored in the same commit. Returns the job and whether it is new
    /// (false: its idempotency key named an existing job, returned as it was stored).
    ///
    /// When a worker serving the format has credit to spare and no job of the format is
    /// waiting, the job is leased to it in the same commit and goes down its stream
    /// right after: one durable commit instead of two before a worker has it
    /// (bench/dispatch, enqueue→lease at 200 jobs/s). The job is then returned leased,
    /// with its lease.
    pub async fn enqueue(&self, new: NewJob, inline: Option<Vec<u8>>) -> Result<(JobRecord, Option<LeaseRecord>, bool), CoreError> {
        // On a task of its own: once a worker's credit is reserved, the job it becomes must
        // be adopted (or the credit given back) even when the caller is dropped (an RPC
        // whose client went away), or that credit and the job's lease would be stranded.
        let core = self.clone();
        tokio::spawn(async move { core.enqueue_now(new, inline).await }).await.map_err(|e| CoreError::Io(format!("enqueue task: {e}")))?
    }

    async fn enqueue_now(&self, new: NewJob, inline: Option<Vec<u8>>) -> Result<(JobRecord, Option<LeaseRecord>, bool), CoreError> {
        let reserved = self.queue.reserve(new.format.clone()).await?;
        let (policy, holder) = (self.policy.clone(), reserved.as_ref().map(|r| r.worker.clone()));
        let written = self
            .store
            .write(move |t| {
                if let Some(data) = &inline {
                    jobs::put_content(t, &new.blob, data)?;
                }
                let now = now_us();
                let (rec, created) = jobs::insert_once(t, new, now)?;
                let granted = match (&holder, created) {
                    (Some(worker), true) => jobs::lease(t, rec.id, worker, &policy, now)?,
                    _ => None,
                };
                Ok((rec, created, granted))
            })
            .await;
        let (rec, created, granted) = match written {
            Ok(v) => v,
            Err(e) => {
                if let Some(r) = reserved {
                    self.queue.unreserve(r).await?;
                }
                return Err(e.into());
            }
        };
        if created {
            let _ = self.events.send(CoreEvent::Enqueued { job: rec.id, format: rec.format.clone() });
        }
        match (granted, reserved) {
            (Some(granted), Some(r)) => {
                let (leased, lease) = (granted.job.clone(), granted.lease.clone());
                self.leases.adopt(granted, r.worker, r.tx, r.token).await?;
                return Ok((leased, Some(lease), created));
            }
            (_, Some(r)) => self.queue.unreserve(r).await?,
            (_, None) => {}
        }
        if created {
            self.queue.ready(vec![ReadyJob { format: rec.format.clone(), tenant: rec.tenant.clone(), id: rec.id }]).await?;
        }
        Ok((rec, None, created))
    }

    pub async fn cancel(&self, id: u64, tenant: Option<String>) -> Result<JobRecord, CoreError> {
        let c: Cancelled = self.store.write(move |t| crate::lifecycle::cancel(t, id, tenant.as_deref(), now_us())).await??;
        match c.previous {
            JobState::Queued => self.queue.remove(ReadyJob { format: c.job.format.clone(), tenant: c.job.tenant.clone(), id }).await?,
            JobState::Leased => {
                if let Some(w) = c.worker {
                    self.leases.ended(id, w).await?;
                }
            }
            _ => {}
        }
        Ok(c.job)
    }

    pub async fn retry(&self, id: u64, tenant: Option<String>) -> Result<JobRecord, CoreError> {
        let rec = self.store.write(move |t| jobs::retry(t, id, tenant.as_deref(), now_us())).await??;
        self.queue.ready(vec![ReadyJob { format: rec.format.clone(), tenant: rec.tenant.clone(), id }]).await?;
        Ok(rec)
    }
}
