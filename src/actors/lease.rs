//! The lease actor: owns lease liveness. Its handle ([`Leases`]) grants leases for
//! the queue, extends them on heartbeats, applies submissions and failures (fenced
//! by lease number), and its actor task keeps the timers: lease expiry (→
//! `lease_expired`) and retry backoff (→ queued again).
//!
//! Timers are soft: a timer that fires re-checks the stored lease inside a write
//! transaction, so a heartbeat that moved the deadline only costs one re-arm, and
//! a lease that ended is never expired twice.
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::time::Instant;

use super::queue::{JobSender, Queue, ReadyJob};
use super::{ActorGone, CoreEvent};
use crate::lifecycle::{self, submit::{self, Staged, SubmitOutcome}};
use crate::store::jobs::{self, ExpireOutcome, FailOutcome, Policy};
use crate::store::records::FailureRecord;
use crate::store::{Store, StoreError};
use crate::time::now_us;

enum Msg {
    Track { id: u64, attempt: u64, deadline: i64 },
    Untrack { id: u64 },
    Schedule { id: u64, due: i64 },
    Count(oneshot::Sender<(usize, usize)>),
    /// Stop the timers (what they guard is in the store, and is restored at the next start).
    Shutdown { reply: oneshot::Sender<()> },
}

/// Handle to the lease actor. Cheap to clone.
#[derive(Clone)]
pub struct Leases {
    tx: mpsc::Sender<Msg>,
    store: Store,
    policy: Arc<Policy>,
    queue: Queue,
    events: broadcast::Sender<CoreEvent>,
}

pub(super) struct LeaseInbox(mpsc::Receiver<Msg>);

impl Leases {
    pub(super) fn new(store: Store, policy: Arc<Policy>, queue: Queue, events: broadcast::Sender<CoreEvent>) -> (Self, LeaseInbox) {
        let (tx, rx) = mpsc::channel(8192);
        (Self { tx, store, policy, queue, events }, LeaseInbox(rx))
    }

    pub(super) fn start(&self, inbox: LeaseInbox) {
        let ctx = TimerCtx { store: self.store.clone(), policy: self.policy.clone(), queue: self.queue.clone(), events: self.events.clone() };
        let actor = LeaseActor { rx: inbox.0, ctx, tasks: tokio::task::JoinSet::new(), expiries: BTreeSet::new(), tracked: HashMap::new(), retries: BTreeSet::new() };
        tokio::spawn(actor.run());
    }

