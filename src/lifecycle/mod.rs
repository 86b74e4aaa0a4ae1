//! A job's state changes together with their graph effects, each in the caller's one
//! write transaction: the module above both [`crate::store`] (the job state machine,
//! which knows nothing of the graph) and [`crate::graph`] (what submissions write).
//!
//! - An attempt that ends without its final submission (failure, expiry, release,
//!   cancel) is the transition plus the reclaim of what its partials wrote early.
//! - A submission ([`submit`]) is fenced, applied, and a final one is the finalize plus
//!   the `Succeed` transition plus its child jobs.
pub mod submit;

use crate::graph::apply::reclaim;
use crate::store::jobs::{self, Cancelled, ExpireOutcome, FailOutcome, JobError, Policy};
use crate::store::records::{FailureRecord, JobRecord};
use crate::store::{StoreError, Tx};

/// Deletes what lease `attempt` of job `id` wrote before a final it will never send.
fn reclaim_attempt(tx: &mut Tx<'_, '_>, id: u64, attempt: u64) -> Result<(), StoreError> {
    match jobs::load(tx, id)? {
        Some(rec) => reclaim(tx, id, &rec.tenant, attempt),
        None => Ok(()),
    }
}

/// Fails lease `attempt` of job `id` ([`jobs::fail`]) and reclaims the attempt.
pub fn fail(tx: &mut Tx<'_, '_>, id: u64, worker: Option<&str>, attempt: u64, failure: FailureRecord, policy: &Policy, now: i64) -> Result<FailOutcome, StoreError> {
    let outcome = jobs::fail(tx, id, worker, attempt, failure, policy, now)?;
    if !matches!(outcome, FailOutcome::NotCurrent(_)) {
        reclaim_attempt(tx, id, attempt)?;
    }
    Ok(outcome)
}

/// Expires lease `attempt` of job `id` if its deadline passed ([`jobs::expire`]).
pub fn expire(tx: &mut Tx<'_, '_>, id: u64, attempt: u64, policy: &Policy, now: i64) -> Result<ExpireOutcome, StoreError> {
    let outcome = jobs::expire(tx, id, attempt, policy, now)?;
    if matches!(&outcome, ExpireOutcome::Failed(f) if !matches!(f, FailOutcome::NotCurrent(_))) {
        reclaim_attempt(tx, id, attempt)?;
    }
    Ok(outcome)
}

/// Gives a lease back without charging an attempt ([`jobs::release`]); returns the
/// queued job and the worker that held the lease.
pub fn release(tx: &mut Tx<'_, '_>, id: u64, attempt: Option<u64>, now: i64) -> Result<Option<(JobRecord, String)>, StoreError> {
    let Some(released) = jobs::release(tx, id, attempt, now)? else { return Ok(None) };
    reclaim(tx, id, &released.job.tenant, released.attempt)?;
    Ok(Some((released.job, released.worker)))
}

/// Releases every lease (start-up, and the end of a drain).
pub fn release_all(tx: &mut Tx<'_, '_>, now: i64) -> Result<Vec<u64>, StoreError> {
    let mut released = Vec::new();
    for id in jobs::leased_ids(tx)? {
        if release(tx, id, None, now)?.is_some() {
            released.push(id);
        }
    }
    Ok(released)
}

/// A client cancels job `id` ([`jobs::cancel`]); a leased job's attempt is reclaimed.
pub fn cancel(tx: &mut Tx<'_, '_>, id: u64, tenant: Option<&str>, now: i64) -> Result<Result<Cancelled, JobError>, StoreError> {
    let cancelled = match jobs::cancel(tx, id, tenant, now)? {
        Ok(c) => c,
        Err(e) => return Ok(Err(e)),
    };
    if let Some(attempt) = cancelled.attempt {
        reclaim(tx, id, &cancelled.job.tenant, attempt)?;
    }
    Ok(Ok(cancelled))
}
