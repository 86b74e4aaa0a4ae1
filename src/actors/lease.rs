//! The lease actor: owns lease liveness. It grants leases for the queue, extends
//! them on heartbeats, applies submissions and failures (fenced by lease number),
//! and keeps the timers: lease expiry (→ `lease_expired`) and retry backoff (→
//! queued again).
//!
//! [`Leases`] is a handle holding only a sender; every request is a [`Msg`] with a
//! oneshot reply. The actor owns the store handle, the policy and whom to tell of a
//! lease's end, and runs each request's store work on a task of its own (a `JoinSet`
//! it owns), so its loop never waits for a commit and many concurrent requests meet
//! in the store writer's group commit. A task's follow-ups (timers to arm or drop)
//! come back through the `JoinSet`, applied before the request's reply is sent; the
//! actor holds no sender to its own inbox.
//!
//! Timers are soft: a timer that fires re-checks the stored lease inside a write
//! transaction, so a heartbeat that moved the deadline only costs one re-arm, and
//! a lease that ended is never expired twice.
use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::queue::{Delivery, JobSender, ReadyJob, Returned, ReturnSender};
use super::{ActorGone, CoreError, CoreEvent};
use crate::lifecycle::{self, submit::{self, Staged, SubmitOutcome}};
use crate::store::jobs::{self, ExpireOutcome, FailOutcome, Granted, Policy};
use crate::store::records::FailureRecord;
use crate::store::{Store, StoreError};
use crate::time::now_us;

type Reply<T> = oneshot::Sender<Result<T, StoreError>>;

enum Msg {
    /// Lease `job` to `worker` and send it down the worker's stream (from the queue).
    Grant { job: ReadyJob, worker: String, tx: JobSender },
    /// A job leased to `worker` in the commit that created it, on the credit `token`
    /// reserved of the queue: track it and send it down the worker's stream.
    Adopt { granted: Box<Granted>, worker: String, tx: JobSender, token: u64 },
    Submit { sub: Box<Staged>, reply: Reply<SubmitOutcome> },
    Heartbeat { worker: String, items: Vec<(u64, Option<u64>)>, reply: Reply<(Vec<u64>, i64)> },
    KeepAlive { id: u64, attempt: u64, reply: Reply<()> },
    Fail { id: u64, worker: Option<String>, attempt: u64, failure: Box<FailureRecord>, reply: Reply<FailOutcome> },
    FailWorker { worker: String, running: Option<(u64, u64)>, failure: Box<FailureRecord>, reply: Reply<Vec<u64>> },
    ReleaseWorker { worker: String, reply: Reply<Vec<u64>> },
    /// A lease ended outside this actor (a client's cancel, committed by the core).
    Ended { id: u64, worker: String },
    /// Lease `attempt` of job `id` was granted but never reached its worker (it was left in
    /// a job stream that closed): give it back uncharged.
    Undelivered { id: u64, attempt: u64 },
    Schedule { id: u64, due: i64 },
    Count(oneshot::Sender<(usize, usize)>),
    /// Finish the requests in flight, then stop the timers (what they guard is in the
    /// store, and is restored at the next start).
    Shutdown { reply: oneshot::Sender<()> },
}

/// Handle to the lease actor: only a sender. Cheap to clone.
#[derive(Clone)]
pub struct Leases {
    /// Bounded: callers are RPC handlers, pool actors and the queue's short grant
    /// tasks; the actor never sends to another actor's bounded inbox, so there is no
    /// cycle to deadlock on.
    tx: mpsc::Sender<Msg>,
}

impl Leases {
    /// Starts the actor. `returned` is the queue's lossless inbox for credits and
    /// requeued jobs; `events` tells the pool actors who holds what.
    pub(super) fn start(store: Store, policy: Arc<Policy>, returned: ReturnSender, events: broadcast::Sender<CoreEvent>) -> Self {
        let (tx, rx) = mpsc::channel(8192);
        let ctx = Ctx { store, policy, returned, events, gone: Arc::default() };
        let actor = LeaseActor { rx, ctx, tasks: JoinSet::new(), expiries: BTreeSet::new(), tracked: HashMap::new(), retries: BTreeSet::new() };
        tokio::spawn(actor.run());
        Self { tx }
    }