    async fn send(&self, msg: Msg) -> Result<(), ActorGone> {
        self.tx.send(msg).await.map_err(|_| ActorGone("lease"))
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    pub async fn track(&self, id: u64, attempt: u64, deadline: i64) -> Result<(), ActorGone> {
        self.send(Msg::Track { id, attempt, deadline }).await
    }

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

    /// A lease ended (finished, failed, expired, cancelled, released): the worker gets
    /// its credit back and the expiry timer is dropped.
    pub async fn ended(&self, id: u64, worker: String) {
        let _ = self.events.send(CoreEvent::Ended { worker: worker.clone(), job: id });
        let _ = self.queue.done(id, worker).await;
        let _ = self.send(Msg::Untrack { id }).await;
    }

    /// Leases `job` to `worker` and sends it down the worker's stream (called by the
    /// queue actor, on a task of its own).
    pub(super) async fn grant(&self, job: ReadyJob, worker: String, tx: JobSender) {
        let (id, w, policy) = (job.id, worker.clone(), self.policy.clone());
        let at = std::time::Instant::now();
        match self.store.write(move |t| jobs::lease(t, id, &w, &policy, now_us())).await {
            Ok(Some(granted)) => {
                let attempt = granted.lease.attempt;
                let _ = self.track(id, attempt, granted.lease.deadline).await;
                let _ = self.events.send(CoreEvent::Granted { worker: worker.clone(), job: id, attempt, at });
                let _ = self.events.send(CoreEvent::Leased { job: id, format: granted.job.format.clone(), attempt, waited_us: (attempt == 1).then(|| granted.lease.granted_at - granted.job.created_at) });
                let content_path = if granted.job.url.is_empty() { self.store.blob_path(&granted.job.blob) } else { None };
                if tx.send(super::queue::Delivery { granted, content_path }).await.is_err() {
                    // The stream went away before the job reached it: give it back unharmed.
                    tracing::debug!(job = id, worker = %worker, "stream closed before delivery; releasing");
                    self.release(id, Some(attempt)).await;
                }
            }
            Ok(None) => self.ended(id, worker).await,
            Err(e) => {
                tracing::error!(job = id, error = %e, "cannot lease job; it stays queued");
                // Back off briefly so a failing disk does not turn into a hot loop.
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                let _ = self.queue.ready(vec![job]).await;
                self.ended(id, worker).await;
            }
        }
    }

    /// Keeps lease `attempt` of job `id` alive while the core itself holds the worker's
    /// call (a partial waiting for its predecessor): the worker is not silent, the core is.
    pub async fn keep_alive(&self, id: u64, attempt: u64) -> Result<(), StoreError> {
        let policy = self.policy.clone();
        self.store.write(move |t| jobs::keep_alive(t, id, attempt, &policy, now_us())).await
    }

    /// Extends the leases `worker` holds among `items`.
    pub async fn heartbeat(&self, worker: String, items: Vec<(u64, Option<u64>)>) -> Result<(Vec<u64>, i64), StoreError> {
        let policy = self.policy.clone();
        self.store.write(move |t| jobs::heartbeat(t, &worker, &items, &policy, now_us())).await
    }

    /// Accepts a validated submission; a final one makes the projection visible and
    /// hands the child jobs it created to the queue.
    pub async fn submit(&self, sub: Staged) -> Result<SubmitOutcome, StoreError> {
        let (id, policy, bytes, attempt) = (sub.job_id, self.policy.clone(), sub.result_json.len(), sub.attempt);
        let outcome = self.store.write(move |t| submit::submit(t, sub, &policy, now_us())).await?;
        if let SubmitOutcome::Accepted { finished, node_ids, .. } = &outcome {
            let _ = self.events.send(CoreEvent::Submitted { job: id, partial: !finished, bytes, nodes: node_ids.len() });
        }
        match &outcome {
            SubmitOutcome::Accepted { finished: true, enqueued, holder, .. } => {
                for c in enqueued {
                    let _ = self.events.send(CoreEvent::Enqueued { job: c.id, format: c.format.clone() });
                }
                if !enqueued.is_empty() {
                    let ready = enqueued.iter().map(|c| ReadyJob { format: c.format.clone(), tenant: c.tenant.clone(), id: c.id }).collect();
                    let _ = self.queue.ready(ready).await;
                }
                self.ended(id, holder.clone()).await
            }
            SubmitOutcome::Protocol { failed, .. } => {
                super::note_failed(&self.events, id, attempt, "protocol", failed);
                self.after_fail(id, failed).await
            }
            _ => {}
        }
        Ok(outcome)
    }

    /// Fails lease `attempt` of job `id`; `worker` fences on the holder when given.
    pub async fn fail(&self, id: u64, worker: Option<String>, attempt: u64, failure: FailureRecord) -> Result<FailOutcome, StoreError> {
        let (policy, kind) = (self.policy.clone(), failure.kind.clone());
        let outcome = self.store.write(move |t| lifecycle::fail(t, id, worker.as_deref(), attempt, failure, &policy, now_us())).await?;
        super::note_failed(&self.events, id, attempt, &kind, &outcome);
        self.after_fail(id, &outcome).await;
        Ok(outcome)
    }

    /// Fails every job `worker` holds (its process died): the supervisor's path, which
    /// does not wait for the lease to expire. Returns the failed job ids.
    pub async fn fail_worker(&self, worker: &str, failure: FailureRecord) -> Result<Vec<u64>, StoreError> {
        let held = self.held_by(worker).await?;
        let mut failed = Vec::with_capacity(held.len());
        for (id, attempt) in held {
            if !matches!(self.fail(id, None, attempt, failure.clone()).await?, FailOutcome::NotCurrent(_)) {
                failed.push(id);
            }
        }
        Ok(failed)
    }

    /// The leases `worker` holds now: (job id, lease number).
    /// Read on the blocking pool (a redb read is blocking work).
    async fn held_by(&self, worker: &str) -> Result<Vec<(u64, u64)>, StoreError> {
        let (store, worker) = (self.store.clone(), worker.to_string());
        tokio::task::spawn_blocking(move || Ok(jobs::leases(&store.read()?)?.into_iter().filter(|l| l.3 == worker).map(|l| (l.0, l.1)).collect()))
            .await
            .map_err(|e| StoreError::Corrupt(format!("lease read task: {e}")))?
    }

    /// Gives back every lease `worker` holds, without charging an attempt (it stopped
    /// cleanly with a job still in its stream).
    pub async fn release_worker(&self, worker: &str) -> Result<Vec<u64>, StoreError> {
        let held = self.held_by(worker).await?;
        for &(id, attempt) in &held {
            self.release(id, Some(attempt)).await;
        }
        Ok(held.into_iter().map(|(id, _)| id).collect())
    }

    /// Gives lease `attempt` (or whatever lease is current) back without charging an attempt.
    /// The holder's credit comes back only for a lease actually released: a lease that
    /// ended otherwise (cancel, expiry) already gave it back.
    pub async fn release(&self, id: u64, attempt: Option<u64>) {
        match self.store.write(move |t| lifecycle::release(t, id, attempt, now_us())).await {
            Ok(Some((rec, worker))) => {
                let _ = self.queue.ready(vec![ReadyJob { format: rec.format, tenant: rec.tenant, id }]).await;
                self.ended(id, worker).await;
            }
            Ok(None) => {}
            Err(e) => tracing::error!(job = id, error = %e, "cannot release lease"),
        }
    }

    async fn after_fail(&self, id: u64, outcome: &FailOutcome) {
        match outcome {
            FailOutcome::Retrying { due, worker } => {
                self.ended(id, worker.clone()).await;
                let _ = self.schedule(id, *due).await;
            }
            FailOutcome::Dead { worker } => self.ended(id, worker.clone()).await,
            FailOutcome::NotCurrent(_) => {}
        }
    }
}

/// What a timer's task asks of the actor once its store work is done. Tasks answer
/// through the actor's JoinSet, so the actor holds no sender to its own inbox.
enum FollowUp {
    Track { id: u64, attempt: u64, deadline: i64 },
    Untrack { id: u64 },
    Schedule { id: u64, due: i64 },
}

/// What a timer's task needs: the store, the policy, and whom to tell.
#[derive(Clone)]
struct TimerCtx {
    store: Store,
    policy: Arc<Policy>,
    queue: Queue,
    events: broadcast::Sender<CoreEvent>,
}

impl TimerCtx {
    /// The lease ended: the holder's credit back (its expiry timer is already gone).
    async fn ended(&self, id: u64, worker: String) {
        let _ = self.events.send(CoreEvent::Ended { worker: worker.clone(), job: id });
        let _ = self.queue.done(id, worker).await;
    }

