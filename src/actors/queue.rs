//! The queue actor: the in-memory mirror of the ready index, the open `PollJobs`
//! streams, and dispatch between them.
//!
//! Dispatch is fair twice over: within a format, tenants take turns (round robin
//! over tenants with ready jobs, oldest job first within a tenant), so one tenant's
//! backlog of 100,000 jobs cannot starve another tenant's single job; and pollers
//! take turns. A stream holds at most `max_in_flight` leased jobs per worker id:
//! the next job is leased only when the worker finishes one, so no job waits in a
//! buffer while its lease runs down.
//!
//! The redb ready index stays the truth; this mirror only decides what to try next.
//! Leasing is a store change that re-checks the job's state, so a job cancelled
//! after being picked is simply skipped.
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

use tokio::sync::{broadcast, mpsc, oneshot};

use super::{ActorGone, CoreEvent, Leases};
use crate::store::jobs;

/// A queued job as the ready index knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadyJob {
    pub format: String,
    pub tenant: String,
    pub id: u64,
}

/// Where a poller's granted jobs go: the RPC layer turns each into a `JobPayload`.
pub type JobSender = mpsc::Sender<Delivery>;

/// A job granted to a poller, with where its content lives (None for a URL job).
#[derive(Debug, Clone)]
pub struct Delivery {
    pub granted: crate::store::jobs::Granted,
    pub content_path: Option<std::path::PathBuf>,
}

/// What comes back to the queue from the lease actor: a credit of a lease that
/// ended, jobs queued again. Its own channel, unbounded and lossless (a lost credit
/// would strand a worker), created by the composing layer ([`super::Core::start`]).
#[derive(Debug)]
pub enum Returned {
    /// Jobs queued again (released, due after their backoff, created by a submission).
    Ready(Vec<ReadyJob>),
    /// A lease of `worker` on job `id` ended (or was never granted): credit back.
    Done { id: u64, worker: String },
    /// The credit `token` of `worker` reserved by [`Queue::reserve`] is job `id` now,
    /// leased in the commit that created it (None: it was not, the credit is back).
    /// Sent by the lease actor before the job goes down the stream, so on this
    /// channel it comes before the `Done` of that lease.
    Claimed { worker: String, token: u64, id: Option<u64> },
    /// The worker process died or stopped (its pool said so): lease it nothing more.
    Retired { worker: String },
}

/// A poller's credit held for a job about to be created: the job is leased to
/// `worker` in the commit that creates it and sent down `tx` (see
/// [`super::Core::enqueue`]). `token` stands for the job in the credit count until
/// [`Returned::Claimed`] says what became of it.
#[derive(Debug)]
pub struct Reservation {
    pub worker: String,
    pub tx: JobSender,
    pub token: u64,
}

/// The lease actor's end of [`Returned`].
pub type ReturnSender = mpsc::UnboundedSender<Returned>;

enum Msg {
    Ready(Vec<ReadyJob>),
    Remove(ReadyJob),
    Register { worker_id: String, formats: Vec<String>, max_in_flight: usize, tx: JobSender, reply: oneshot::Sender<u64> },
    Unregister(u64),
    /// A lease of `worker` on job `id` ended (or was never granted): credit back.
    Done { id: u64, worker: String },
    Reserve { format: String, reply: oneshot::Sender<Option<Reservation>> },
    Claimed { worker: String, token: u64, id: Option<u64> },
    SetLeasing(bool),
    /// The worker is being stopped: lease it nothing more.
    Retire(String),
    Snapshot(oneshot::Sender<QueueSnapshot>),
    /// Stop: the open streams end (their senders drop with the actor).
    Shutdown { reply: oneshot::Sender<()> },
}

/// What `status` shows of the queue actor.
#[derive(Debug, Clone, Default)]
pub struct QueueSnapshot {
    pub pollers: Vec<(String, Vec<String>, usize)>,
    pub leasing: bool,
}

/// Handle to the queue actor. Cheap to clone.
#[derive(Clone)]
pub struct Queue {
    /// Bounded: callers are RPC handlers and short tasks, never another actor's
    /// loop, so a full channel only slows callers down and cannot deadlock.
    tx: mpsc::Sender<Msg>,
}

impl Queue {
    /// Starts the actor. It asks `leases` to grant; what comes back from leases
    /// (credits, requeued jobs) arrives on `returned`.
    pub(super) fn start(leases: Leases, returned: mpsc::UnboundedReceiver<Returned>, events: broadcast::Sender<CoreEvent>) -> Self {
        let (tx, rx) = mpsc::channel(8192);
        let actor = QueueActor {
            rx,
            returned: Some(returned),
            leases,
            events,
            formats: HashMap::new(),
            pollers: BTreeMap::new(),
            next_poller: 1,
            inflight: HashMap::new(),
            turn: 0,
            leasing: true,
            next_token: u64::MAX,
        };
        tokio::spawn(actor.run());
        Self { tx }
    }