    async fn send(&self, msg: Msg) -> Result<(), ActorGone> {
        self.tx.send(msg).await.map_err(|_| ActorGone("lease"))
    }

    async fn call<T>(&self, msg: impl FnOnce(Reply<T>) -> Msg) -> Result<T, CoreError> {
        let (reply, rx) = oneshot::channel();
        self.send(msg(reply)).await?;
        Ok(rx.await.map_err(|_| ActorGone("lease"))??)
    }

    /// Arms the retry timer of job `id` (start-up: the retrying jobs of the last run).
    pub async fn schedule(&self, id: u64, due: i64) -> Result<(), ActorGone> {
        self.send(Msg::Schedule { id, due }).await
    }

    /// Stops the actor and its timers; resolves once it has.
    pub async fn shutdown(&self) {
        let (reply, rx) = oneshot::channel();
        if self.send(Msg::Shutdown { reply }).await.is_ok() {
            let _ = rx.await;
        }
    }

    /// (tracked leases, scheduled retries), for status and tests.
    pub async fn counts(&self) -> Result<(usize, usize), ActorGone> {
        let (reply, rx) = oneshot::channel();
        self.send(Msg::Count(reply)).await?;
        rx.await.map_err(|_| ActorGone("lease"))
    }

    /// A lease ended outside this actor (a cancel): the worker gets its credit back
    /// and the expiry timer is dropped.
    pub async fn ended(&self, id: u64, worker: String) -> Result<(), ActorGone> {
        self.send(Msg::Ended { id, worker }).await
    }

    /// Leases `job` to `worker` and sends it down the worker's stream; a job that cannot
    /// be leased gives the worker its credit back.
    pub(super) async fn grant(&self, job: ReadyJob, worker: String, tx: JobSender) -> Result<(), ActorGone> {
        self.send(Msg::Grant { job, worker, tx }).await
    }

    /// Takes over a lease granted in the commit that created its job (the queue's
    /// reservation `token` of `worker`'s credit): tracks it and delivers it.
    pub(super) async fn adopt(&self, granted: Granted, worker: String, tx: JobSender, token: u64) -> Result<(), ActorGone> {
        self.send(Msg::Adopt { granted: Box::new(granted), worker, tx, token }).await
    }

    /// [`Self::grant`] without waiting: `Err(Some(..))` gives the grant back when the
    /// actor's inbox is full (send it with [`Self::grant`] from a task), `Err(None)` when
    /// the actor has stopped.
    #[allow(clippy::result_large_err)]
    pub(super) fn try_grant(&self, job: ReadyJob, worker: String, tx: JobSender) -> Result<(), Option<(ReadyJob, String, JobSender)>> {
        match self.tx.try_send(Msg::Grant { job, worker, tx }) {
            Ok(()) => Ok(()),
            Err(mpsc::error::TrySendError::Full(Msg::Grant { job, worker, tx })) => Err(Some((job, worker, tx))),
            Err(_) => Err(None),
        }
    }

    /// Keeps lease `attempt` of job `id` alive while the core itself holds the worker's
    /// call (a partial waiting for its predecessor): the worker is not silent, the core is.
    pub async fn keep_alive(&self, id: u64, attempt: u64) -> Result<(), CoreError> {
        self.call(|reply| Msg::KeepAlive { id, attempt, reply }).await
    }

    /// Extends the leases `worker` holds among `items`.
    pub async fn heartbeat(&self, worker: String, items: Vec<(u64, Option<u64>)>) -> Result<(Vec<u64>, i64), CoreError> {
        self.call(|reply| Msg::Heartbeat { worker, items, reply }).await
    }

    /// Accepts a validated submission; a final one makes the projection visible and
    /// hands the child jobs it created to the queue.
    pub async fn submit(&self, sub: Staged) -> Result<SubmitOutcome, CoreError> {
        self.call(|reply| Msg::Submit { sub: Box::new(sub), reply }).await
    }

