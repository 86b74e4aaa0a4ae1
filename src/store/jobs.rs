//! Job operations inside one write transaction, and reads from a snapshot.
//!
//! Every operation checks before it writes, so a logical refusal (a fenced
//! submission, a job in the wrong state) writes nothing. This module knows nothing of
//! the graph: what an attempt's end means for its rows is [`crate::lifecycle`]'s.
//!
//! A job record is created by [`insert`] (a client's job) or [`insert_child`] (a job a
//! submission asked for), and every change after that goes through [`apply`] with an
//! [`Event`] of the pure state machine, including the changes that keep the state
//! (a partial's progress, a child gaining a parent). Both end in the private `save`,
//! which keeps the secondary tables (ready index, leases, retry schedule, dead letters,
//! queue depth counts) consistent with the state. Leases are written here only: granted
//! by [`lease`], extended by `extend_lease` (heartbeats, keep-alives, progress).
use prost::Message;
use redb::{ReadTransaction, ReadableTable, WriteTransaction};

use super::records::{FailureRecord, JobRecord, LeaseRecord};
use super::state::{backoff_ms, transition, Event, JobState, TransitionError};
use super::tables::*;
use super::{StoreError, Tx};
use crate::failure::FailureKind;

/// What a client asks to enqueue (already validated).
#[derive(Debug, Clone, Default)]
pub struct NewJob {
    pub tenant: String,
    pub organization: String,
    pub format: String,
    pub name: String,
    pub options_json: String,
    pub url: String,
    pub blob: String,
    pub size: u64,
    /// The content is in CONTENTS under `blob` (stored by [`put_content`] in the same
    /// transaction), not a blob file.
    pub inline: bool,
    /// The client's idempotency key ("" for none).
    pub idempotency_key: String,
}

/// Retry and permanence policy, from `[jobs]` and `[failures]`.
#[derive(Debug, Clone)]
pub struct Policy {
    pub max_attempts: u32,
    pub backoff_base_ms: u64,
    pub backoff_max_ms: u64,
    /// Cap on a worker's retry-after hint (ms).
    pub retry_after_max_ms: u64,
    pub lease_us: i64,
    pub permanent: Vec<FailureKind>,
}

impl Policy {
    pub fn from_config(c: &crate::config::Config) -> Self {
        Self {
            max_attempts: c.jobs.max_attempts,
            backoff_base_ms: c.jobs.backoff_base_ms,
            backoff_max_ms: c.jobs.backoff_max_ms,
            retry_after_max_ms: c.jobs.retry_after_max_ms,
            lease_us: crate::time::us(c.jobs.lease()),
            permanent: FailureKind::ALL.into_iter().filter(|k| c.is_permanent(*k)).collect(),
        }
    }
    pub fn is_permanent(&self, kind: FailureKind) -> bool {
        self.permanent.contains(&kind)
    }
}

/// A client-facing refusal.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error("no job {0}")]
    NotFound(u64),
    #[error(transparent)]
    Transition(#[from] TransitionError),
}

// ---------------------------------------------------------------------------
// record plumbing
// ---------------------------------------------------------------------------

pub fn state_of(rec: &JobRecord) -> Result<JobState, StoreError> {
    u8::try_from(rec.state)
        .ok()
        .and_then(JobState::from_code)
        .ok_or_else(|| StoreError::Corrupt(format!("job {} has state code {}", rec.id, rec.state)))
}

pub(crate) fn load(tx: &Tx<'_, '_>, id: u64) -> Result<Option<JobRecord>, StoreError> {
    let bytes = tx.jobs()?.get(id)?.map(|g| g.value().to_vec());
    Ok(match bytes {
        Some(b) => Some(JobRecord::decode(b.as_slice())?),
        None => None,
    })
}

pub(crate) fn load_lease(tx: &Tx<'_, '_>, id: u64) -> Result<Option<LeaseRecord>, StoreError> {
    let bytes = tx.leases()?.get(id)?.map(|g| g.value().to_vec());
    Ok(match bytes {
        Some(b) => Some(LeaseRecord::decode(b.as_slice())?),
        None => None,
    })
}