    async fn send(&self, msg: Msg) -> Result<(), ActorGone> {
        self.tx.send(msg).await.map_err(|_| ActorGone("queue"))
    }

    pub async fn ready(&self, jobs: Vec<ReadyJob>) -> Result<(), ActorGone> {
        self.send(Msg::Ready(jobs)).await
    }

    pub async fn remove(&self, job: ReadyJob) -> Result<(), ActorGone> {
        self.send(Msg::Remove(job)).await
    }

    /// A credit of a poller serving `format`, when one has credit to spare and no job
    /// of the format is waiting (a waiting job goes first: the handoff never jumps the
    /// line or a tenant's turn). Whoever gets one must [`Queue::unreserve`] it unless
    /// the lease actor adopts the job it became.
    pub async fn reserve(&self, format: String) -> Result<Option<Reservation>, ActorGone> {
        let (reply, rx) = oneshot::channel();
        self.send(Msg::Reserve { format, reply }).await?;
        rx.await.map_err(|_| ActorGone("queue"))
    }

    /// Gives back a reserved credit that no job took.
    pub async fn unreserve(&self, r: Reservation) -> Result<(), ActorGone> {
        self.send(Msg::Claimed { worker: r.worker, token: r.token, id: None }).await
    }

    /// Leases nothing more to `worker` (it is being stopped).
    pub async fn retire(&self, worker: String) -> Result<(), ActorGone> {
        self.send(Msg::Retire(worker)).await
    }

    /// Stops (false) or resumes (true) handing out leases; used when draining.
    pub async fn set_leasing(&self, on: bool) -> Result<(), ActorGone> {
        self.send(Msg::SetLeasing(on)).await
    }

    /// Opens a poller; jobs for `formats` arrive on `tx`. The poller is removed when
    /// the stream's receiver is dropped (the client went away).
    pub async fn register(&self, worker_id: String, formats: Vec<String>, max_in_flight: usize, tx: JobSender) -> Result<(), ActorGone> {
        let (reply, rx) = oneshot::channel();
        let closed = tx.clone();
        self.send(Msg::Register { worker_id, formats, max_in_flight, tx, reply }).await?;
        let id = rx.await.map_err(|_| ActorGone("queue"))?;
        let me = self.clone();
        tokio::spawn(async move {
            closed.closed().await;
            let _ = me.send(Msg::Unregister(id)).await;
        });
        Ok(())
    }

    /// Stops the actor; resolves once it has.
    pub async fn shutdown(&self) {
        let (reply, rx) = oneshot::channel();
        if self.send(Msg::Shutdown { reply }).await.is_ok() {
            let _ = rx.await;
        }
    }

    pub async fn snapshot(&self) -> Result<QueueSnapshot, ActorGone> {
        let (reply, rx) = oneshot::channel();
        self.send(Msg::Snapshot(reply)).await?;
        rx.await.map_err(|_| ActorGone("queue"))
    }
}

/// Ready jobs of one format.
#[derive(Default)]
struct FormatQueue {
    by_tenant: HashMap<String, BTreeSet<u64>>,
    /// Tenants with at least one ready job, in turn order.
    turns: VecDeque<String>,
}

impl FormatQueue {
    fn push(&mut self, tenant: &str, id: u64) {
        let set = self.by_tenant.entry(tenant.to_string()).or_default();
        if set.is_empty() {
            self.turns.push_back(tenant.to_string());
        }
        set.insert(id);
    }

    fn remove(&mut self, tenant: &str, id: u64) {
        if let Some(set) = self.by_tenant.get_mut(tenant) {
            set.remove(&id);
            if set.is_empty() {
                self.by_tenant.remove(tenant);
                self.turns.retain(|t| t != tenant);
            }
        }
    }

    /// The next tenant's oldest job; that tenant goes to the back of the line.
    fn pop(&mut self) -> Option<(String, u64)> {
        let tenant = self.turns.pop_front()?;
        let set = self.by_tenant.get_mut(&tenant)?;
        let id = set.pop_first()?;
        if set.is_empty() {
            self.by_tenant.remove(&tenant);
        } else {
            self.turns.push_back(tenant.clone());
        }
        Some((tenant, id))
    }

    fn is_empty(&self) -> bool {
        self.turns.is_empty()
    }
}