    /// Fails lease `attempt` of job `id`; `worker` fences on the holder when given.
    pub async fn fail(&self, id: u64, worker: Option<String>, attempt: u64, failure: FailureRecord) -> Result<FailOutcome, CoreError> {
        self.call(|reply| Msg::Fail { id, worker, attempt, failure: Box::new(failure), reply }).await
    }

    /// Fails the jobs `worker` holds (its process died): the supervisor's path, which does
    /// not wait for the lease to expire. `running`: the job (id, lease) the worker said it
    /// was running; then only that one is failed and the others it held are released
    /// uncharged (none, if it was running none of them). Returns the failed job ids.
    pub async fn fail_worker(&self, worker: &str, running: Option<(u64, u64)>, failure: FailureRecord) -> Result<Vec<u64>, CoreError> {
        self.call(|reply| Msg::FailWorker { worker: worker.to_string(), running, failure: Box::new(failure), reply }).await
    }

    /// Gives back every lease `worker` holds, without charging an attempt (it stopped
    /// cleanly with a job still in its stream).
    pub async fn release_worker(&self, worker: &str) -> Result<Vec<u64>, CoreError> {
        self.call(|reply| Msg::ReleaseWorker { worker: worker.to_string(), reply }).await
    }

    /// Gives back, uncharged, lease `attempt` of job `id`, which was granted but never
    /// reached its worker: it was still in the worker's job stream when that stream closed.
    /// Does not wait (a stream's drop calls it); the release itself is fenced on `attempt`.
    pub fn undelivered(&self, id: u64, attempt: u64) {
        match self.tx.try_send(Msg::Undelivered { id, attempt }) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(msg)) => {
                // The inbox is full: hand the message to a task, which waits for room.
                let tx = self.tx.clone();
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    runtime.spawn(async move { drop(tx.send(msg).await) });
                }
            }
            // The actor has stopped: the lease is released at the next start.
            Err(mpsc::error::TrySendError::Closed(_)) => {}
        }
    }
}

/// Worker processes whose death (or stop) this actor has heard of: a grant to one of them
/// that commits after its leases were read for failing or releasing would be left in a
/// stream nobody reads, so its delivery releases it instead. Supervised worker ids are
/// unique per process; the oldest are forgotten past [`GONE_REMEMBERED`].
#[derive(Default)]
struct Gone {
    ids: HashSet<String>,
    order: VecDeque<String>,
}

/// Far more deaths than could happen while one grant is in flight.
const GONE_REMEMBERED: usize = 4096;

impl Gone {
    fn mark(&mut self, worker: &str) {
        if self.ids.insert(worker.to_string()) {
            self.order.push_back(worker.to_string());
            while self.order.len() > GONE_REMEMBERED {
                if let Some(old) = self.order.pop_front() {
                    self.ids.remove(&old);
                }
            }
        }
    }
}

/// What a task asks of the actor once its store work is done.
enum FollowUp {
    Track { id: u64, attempt: u64, deadline: i64 },
    Untrack { id: u64 },
    Schedule { id: u64, due: i64 },
}

/// A task's result: its follow-ups, then its reply (sent once they are in force, so a
/// caller that asks for the counts next sees them).
#[derive(Default)]
struct Done {
    follow: Vec<FollowUp>,
    reply: Option<Box<dyn FnOnce() + Send>>,
}

impl Done {
    fn reply<T: Send + 'static>(follow: Vec<FollowUp>, to: Reply<T>, value: Result<T, StoreError>) -> Self {
        Self { follow, reply: Some(Box::new(move || drop(to.send(value)))) }
    }
}

/// What the actor's tasks need: the store, the policy, and whom to tell.
#[derive(Clone)]
struct Ctx {
    store: Store,
    policy: Arc<Policy>,
    /// The queue's lossless inbox (unbounded: a credit is never dropped, and the
    /// actor's tasks never wait on the queue).
    returned: ReturnSender,
    /// Lossy: the pool actors resync from the store when they lag.
    events: broadcast::Sender<CoreEvent>,
    /// Marked by the actor's loop before a worker's leases are read ([`Gone`]).
    gone: Arc<Mutex<Gone>>,
}