    async fn expire(self, id: u64, attempt: u64) -> Vec<FollowUp> {
        let policy = self.policy.clone();
        match self.store.write(move |t| lifecycle::expire(t, id, attempt, &policy, now_us())).await {
            Ok(ExpireOutcome::Extended(deadline)) => vec![FollowUp::Track { id, attempt, deadline }],
            Ok(ExpireOutcome::Failed(outcome)) => {
                tracing::warn!(job = id, attempt, "lease expired");
                super::note_failed(&self.events, id, attempt, "lease_expired", &outcome);
                match outcome {
                    FailOutcome::Retrying { due, worker } => {
                        self.ended(id, worker).await;
                        vec![FollowUp::Untrack { id }, FollowUp::Schedule { id, due }]
                    }
                    FailOutcome::Dead { worker } => {
                        self.ended(id, worker).await;
                        vec![FollowUp::Untrack { id }]
                    }
                    FailOutcome::NotCurrent(_) => vec![],
                }
            }
            Ok(ExpireOutcome::NotCurrent) => vec![],
            Err(e) => {
                tracing::error!(job = id, error = %e, "cannot expire lease; will try again");
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                vec![FollowUp::Track { id, attempt, deadline: now_us() }]
            }
        }
    }

    async fn due(self, id: u64) -> Vec<FollowUp> {
        match self.store.write(move |t| jobs::due(t, id, now_us())).await {
            Ok(Some(rec)) => {
                let _ = self.queue.ready(vec![ReadyJob { format: rec.format, tenant: rec.tenant, id }]).await;
                vec![]
            }
            Ok(None) => vec![],
            Err(e) => {
                tracing::error!(job = id, error = %e, "cannot requeue job; will try again");
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                vec![FollowUp::Schedule { id, due: now_us() }]
            }
        }
    }
}

struct LeaseActor {
    rx: mpsc::Receiver<Msg>,
    ctx: TimerCtx,
    /// Timer tasks (store work never runs on the actor's loop); their follow-ups come
    /// back here. Dropped with the actor, which aborts what is still running.
    tasks: tokio::task::JoinSet<Vec<FollowUp>>,
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
                        tracing::debug!("lease actor stopped");
                        let _ = reply.send(());
                        return;
                    }
                    Some(msg) => self.handle(msg),
                    None => return,
                },
                () = sleep => self.fire(),
                Some(done) = self.tasks.join_next(), if !self.tasks.is_empty() => {
                    for f in done.unwrap_or_default() {
                        self.follow(f);
                    }
                }
            }
        }
    }

    fn handle(&mut self, msg: Msg) {
        match msg {
            Msg::Track { id, attempt, deadline } => self.follow(FollowUp::Track { id, attempt, deadline }),
            Msg::Untrack { id } => self.follow(FollowUp::Untrack { id }),
            Msg::Schedule { id, due } => self.follow(FollowUp::Schedule { id, due }),
            Msg::Shutdown { .. } => {}
            Msg::Count(reply) => {
                let _ = reply.send((self.tracked.len(), self.retries.len()));
            }
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

    /// Hands every timer that is due to a task of its own (store work never runs on
    /// the actor's loop).
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