/// Stored submission `key` = (job, lease number, seq), if any, decoded as `M`: the whole
/// [`super::records::SubmissionRecord`], or its [`super::records::SubmissionHead`] only.
pub fn submission<M: Message + Default>(tx: &Tx<'_, '_>, key: (u64, u64, u32)) -> Result<Option<M>, StoreError> {
    let t = tx.submissions()?;
    let bytes = t.get(key)?;
    Ok(match bytes {
        Some(b) => Some(M::decode(b.value())?),
        None => None,
    })
}

pub(crate) fn next_counter(tx: &Tx<'_, '_>, name: &str) -> Result<u64, StoreError> {
    let mut t = tx.meta()?;
    let next = t.get(name)?.map(|g| g.value()).unwrap_or(1);
    t.insert(name, next + 1)?;
    Ok(next)
}

/// Writes `rec` (whose state may have changed from `old`) and every index that
/// follows from its state.
fn save(tx: &mut Tx<'_, '_>, old: Option<JobState>, rec: &JobRecord, now: i64) -> Result<(), StoreError> {
    let new = state_of(rec)?;
    let txn = tx.txn;
    tx.jobs()?.insert(rec.id, rec.encode_to_vec().as_slice())?;
    tx.touched(rec.id);
    if old == Some(new) {
        return Ok(());
    }
    let fmt = rec.format.as_str();
    {
        let mut counts = tx.counts()?;
        if let Some(old) = old {
            let n = counts.get((fmt, old.code()))?.map(|g| g.value()).unwrap_or(0);
            if n <= 1 {
                counts.remove((fmt, old.code()))?;
            } else {
                counts.insert((fmt, old.code()), n - 1)?;
            }
        }
        let n = counts.get((fmt, new.code()))?.map(|g| g.value()).unwrap_or(0);
        counts.insert((fmt, new.code()), n + 1)?;
    }
    let key = (fmt, rec.tenant.as_str(), rec.id);
    match (old, new) {
        (Some(JobState::Queued), _) => {
            tx.ready()?.remove(key)?;
        }
        (Some(JobState::Leased), _) => {
            tx.leases()?.remove(rec.id)?;
        }
        (Some(JobState::Retrying), _) => {
            txn.open_table(RETRYING)?.remove(rec.id)?;
        }
        (Some(JobState::Dead), _) => {
            txn.open_table(DEAD)?.remove(rec.id)?;
        }
        _ => {}
    }
    match new {
        JobState::Queued => {
            tx.ready()?.insert(key, ())?;
        }
        JobState::Retrying => {
            txn.open_table(RETRYING)?.insert(rec.id, rec.next_attempt_at)?;
        }
        JobState::Dead => {
            txn.open_table(DEAD)?.insert(rec.id, now)?;
        }
        _ => {}
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// the one writer of the state machine
// ---------------------------------------------------------------------------

/// Applies `event` to `rec` with the pure [`transition`]: the one place a job's state
/// changes. `fill` sets the fields that follow from the new state before the record and
/// its indexes are saved; when the transition does not exist nothing is written.
pub fn apply(tx: &mut Tx<'_, '_>, rec: &mut JobRecord, event: Event, now: i64, fill: impl FnOnce(&mut JobRecord, JobState)) -> Result<Result<JobState, TransitionError>, StoreError> {
    let old = state_of(rec)?;
    let next = match transition(old, event) {
        Ok(next) => next,
        Err(e) => return Ok(Err(e)),
    };
    rec.state = u32::from(next.code());
    // Gaining a parent is something that happened to another job.
    if event != Event::Adopt {
        rec.updated_at = now;
    }
    fill(rec, next);
    save(tx, Some(old), rec, now)?;
    Ok(Ok(next))
}

/// Moves `lease` (job `id`'s current one) to at least `until` (µs): the one writer of
/// lease extensions (heartbeats, a partial as a sign of life, the core's own waits).
fn extend_lease(tx: &Tx<'_, '_>, id: u64, lease: &mut LeaseRecord, until: i64) -> Result<(), StoreError> {
    lease.deadline = lease.deadline.max(until);
    tx.leases()?.insert(id, lease.encode_to_vec().as_slice())?;
    Ok(())
}

/// A partial submission of lease `lease` (job `rec`'s current one) was accepted: the
/// [`Event::Progress`] transition, and the lease extended to at least `until` (a partial
/// is a sign of life, like a heartbeat). Returns the lease's deadline.
pub fn progress(tx: &mut Tx<'_, '_>, rec: &mut JobRecord, lease: &mut LeaseRecord, until: i64, now: i64) -> Result<i64, StoreError> {
    apply(tx, rec, Event::Progress, now, |_, _| {})?.map_err(|e| StoreError::Corrupt(e.to_string()))?;
    extend_lease(tx, rec.id, lease, until)?;
    Ok(lease.deadline)
}

// ---------------------------------------------------------------------------
// operations
// ---------------------------------------------------------------------------

pub fn insert(tx: &mut Tx<'_, '_>, new: NewJob, now: i64) -> Result<JobRecord, StoreError> {
    let id = next_counter(tx, "next_job_id")?;
    let rec = record(id, new, now);
    save(tx, None, &rec, now)?;
    Ok(rec)
}

/// A new queued job's record.
fn record(id: u64, new: NewJob, now: i64) -> JobRecord {
    JobRecord {
        id,
        tenant: new.tenant,
        organization: new.organization,
        format: new.format,
        name: new.name,
        options_json: new.options_json,
        url: new.url,
        blob: new.blob,
        size: new.size,
        inline: new.inline,
        state: u32::from(JobState::Queued.code()),
        created_at: now,
        updated_at: now,
        ..Default::default()
    }
}

/// The job a submission of `tenant` created under child name `name`, if any.
pub fn child_named(txn: &WriteTransaction, tenant: &str, name: &str) -> Result<Option<u64>, StoreError> {
    Ok(txn.open_table(CHILD_NAMES)?.get((tenant, name))?.map(|g| g.value()))
}

/// Creates the child job `new` of job `parent`, queued, under its name in the tenant.
pub fn insert_child(tx: &mut Tx<'_, '_>, new: NewJob, parent: u64, now: i64) -> Result<JobRecord, StoreError> {
    let id = next_counter(tx, "next_job_id")?;
    let rec = JobRecord { parents: vec![parent], ..record(id, new, now) };
    save(tx, None, &rec, now)?;
    tx.txn.open_table(CHILD_NAMES)?.insert((rec.tenant.as_str(), rec.name.as_str()), rec.id)?;
    Ok(rec)
}

/// Job `id` (created by another submission) gains `parent` ([`Event::Adopt`]).
pub fn adopt(tx: &mut Tx<'_, '_>, id: u64, parent: u64, now: i64) -> Result<(), StoreError> {
    let Some(mut child) = load(tx, id)? else { return Ok(()) };
    if child.parents.contains(&parent) {
        return Ok(());
    }
    apply(tx, &mut child, Event::Adopt, now, |r, _| r.parents.push(parent))?.map_err(|e| StoreError::Corrupt(e.to_string()))?;
    Ok(())
}

/// A client's job: the one its idempotency key already names in the tenant (false),
/// or a new one (true).
pub fn insert_once(tx: &mut Tx<'_, '_>, new: NewJob, now: i64) -> Result<(JobRecord, bool), StoreError> {
    if !new.idempotency_key.is_empty() {
        let existing = tx.txn.open_table(IDEMPOTENCY)?.get((new.tenant.as_str(), new.idempotency_key.as_str()))?.map(|g| g.value());
        if let Some(rec) = existing.map(|id| load(tx, id)).transpose()?.flatten() {
            return Ok((rec, false));
        }
    }
    let key = (!new.idempotency_key.is_empty()).then(|| (new.tenant.clone(), new.idempotency_key.clone()));
    let rec = insert(tx, new, now)?;
    if let Some((tenant, key)) = key {
        tx.txn.open_table(IDEMPOTENCY)?.insert((tenant.as_str(), key.as_str()), rec.id)?;
    }
    Ok((rec, true))
}

/// Stores a small content in CONTENTS under its blake3 hex `hash` (the caller hashed
/// it), unless it is there already. Durable with the transaction that stores it.
/// Counts their bytes in META's `inline_content_bytes` (the blob-store gauge's share).
pub fn put_content(tx: &Tx<'_, '_>, hash: &str, data: &[u8]) -> Result<(), StoreError> {
    let mut t = tx.txn.open_table(CONTENTS)?;
    if t.get(hash)?.is_none() {
        t.insert(hash, data)?;
        let mut meta = tx.meta()?;
        let before = meta.get(INLINE_BYTES_KEY)?.map_or(0, |g| g.value());
        meta.insert(INLINE_BYTES_KEY, before + data.len() as u64)?;
    }
    Ok(())
}

const INLINE_BYTES_KEY: &str = "inline_content_bytes";

/// Bytes of the contents kept inline (each counted once).
pub fn inline_bytes(txn: &ReadTransaction) -> Result<u64, StoreError> {
    Ok(txn.open_table(META)?.get(INLINE_BYTES_KEY)?.map_or(0, |g| g.value()))
}

/// The inline content of job `rec` (None when its content is a blob file, or missing).
/// `contents` opens the CONTENTS table (of a read or a write transaction), only for an
/// inline job: a lease of any other job does not pay for the table.
pub fn inline_content<T: ReadableTable<&'static str, &'static [u8]>>(rec: &JobRecord, contents: impl FnOnce() -> Result<T, redb::TableError>) -> Result<Option<Vec<u8>>, StoreError> {
    if !rec.inline {
        return Ok(None);
    }
    Ok(contents()?.get(rec.blob.as_str())?.map(|g| g.value().to_vec()))
}

/// A granted lease: the job, its new lease, and its content when that is inline.
#[derive(Debug, Clone)]
pub struct Granted {
    pub job: JobRecord,
    pub lease: LeaseRecord,
    pub content: Option<Vec<u8>>,
}

/// Leases job `id` to `worker`, if it is still queued (it may have been cancelled
/// since the queue actor picked it).
pub fn lease(tx: &mut Tx<'_, '_>, id: u64, worker: &str, policy: &Policy, now: i64) -> Result<Option<Granted>, StoreError> {
    let Some(mut rec) = load(tx, id)? else { return Ok(None) };
    if apply(tx, &mut rec, Event::Lease, now, |r, _| r.lease_seq += 1)?.is_err() {
        return Ok(None);
    }
    let lease = LeaseRecord { worker_id: worker.to_string(), attempt: rec.lease_seq, deadline: now + policy.lease_us, granted_at: now };
    tx.leases()?.insert(id, lease.encode_to_vec().as_slice())?;
    // Missing only if the file was damaged: the worker's ReadBlob then fails the attempt.
    let content = inline_content(&rec, || tx.txn.open_table(CONTENTS))?;
    Ok(Some(Granted { job: rec, lease, content }))
}

/// Extends the leases that `worker` holds among `items` (job id, optional lease
/// number); returns the extended job ids and the new deadline.
pub fn heartbeat(tx: &mut Tx<'_, '_>, worker: &str, items: &[(u64, Option<u64>)], policy: &Policy, now: i64) -> Result<(Vec<u64>, i64), StoreError> {
    let deadline = now + policy.lease_us;
    let mut extended = Vec::new();
    for &(id, attempt) in items {
        let Some(mut lease) = load_lease(tx, id)? else { continue };
        if check_holder(id, &lease, Some(worker), attempt).is_err() {
            continue;
        }
        extend_lease(tx, id, &mut lease, deadline)?;
        extended.push(id);
    }
    Ok((extended, deadline))
}

/// Extends lease `attempt` of job `id` by a lease from `now`, if it is current.
pub fn keep_alive(tx: &mut Tx<'_, '_>, id: u64, attempt: u64, policy: &Policy, now: i64) -> Result<(), StoreError> {
    let Some(mut lease) = load_lease(tx, id)? else { return Ok(()) };
    if lease.attempt == attempt {
        extend_lease(tx, id, &mut lease, now + policy.lease_us)?;
    }
    Ok(())
}

/// Why a worker's call (a submission, a failure, a heartbeat, a ReadBlob) does not
/// apply to a job's current lease: the one fencing check, [`check_holder`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Fenced {
    #[error("no job {0}")]
    NoJob(u64),
    #[error("job {id} is {state}, not leased")]
    NotLeased { id: u64, state: &'static str },
    #[error("job {0} has no lease")]
    NoLease(u64),
    #[error("lease {given} of job {id} is not current (current: {current})")]
    Stale { id: u64, given: u64, current: u64 },
    #[error("job {0} is leased to another worker")]
    OtherHolder(u64),
}

/// Whether `lease` (job `id`'s current one) is the one named: lease number `attempt`
/// and holder `worker`, each when given (a seed-only worker names neither).
pub fn check_holder(id: u64, lease: &LeaseRecord, worker: Option<&str>, attempt: Option<u64>) -> Result<(), Fenced> {
    if let Some(given) = attempt.filter(|a| *a != lease.attempt) {
        return Err(Fenced::Stale { id, given, current: lease.attempt });
    }
    if worker.is_some_and(|w| w != lease.worker_id) {
        return Err(Fenced::OtherHolder(id));
    }
    Ok(())
}

/// The job and its lease, if lease `attempt` of job `id` is current and held by `worker` (when given).
pub(crate) fn fence(tx: &Tx<'_, '_>, id: u64, worker: Option<&str>, attempt: u64) -> Result<Result<(JobRecord, LeaseRecord), Fenced>, StoreError> {
    let Some(rec) = load(tx, id)? else { return Ok(Err(Fenced::NoJob(id))) };
    let state = state_of(&rec)?;
    if state != JobState::Leased {
        return Ok(Err(Fenced::NotLeased { id, state: state.as_str() }));
    }
    let Some(lease) = load_lease(tx, id)? else { return Ok(Err(Fenced::NoLease(id))) };
    Ok(check_holder(id, &lease, worker, Some(attempt)).map(|()| (rec, lease)))
}

#[derive(Debug, Clone)]
pub enum FailOutcome {
    /// The lease named is not current: nothing changed.
    NotCurrent(String),
    /// Back in the queue at `due` (µs).
    Retrying { due: i64, worker: String },
    /// Dead-lettered.
    Dead { worker: String },
}

/// Fails lease `attempt` of job `id`. `worker` (when given) must be the holder;
/// the supervisor and lease expiry pass `None` and fence on the attempt alone.
pub fn fail(tx: &mut Tx<'_, '_>, id: u64, worker: Option<&str>, attempt: u64, mut failure: FailureRecord, policy: &Policy, now: i64) -> Result<FailOutcome, StoreError> {
    let (mut rec, lease) = match fence(tx, id, worker, attempt)? {
        Ok(v) => v,
        Err(fenced) => return Ok(FailOutcome::NotCurrent(fenced.to_string())),
    };
    rec.attempts = rec.attempts.saturating_add(1);
    failure.attempt = attempt;
    failure.at = now;
    if failure.worker_id.is_empty() {
        failure.worker_id = lease.worker_id.clone();
    }
    let event = Event::Fail { permanent: failure.permanent, attempts: rec.attempts, max_attempts: policy.max_attempts };
    let next = apply(tx, &mut rec, event, now, |r, next| {
        r.next_attempt_at = if next == JobState::Retrying {
            let backoff = backoff_ms(r.attempts, policy.backoff_base_ms, policy.backoff_max_ms, fastrand::f64());
            // The worker's hint is a floor (the server said "not before"), capped.
            let delay = backoff.max(failure.retry_after_ms.min(policy.retry_after_max_ms));
            now + i64::try_from(delay).unwrap_or(i64::MAX / 2) * 1000
        } else {
            0
        };
    })?
    .map_err(|e| StoreError::Corrupt(e.to_string()))?;
    tx.txn.open_table(FAILURES)?.insert((id, attempt), failure.encode_to_vec().as_slice())?;
    Ok(if next == JobState::Retrying { FailOutcome::Retrying { due: rec.next_attempt_at, worker: lease.worker_id } } else { FailOutcome::Dead { worker: lease.worker_id } })
}

#[derive(Debug, Clone)]
pub enum ExpireOutcome {
    NotCurrent,
    /// A heartbeat moved the deadline: check again then.
    Extended(i64),
    Failed(FailOutcome),
}

pub fn expire(tx: &mut Tx<'_, '_>, id: u64, attempt: u64, policy: &Policy, now: i64) -> Result<ExpireOutcome, StoreError> {
    let Some(lease) = load_lease(tx, id)? else { return Ok(ExpireOutcome::NotCurrent) };
    if lease.attempt != attempt {
        return Ok(ExpireOutcome::NotCurrent);
    }
    if lease.deadline > now {
        return Ok(ExpireOutcome::Extended(lease.deadline));
    }
    let kind = FailureKind::LeaseExpired;
    let failure = FailureRecord {
        kind: kind.as_str().into(),
        permanent: policy.is_permanent(kind),
        reason: crate::failure::reason(kind, &format!("no heartbeat from {} within the lease", lease.worker_id)),
        ..Default::default()
    };
    Ok(ExpireOutcome::Failed(fail(tx, id, None, attempt, failure, policy, now)?))
}

/// Moves a retrying job whose backoff ran out back to the queue.
pub fn due(tx: &mut Tx<'_, '_>, id: u64, now: i64) -> Result<Option<JobRecord>, StoreError> {
    let Some(mut rec) = load(tx, id)? else { return Ok(None) };
    if rec.next_attempt_at > now {
        return Ok(None);
    }
    Ok(apply(tx, &mut rec, Event::Due, now, |r, _| r.next_attempt_at = 0)?.ok().map(|_| rec))
}

/// A lease given back: the queued job, who held it and its lease number.
#[derive(Debug, Clone)]
pub struct Released {
    pub job: JobRecord,
    pub worker: String,
    pub attempt: u64,
}

/// Gives a lease back without charging an attempt (drain, restart), or None when the
/// lease was not current.
pub fn release(tx: &mut Tx<'_, '_>, id: u64, attempt: Option<u64>, now: i64) -> Result<Option<Released>, StoreError> {
    let Some(lease) = load_lease(tx, id)? else { return Ok(None) };
    if attempt.is_some_and(|a| a != lease.attempt) {
        return Ok(None);
    }
    let Some(mut rec) = load(tx, id)? else { return Ok(None) };
    if apply(tx, &mut rec, Event::Release, now, |_, _| {})?.is_err() {
        return Ok(None);
    }
    Ok(Some(Released { job: rec, worker: lease.worker_id, attempt: lease.attempt }))
}

/// Every job that holds a lease now.
pub fn leased_ids(tx: &Tx<'_, '_>) -> Result<Vec<u64>, StoreError> {
    let t = tx.leases()?;
    Ok(t.iter()?.map(|e| e.map(|(k, _)| k.value())).collect::<Result<_, _>>()?)
}

/// The state a job left when cancelled, and who held it.
#[derive(Debug, Clone)]
pub struct Cancelled {
    pub job: JobRecord,
    pub previous: JobState,
    pub worker: Option<String>,
    /// The lease that was current (its attempt ends without a final).
    pub attempt: Option<u64>,
}

/// A client's job, if it exists for `tenant`.
fn client_job(tx: &Tx<'_, '_>, id: u64, tenant: Option<&str>) -> Result<Result<JobRecord, JobError>, StoreError> {
    Ok(load(tx, id)?.filter(|r| tenant.is_none_or(|t| t == r.tenant)).ok_or(JobError::NotFound(id)))
}

pub fn cancel(tx: &mut Tx<'_, '_>, id: u64, tenant: Option<&str>, now: i64) -> Result<Result<Cancelled, JobError>, StoreError> {
    let mut rec = match client_job(tx, id, tenant)? {
        Ok(r) => r,
        Err(e) => return Ok(Err(e)),
    };
    let previous = state_of(&rec)?;
    let lease = load_lease(tx, id)?;
    if let Err(e) = apply(tx, &mut rec, Event::Cancel, now, |r, _| r.next_attempt_at = 0)? {
        return Ok(Err(e.into()));
    }
    let attempt = lease.as_ref().map(|l| l.attempt);
    Ok(Ok(Cancelled { job: rec, previous, worker: lease.map(|l| l.worker_id), attempt }))
}

/// Moves a dead (or cancelled) job back to the queue with a fresh attempt budget;
/// its failure history stays.
pub fn retry(tx: &mut Tx<'_, '_>, id: u64, tenant: Option<&str>, now: i64) -> Result<Result<JobRecord, JobError>, StoreError> {
    let mut rec = match client_job(tx, id, tenant)? {
        Ok(r) => r,
        Err(e) => return Ok(Err(e)),
    };
    Ok(apply(tx, &mut rec, Event::Retry, now, |r, _| r.attempts = 0)?.map(|_| rec).map_err(JobError::from))
}

// ---------------------------------------------------------------------------
// reads
// ---------------------------------------------------------------------------

/// A job with its lease and failure history, as read from one snapshot.
#[derive(Debug, Clone)]
pub struct JobView {
    pub job: JobRecord,
    pub lease: Option<LeaseRecord>,
    pub failures: Vec<FailureRecord>,
}

pub fn get(txn: &ReadTransaction, id: u64) -> Result<Option<JobView>, StoreError> {
    let jobs = txn.open_table(JOBS)?;
    let Some(bytes) = jobs.get(id)? else { return Ok(None) };
    let job = JobRecord::decode(bytes.value())?;
    view(txn, job).map(Some)
}

fn view(txn: &ReadTransaction, job: JobRecord) -> Result<JobView, StoreError> {
    let lease = match txn.open_table(LEASES)?.get(job.id)? {
        Some(b) => Some(LeaseRecord::decode(b.value())?),
        None => None,
    };
    let mut failures = Vec::new();
    for entry in txn.open_table(FAILURES)?.range((job.id, 0)..=(job.id, u64::MAX))? {
        let (_, v) = entry?;
        failures.push(FailureRecord::decode(v.value())?);
    }
    Ok(JobView { job, lease, failures })
}

#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    pub state: Option<JobState>,
    pub format: Option<String>,
    pub tenant: Option<String>,
}

/// Jobs in id order after `after`, at most `limit`, and the id to continue after.
pub fn list(txn: &ReadTransaction, filter: &ListFilter, after: u64, limit: usize) -> Result<(Vec<JobView>, Option<u64>), StoreError> {
    let jobs = txn.open_table(JOBS)?;
    let mut out = Vec::new();
    for entry in jobs.range((after.saturating_add(1))..)? {
        let (k, v) = entry?;
        let job = JobRecord::decode(v.value())?;
        if filter.state.is_some_and(|s| u32::from(s.code()) != job.state)
            || filter.format.as_ref().is_some_and(|f| *f != job.format)
            || filter.tenant.as_ref().is_some_and(|t| *t != job.tenant)
        {
            continue;
        }
        out.push(view(txn, job)?);
        if out.len() >= limit {
            return Ok((out, Some(k.value())));
        }
    }
    Ok((out, None))
}

/// Queue depth: (format, state, count), for every pair with at least one job.
pub fn depths(txn: &ReadTransaction) -> Result<Vec<(String, JobState, u64)>, StoreError> {
    let mut out = Vec::new();
    for entry in txn.open_table(COUNTS)?.iter()? {
        let (k, v) = entry?;
        let (fmt, code) = k.value();
        if let Some(state) = JobState::from_code(code) {
            out.push((fmt.to_string(), state, v.value()));
        }
    }
    Ok(out)
}

/// Every queued job: (format, tenant, id), to rebuild the in-memory ready index.
pub fn ready(txn: &ReadTransaction) -> Result<Vec<(String, String, u64)>, StoreError> {
    let mut out = Vec::new();
    for entry in txn.open_table(READY)?.iter()? {
        let (k, _) = entry?;
        let (f, t, id) = k.value();
        out.push((f.to_string(), t.to_string(), id));
    }
    Ok(out)
}

/// Every retrying job and when it is due.
pub fn retrying(txn: &ReadTransaction) -> Result<Vec<(u64, i64)>, StoreError> {
    let mut out = Vec::new();
    for entry in txn.open_table(RETRYING)?.iter()? {
        let (k, v) = entry?;
        out.push((k.value(), v.value()));
    }
    Ok(out)
}

/// Every lease: (job id, lease number, deadline, holder).
pub fn leases(txn: &ReadTransaction) -> Result<Vec<(u64, u64, i64, String)>, StoreError> {
    let mut out = Vec::new();
    for entry in txn.open_table(LEASES)?.iter()? {
        let (k, v) = entry?;
        let l = LeaseRecord::decode(v.value())?;
        out.push((k.value(), l.attempt, l.deadline, l.worker_id));
    }
    Ok(out)
}