impl Ctx {
    /// The lease ended: the holder's credit back, the pools told.
    fn ended(&self, id: u64, worker: String, out: &mut Vec<FollowUp>) {
        let _ = self.events.send(CoreEvent::Ended { worker: worker.clone(), job: id });
        let _ = self.returned.send(Returned::Done { id, worker });
        out.push(FollowUp::Untrack { id });
    }

    fn requeue(&self, job: ReadyJob) {
        let _ = self.returned.send(Returned::Ready(vec![job]));
    }

    fn after_fail(&self, id: u64, outcome: &FailOutcome, out: &mut Vec<FollowUp>) {
        match outcome {
            FailOutcome::Retrying { due, worker } => {
                self.ended(id, worker.clone(), out);
                out.push(FollowUp::Schedule { id, due: *due });
            }
            FailOutcome::Dead { worker } => self.ended(id, worker.clone(), out),
            FailOutcome::NotCurrent(_) => {}
        }
    }

    async fn grant(self, job: ReadyJob, worker: String, tx: JobSender) -> Done {
        let (id, w, policy) = (job.id, worker.clone(), self.policy.clone());
        let at = std::time::Instant::now();
        let mut out = Vec::new();
        match self.store.write(move |t| jobs::lease(t, id, &w, &policy, now_us())).await {
            Ok(Some(granted)) => self.deliver(granted, worker, tx, at, &mut out).await,
            Ok(None) => self.ended(id, worker, &mut out),
            Err(e) => {
                tracing::error!(job = id, error = %e, "cannot lease job; it stays queued");
                // Back off briefly so a failing disk does not turn into a hot loop.
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                self.requeue(job);
                self.ended(id, worker, &mut out);
            }
        }
        Done { follow: out, reply: None }
    }

    /// A job leased in the commit that created it (see [`Leases::adopt`]). The queue
    /// hears that its reserved credit is this job before anything can end the lease.
    async fn adopt(self, granted: Granted, worker: String, tx: JobSender, token: u64) -> Done {
        let _ = self.returned.send(Returned::Claimed { worker: worker.clone(), token, id: Some(granted.job.id) });
        let mut out = Vec::new();
        self.deliver(granted, worker, tx, std::time::Instant::now(), &mut out).await;
        Done { follow: out, reply: None }
    }

    /// Tracks a granted lease and sends the job down the worker's stream. A job for a
    /// worker already gone, or for a stream already closed, is released, uncharged.
    async fn deliver(&self, granted: Granted, worker: String, tx: JobSender, at: std::time::Instant, out: &mut Vec<FollowUp>) {
        let (id, attempt) = (granted.job.id, granted.lease.attempt);
        if self.gone.lock().is_ok_and(|g| g.ids.contains(&worker)) {
            // The worker died (or stopped) and its leases were read before this one
            // committed: nothing else would ever end it before it expired.
            tracing::warn!(job = id, worker = %worker, "job granted to a worker whose process is gone; released, uncharged");
            // Told again: a stream that registered under a gone worker's id after the first
            // notice (only a remote worker can pick such an id) is leased nothing more
            // either, so the job cannot go round between the queue and this check.
            let _ = self.returned.send(Returned::Retired { worker: worker.clone() });
            self.release(id, Some(attempt), out).await;
            return;
        }
        out.push(FollowUp::Track { id, attempt, deadline: granted.lease.deadline });
        let _ = self.events.send(CoreEvent::Granted { worker: worker.clone(), job: id, attempt, at });
        let _ = self.events.send(CoreEvent::Leased { job: id, format: granted.job.format.clone(), attempt, waited_us: (attempt == 1).then(|| granted.lease.granted_at - granted.job.created_at) });
        let content_path = if granted.job.url.is_empty() && !granted.job.inline { self.store.blob_path(&granted.job.blob) } else { None };
        if tx.send(Delivery { granted, content_path }).await.is_err() {
            // The stream went away before the job reached it: give it back unharmed.
            tracing::debug!(job = id, worker = %worker, "stream closed before delivery; releasing");
            self.release(id, Some(attempt), out).await;
        }
    }