struct Poller {
    worker_id: String,
    formats: Vec<String>,
    max_in_flight: usize,
    tx: JobSender,
    /// Rotates the format tried first, so one busy format cannot starve the others.
    next_format: usize,
}

struct QueueActor {
    rx: mpsc::Receiver<Msg>,
    /// From the lease actor; None once every sender is gone (it stopped).
    returned: Option<mpsc::UnboundedReceiver<Returned>>,
    leases: Leases,
    events: broadcast::Sender<CoreEvent>,
    formats: HashMap<String, FormatQueue>,
    pollers: BTreeMap<u64, Poller>,
    next_poller: u64,
    /// Jobs leased (or being leased) per worker id. Kept across reconnects of the
    /// same worker, so a reconnect does not double its credit.
    inflight: HashMap<String, HashSet<u64>>,
    /// Rotates the poller served first.
    turn: usize,
    leasing: bool,
    /// The next reservation token, counting down from u64::MAX (job ids count up from 1).
    next_token: u64,
}

impl QueueActor {
    async fn run(mut self) {
        loop {
            let returned = async {
                match self.returned.as_mut() {
                    Some(r) => r.recv().await,
                    None => std::future::pending().await,
                }
            };
            let msg = tokio::select! {
                msg = self.rx.recv() => match msg {
                    Some(msg) => msg,
                    None => return,
                },
                back = returned => match back {
                    Some(back) => Self::from_leases(back),
                    None => {
                        self.returned = None;
                        continue;
                    }
                },
            };
            let mut next = Some(msg);
            // Handle whatever else is waiting before dispatching once.
            while let Some(msg) = next.take().or_else(|| self.try_next()) {
                if let Msg::Shutdown { reply } = msg {
                    tracing::debug!("queue actor stopped");
                    let _ = reply.send(());
                    return;
                }
                self.handle(msg);
            }
            self.dispatch();
        }
    }

    fn from_leases(back: Returned) -> Msg {
        match back {
            Returned::Ready(jobs) => Msg::Ready(jobs),
            Returned::Done { id, worker } => Msg::Done { id, worker },
            Returned::Claimed { worker, token, id } => Msg::Claimed { worker, token, id },
            Returned::Retired { worker } => Msg::Retire(worker),
        }
    }

    /// What is waiting in either inbox, credits first.
    fn try_next(&mut self) -> Option<Msg> {
        if let Some(back) = self.returned.as_mut().and_then(|r| r.try_recv().ok()) {
            return Some(Self::from_leases(back));
        }
        self.rx.try_recv().ok()
    }

    fn handle(&mut self, msg: Msg) {
        match msg {
            Msg::Ready(jobs) => {
                for j in jobs {
                    self.formats.entry(j.format).or_default().push(&j.tenant, j.id);
                }
            }
            Msg::Remove(j) => {
                if let Some(q) = self.formats.get_mut(&j.format) {
                    q.remove(&j.tenant, j.id);
                }
            }
            Msg::Register { worker_id, formats, max_in_flight, tx, reply } => {
                let id = self.next_poller;
                self.next_poller += 1;
                tracing::info!(poller = id, worker = %worker_id, ?formats, "worker polling");
                let _ = self.events.send(CoreEvent::Polling { worker: worker_id.clone() });
                self.pollers.insert(id, Poller { worker_id, formats, max_in_flight: max_in_flight.max(1), tx, next_format: 0 });
                let _ = reply.send(id);
            }
            Msg::Unregister(id) => {
                if let Some(p) = self.pollers.remove(&id) {
                    tracing::info!(poller = id, worker = %p.worker_id, "worker stopped polling");
                }
            }
            Msg::Done { id, worker } => self.release_token(&worker, id),
            Msg::Reserve { format, reply } => {
                let r = self.reserve(&format);
                if let Err(Some(r)) = reply.send(r) {
                    // The enqueue went away before hearing back: the credit is free again.
                    self.release_token(&r.worker, r.token);
                }
            }
            Msg::Claimed { worker, token, id } => {
                self.release_token(&worker, token);
                if let Some(id) = id {
                    self.inflight.entry(worker).or_default().insert(id);
                }
            }
            Msg::SetLeasing(on) => self.leasing = on,
            Msg::Retire(worker) => {
                for p in self.pollers.values_mut().filter(|p| p.worker_id == worker) {
                    p.max_in_flight = 0;
                }
            }
            Msg::Shutdown { .. } => {}
            Msg::Snapshot(reply) => {
                let pollers = self
                    .pollers
                    .values()
                    .map(|p| (p.worker_id.clone(), p.formats.clone(), self.inflight.get(&p.worker_id).map_or(0, HashSet::len)))
                    .collect();
                let _ = reply.send(QueueSnapshot { pollers, leasing: self.leasing });
            }
        }
    }