    async fn submit(self, sub: Staged, reply: Reply<SubmitOutcome>) -> Done {
        let (id, policy, bytes, attempt) = (sub.job_id, self.policy.clone(), sub.result_json.len(), sub.attempt);
        let outcome = self.store.write(move |t| submit::submit(t, sub, &policy, now_us())).await;
        let mut out = Vec::new();
        if let Ok(SubmitOutcome::Accepted { finished, node_ids, .. }) = &outcome {
            let _ = self.events.send(CoreEvent::Submitted { job: id, partial: !finished, bytes, nodes: node_ids.len() });
        }
        match &outcome {
            Ok(SubmitOutcome::Accepted { finished: true, enqueued, holder, .. }) => {
                for c in enqueued {
                    let _ = self.events.send(CoreEvent::Enqueued { job: c.id, format: c.format.clone() });
                }
                if !enqueued.is_empty() {
                    let ready = enqueued.iter().map(|c| ReadyJob { format: c.format.clone(), tenant: c.tenant.clone(), id: c.id }).collect();
                    let _ = self.returned.send(Returned::Ready(ready));
                }
                self.ended(id, holder.clone(), &mut out);
            }
            Ok(SubmitOutcome::Protocol { failed, .. }) => {
                super::note_failed(&self.events, id, attempt, "protocol", failed);
                self.after_fail(id, failed, &mut out);
            }
            _ => {}
        }
        Done::reply(out, reply, outcome)
    }

    async fn fail(self, id: u64, worker: Option<String>, attempt: u64, failure: FailureRecord, reply: Reply<FailOutcome>) -> Done {
        let mut out = Vec::new();
        let outcome = self.fail_one(id, worker, attempt, failure, &mut out).await;
        Done::reply(out, reply, outcome)
    }

    async fn fail_one(&self, id: u64, worker: Option<String>, attempt: u64, failure: FailureRecord, out: &mut Vec<FollowUp>) -> Result<FailOutcome, StoreError> {
        let (policy, kind) = (self.policy.clone(), failure.kind.clone());
        let outcome = self.store.write(move |t| lifecycle::fail(t, id, worker.as_deref(), attempt, failure, &policy, now_us())).await?;
        super::note_failed(&self.events, id, attempt, &kind, &outcome);
        self.after_fail(id, &outcome, out);
        Ok(outcome)
    }

    async fn fail_worker(self, worker: String, running: Option<(u64, u64)>, failure: FailureRecord, reply: Reply<Vec<u64>>) -> Done {
        let mut out = Vec::new();
        let result = async {
            let mut failed = Vec::new();
            for (id, attempt) in self.held_by(&worker).await? {
                // The worker said which job it was running: the others it only held
                // (prefetched, or their results on the way) go back uncharged.
                if running.is_some_and(|r| r != (id, attempt)) {
                    self.release(id, Some(attempt), &mut out).await;
                    continue;
                }
                if !matches!(self.fail_one(id, None, attempt, failure.clone(), &mut out).await?, FailOutcome::NotCurrent(_)) {
                    failed.push(id);
                }
            }
            Ok(failed)
        }
        .await;
        Done::reply(out, reply, result)
    }

    async fn release_worker(self, worker: String, reply: Reply<Vec<u64>>) -> Done {
        let mut out = Vec::new();
        let result = match self.held_by(&worker).await {
            Ok(held) => {
                for &(id, attempt) in &held {
                    self.release(id, Some(attempt), &mut out).await;
                }
                Ok(held.into_iter().map(|(id, _)| id).collect())
            }
            Err(e) => Err(e),
        };
        Done::reply(out, reply, result)
    }

    /// Marks `worker` gone before its leases are read ([`Gone`]): a delivery to it from
    /// then on releases its job, and the queue leases it nothing more (its stream may
    /// outlive the process by a moment).
    fn mark_gone(&self, worker: &str) {
        if let Ok(mut gone) = self.gone.lock() {
            gone.mark(worker);
        }
        let _ = self.returned.send(Returned::Retired { worker: worker.to_string() });
    }

    /// The leases `worker` holds now: (job id, lease number).
    /// Read on the blocking pool (a redb read is blocking work).
    async fn held_by(&self, worker: &str) -> Result<Vec<(u64, u64)>, StoreError> {
        let (store, worker) = (self.store.clone(), worker.to_string());
        tokio::task::spawn_blocking(move || Ok(jobs::leases(&store.read()?)?.into_iter().filter(|l| l.3 == worker).map(|l| (l.0, l.1)).collect()))
            .await
            .map_err(|e| StoreError::Corrupt(format!("lease read task: {e}")))?
    }

    /// Gives lease `attempt` (or whatever lease is current) back without charging an attempt.
    /// The holder's credit comes back only for a lease actually released: a lease that
    /// ended otherwise (cancel, expiry) already gave it back.
    async fn release(&self, id: u64, attempt: Option<u64>, out: &mut Vec<FollowUp>) {
        match self.store.write(move |t| lifecycle::release(t, id, attempt, now_us())).await {
            Ok(Some((rec, worker))) => {
                self.requeue(ReadyJob { format: rec.format, tenant: rec.tenant, id });
                self.ended(id, worker, out);
            }
            Ok(None) => {}
            Err(e) => tracing::error!(job = id, error = %e, "cannot release lease"),
        }
    }

    async fn expire(self, id: u64, attempt: u64) -> Done {
        let policy = self.policy.clone();
        let mut out = Vec::new();
        match self.store.write(move |t| lifecycle::expire(t, id, attempt, &policy, now_us())).await {
            Ok(ExpireOutcome::Extended(deadline)) => out.push(FollowUp::Track { id, attempt, deadline }),
            Ok(ExpireOutcome::Failed(outcome)) => {
                if !matches!(outcome, FailOutcome::NotCurrent(_)) {
                    tracing::warn!(job = id, attempt, "lease expired");
                }
                super::note_failed(&self.events, id, attempt, "lease_expired", &outcome);
                self.after_fail(id, &outcome, &mut out);
            }
            Ok(ExpireOutcome::NotCurrent) => {}
            Err(e) => {
                tracing::error!(job = id, error = %e, "cannot expire lease; will try again");
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                out.push(FollowUp::Track { id, attempt, deadline: now_us() });
            }
        }
        Done { follow: out, reply: None }
    }

    async fn due(self, id: u64) -> Done {
        let mut out = Vec::new();
        match self.store.write(move |t| jobs::due(t, id, now_us())).await {
            Ok(Some(rec)) => self.requeue(ReadyJob { format: rec.format, tenant: rec.tenant, id }),
            Ok(None) => {}
            Err(e) => {
                tracing::error!(job = id, error = %e, "cannot requeue job; will try again");
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                out.push(FollowUp::Schedule { id, due: now_us() });
            }
        }
        Done { follow: out, reply: None }
    }
}

struct LeaseActor {
    rx: mpsc::Receiver<Msg>,
    ctx: Ctx,
    /// Store work of requests and timers (never run on the actor's loop); their
    /// follow-ups come back here.
    tasks: JoinSet<Done>,
    /// (deadline µs, job id, lease number), earliest first.
    expiries: BTreeSet<(i64, u64, u64)>,
    /// job id → its entry in `expiries`, so an ended lease can be dropped.
    tracked: HashMap<u64, (i64, u64)>,
    /// (due µs, job id), earliest first.
    retries: BTreeSet<(i64, u64)>,
}