    fn dispatch(&mut self) {
        if !self.leasing || self.pollers.is_empty() {
            return;
        }
        loop {
            let mut progressed = false;
            let ids: Vec<u64> = self.pollers.keys().copied().collect();
            let n = ids.len();
            self.turn = self.turn.wrapping_add(1);
            for i in 0..n {
                let pid = ids[(self.turn + i) % n];
                if let Some((job, worker, tx)) = self.pick(pid) {
                    progressed = true;
                    self.inflight.entry(worker.clone()).or_default().insert(job.id);
                    // The queue's loop never awaits the lease actor's bounded inbox (the
                    // back edge, `Returned`, is unbounded): when it is full, a short task waits.
                    if let Err(Some((job, worker, tx))) = self.leases.try_grant(job, worker, tx) {
                        let leases = self.leases.clone();
                        tokio::spawn(async move { leases.grant(job, worker, tx).await.ok() });
                    }
                }
            }
            if !progressed {
                return;
            }
        }
    }

    /// A credit for a job of `format` about to be created (see [`Queue::reserve`]).
    fn reserve(&mut self, format: &str) -> Option<Reservation> {
        if !self.leasing || self.formats.get(format).is_some_and(|q| !q.is_empty()) {
            return None;
        }
        let ids: Vec<u64> = self.pollers.keys().copied().collect();
        let n = ids.len();
        self.turn = self.turn.wrapping_add(1);
        for i in 0..n {
            let p = &self.pollers[&ids[(self.turn + i) % n]];
            if has_credit(&self.inflight, p) && p.formats.iter().any(|f| f == format) {
                let token = self.next_token;
                self.next_token -= 1;
                let (worker, tx) = (p.worker_id.clone(), p.tx.clone());
                self.inflight.entry(worker.clone()).or_default().insert(token);
                return Some(Reservation { worker, tx, token });
            }
        }
        None
    }

    /// Takes job `token` (or a reservation's token) out of `worker`'s credit count.
    fn release_token(&mut self, worker: &str, token: u64) {
        if let Some(set) = self.inflight.get_mut(worker) {
            set.remove(&token);
            if set.is_empty() {
                self.inflight.remove(worker);
            }
        }
    }

    /// A job for poller `pid`, if it has credit and one of its formats has work.
    fn pick(&mut self, pid: u64) -> Option<(ReadyJob, String, JobSender)> {
        let p = self.pollers.get_mut(&pid)?;
        if !has_credit(&self.inflight, p) {
            return None;
        }
        let nf = p.formats.len();
        for k in 0..nf {
            let fmt = &p.formats[(p.next_format + k) % nf];
            let Some(q) = self.formats.get_mut(fmt) else { continue };
            if let Some((tenant, id)) = q.pop() {
                if q.is_empty() {
                    self.formats.remove(fmt);
                }
                let job = ReadyJob { format: fmt.clone(), tenant, id };
                p.next_format = (p.next_format + k + 1) % nf;
                return Some((job, p.worker_id.clone(), p.tx.clone()));
            }
        }
        None
    }
}

/// Whether poller `p` may be leased one more job: its worker holds (or has reserved)
/// fewer than `max_in_flight`, and its stream is open.
fn has_credit(inflight: &HashMap<String, HashSet<u64>>, p: &Poller) -> bool {
    inflight.get(&p.worker_id).map_or(0, HashSet::len) < p.max_in_flight && !p.tx.is_closed()
}

/// Rebuilds the mirror from the store's ready index (start-up). Blocking: a redb read.
pub fn ready_from_store(store: &crate::store::Store) -> Result<Vec<ReadyJob>, crate::store::StoreError> {
    let txn = store.read()?;
    Ok(jobs::ready(&txn)?.into_iter().map(|(format, tenant, id)| ReadyJob { format, tenant, id }).collect())
}

#[cfg(test)]
mod tests {
    use super::FormatQueue;

    #[test]
    fn tenants_take_turns_whatever_their_backlog() {
        let mut q = FormatQueue::default();
        for id in 1..=100_000 {
            q.push("big", id);
        }
        q.push("small", 200_000);
        // The small tenant's single job comes out second, not after 100,000 others.
        assert_eq!(q.pop(), Some(("big".into(), 1)));
        assert_eq!(q.pop(), Some(("small".into(), 200_000)));
        assert_eq!(q.pop(), Some(("big".into(), 2)));
        q.remove("big", 3);
        assert_eq!(q.pop(), Some(("big".into(), 4)));
    }
}