impl LeaseActor {
    async fn run(mut self) {
        loop {
            let next = self.expiries.first().map(|e| e.0).into_iter().chain(self.retries.first().map(|e| e.0)).min();
            let sleep = async {
                match next {
                    Some(at) => tokio::time::sleep_until(instant_of(at)).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                msg = self.rx.recv() => match msg {
                    Some(Msg::Shutdown { reply }) => {
                        self.finish().await;
                        tracing::debug!("lease actor stopped");
                        let _ = reply.send(());
                        return;
                    }
                    Some(msg) => self.handle(msg),
                    None => return self.finish().await,
                },
                () = sleep => self.fire(),
                Some(done) = self.tasks.join_next(), if !self.tasks.is_empty() => {
                    match done {
                        Ok(done) => self.complete(done),
                        Err(e) => tracing::error!(error = %e, "a lease task failed"),
                    }
                }
            }
        }
    }

    /// Lets the requests in flight finish (each is one store write), so no caller is
    /// left without its answer.
    async fn finish(&mut self) {
        while let Some(done) = self.tasks.join_next().await {
            if let Ok(done) = done {
                self.complete(done);
            }
        }
    }

    fn spawn(&mut self, task: impl Future<Output = Done> + Send + 'static) {
        self.tasks.spawn(task);
    }

    fn handle(&mut self, msg: Msg) {
        let ctx = self.ctx.clone();
        match msg {
            Msg::Grant { job, worker, tx } => self.spawn(ctx.grant(job, worker, tx)),
            Msg::Adopt { granted, worker, tx, token } => self.spawn(ctx.adopt(*granted, worker, tx, token)),
            Msg::Submit { sub, reply } => self.spawn(ctx.submit(*sub, reply)),
            Msg::Heartbeat { worker, items, reply } => self.spawn(async move {
                let policy = ctx.policy.clone();
                let r = ctx.store.write(move |t| jobs::heartbeat(t, &worker, &items, &policy, now_us())).await;
                Done::reply(Vec::new(), reply, r)
            }),
            Msg::KeepAlive { id, attempt, reply } => self.spawn(async move {
                let policy = ctx.policy.clone();
                let r = ctx.store.write(move |t| jobs::keep_alive(t, id, attempt, &policy, now_us())).await;
                Done::reply(Vec::new(), reply, r)
            }),
            Msg::Fail { id, worker, attempt, failure, reply } => self.spawn(ctx.fail(id, worker, attempt, *failure, reply)),
            Msg::FailWorker { worker, running, failure, reply } => {
                ctx.mark_gone(&worker);
                self.spawn(ctx.fail_worker(worker, running, *failure, reply));
            }
            Msg::ReleaseWorker { worker, reply } => {
                ctx.mark_gone(&worker);
                self.spawn(ctx.release_worker(worker, reply));
            }
            Msg::Undelivered { id, attempt } => self.spawn(async move {
                let mut out = Vec::new();
                ctx.release(id, Some(attempt), &mut out).await;
                Done { follow: out, reply: None }
            }),
            Msg::Ended { id, worker } => {
                let mut out = Vec::new();
                ctx.ended(id, worker, &mut out);
                self.complete(Done { follow: out, reply: None });
            }
            Msg::Schedule { id, due } => self.follow(FollowUp::Schedule { id, due }),
            Msg::Shutdown { .. } => {}
            Msg::Count(reply) => {
                let _ = reply.send((self.tracked.len(), self.retries.len()));
            }
        }
    }

    fn complete(&mut self, done: Done) {
        for f in done.follow {
            self.follow(f);
        }
        if let Some(reply) = done.reply {
            reply();
        }
    }

    fn follow(&mut self, f: FollowUp) {
        match f {
            FollowUp::Track { id, attempt, deadline } => {
                if let Some((d, a)) = self.tracked.insert(id, (deadline, attempt)) {
                    self.expiries.remove(&(d, id, a));
                }
                self.expiries.insert((deadline, id, attempt));
            }
            FollowUp::Untrack { id } => {
                if let Some((d, a)) = self.tracked.remove(&id) {
                    self.expiries.remove(&(d, id, a));
                }
            }
            FollowUp::Schedule { id, due } => {
                self.retries.insert((due, id));
            }
        }
    }

    /// Hands every timer that is due to a task of its own.
    fn fire(&mut self) {
        let now = now_us();
        while let Some(&(deadline, id, attempt)) = self.expiries.first() {
            if deadline > now {
                break;
            }
            self.expiries.pop_first();
            self.tracked.remove(&id);
            self.tasks.spawn(self.ctx.clone().expire(id, attempt));
        }
        while let Some(&(due, id)) = self.retries.first() {
            if due > now {
                break;
            }
            self.retries.pop_first();
            self.tasks.spawn(self.ctx.clone().due(id));
        }
    }
}

/// The tokio instant at Unix time `at_us` (wall clock), never in the past.
fn instant_of(at_us: i64) -> Instant {
    let delta = at_us.saturating_sub(now_us()).max(0);
    Instant::now() + std::time::Duration::from_micros(u64::try_from(delta).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::jobs::NewJob;
    use crate::store::state::JobState;

    fn policy() -> Arc<Policy> {
        Arc::new(Policy { max_attempts: 3, backoff_base_ms: 10, backoff_max_ms: 100, retry_after_max_ms: 1000, lease_us: 300_000_000, permanent: Vec::new() })
    }

    /// A grant that commits after its worker's leases were read for failing them (the
    /// worker died meanwhile) is released at once, uncharged, and not sent: before, it
    /// went into the dead worker's stream and stayed leased until the lease expired.
    #[tokio::test]
    async fn a_grant_to_a_worker_already_gone_goes_back_to_the_queue_unsent() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 64).unwrap();
        let (returned, mut back) = mpsc::unbounded_channel();
        let (events, _) = broadcast::channel(64);
        let ctx = Ctx { store: store.clone(), policy: policy(), returned, events, gone: Arc::default() };
        let new = NewJob { tenant: "t".into(), format: "txt".into(), name: "a".into(), ..Default::default() };
        let id = store.write(move |t| Ok(jobs::insert(t, new, 1)?.id)).await.unwrap();
        let ready = || ReadyJob { format: "txt".into(), tenant: "t".into(), id };

        ctx.mark_gone("w-1");
        assert!(matches!(back.try_recv(), Ok(Returned::Retired { worker }) if worker == "w-1"), "the queue is told to lease it nothing more");
        let (tx, mut rx) = mpsc::channel(4);
        let done = ctx.clone().grant(ready(), "w-1".into(), tx).await;
        assert!(rx.try_recv().is_err(), "nothing was sent to the dead worker");
        assert!(done.follow.iter().any(|f| matches!(f, FollowUp::Untrack { id: j } if *j == id)), "no expiry timer is left for it");
        let view = jobs::get(&store.read().unwrap(), id).unwrap().unwrap();
        assert_eq!(jobs::state_of(&view.job).unwrap(), JobState::Queued);
        assert!(view.lease.is_none());
        assert_eq!(view.job.attempts, 0, "not charged");
        let (mut requeued, mut credit) = (false, false);
        while let Ok(r) = back.try_recv() {
            match r {
                Returned::Ready(jobs) => requeued |= jobs.iter().any(|j| j.id == id),
                Returned::Done { id: j, worker } => credit |= j == id && worker == "w-1",
                _ => {}
            }
        }
        assert!(requeued && credit, "requeued {requeued}, credit back {credit}");

        // A worker that is not gone gets the job.
        let (tx, mut rx) = mpsc::channel(4);
        ctx.clone().grant(ready(), "w-2".into(), tx).await;
        let delivered = rx.try_recv().expect("sent to the live worker");
        assert_eq!((delivered.granted.job.id, delivered.granted.lease.attempt), (id, 2));
        store.close().await;
    }

    #[test]
    fn gone_workers_are_remembered_up_to_a_bound() {
        let mut gone = Gone::default();
        for i in 0..GONE_REMEMBERED + 10 {
            gone.mark(&format!("w-{i}"));
        }
        gone.mark("w-20");
        assert_eq!(gone.ids.len(), GONE_REMEMBERED);
        assert_eq!(gone.order.len(), GONE_REMEMBERED);
        assert!(!gone.ids.contains("w-0") && gone.ids.contains("w-10") && gone.ids.contains(&format!("w-{}", GONE_REMEMBERED + 9)));
    }
}
