//! A worker's `IngestionResult`, from a converted request to the reply: the seed
//! fallback for fencing, parsing and validation off the async workers, the wait of a
//! pipelined partial for its predecessor (bounded, the lease kept alive meanwhile),
//! and the failure of a malformed submission as `protocol`. The RPC layer converts
//! the proto into a [`WorkerResult`], calls [`Core::submit_result`] and maps the error.
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::broadcast;

use super::{Core, CoreError};
use crate::failure::{self, FailureKind};
use crate::graph::apply::Encoded;
use crate::graph::validate::validate;
use crate::graph::wire::{self, Submission, WireError};
use crate::lifecycle::submit::{base_offset, Base, Staged, SubmitOutcome};
use crate::store::jobs::{self, FailOutcome};
use crate::store::records::FailureRecord;

/// A worker's result for one job, as converted from the wire.
#[derive(Debug, Clone)]
pub struct WorkerResult {
    pub job_id: u64,
    /// The submitting worker, when it said (a seed-only worker does not).
    pub worker: Option<String>,
    /// The lease number, when it said (0 on the wire: a seed-only worker).
    pub attempt: Option<u64>,
    pub body: ResultBody,
}

#[derive(Debug, Clone)]
pub enum ResultBody {
    /// The worker failed the job: its reason (`<kind>: …` when it names one) and its
    /// own permanence flag (used only when the reason names no kind), and the least
    /// time it asks the retry to wait (ms, 0: none; capped by the policy).
    Failed { reason: String, permanent: bool, retry_after_ms: u64 },
    /// A submission's JSON bytes, not parsed yet.
    Submitted { result_json: Vec<u8> },
}

/// Submissions up to this size are parsed and validated on the RPC task itself.
const INLINE_BYTES: usize = 16 * 1024;

/// What the worker is told.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubmitReply {
    pub accepted: bool,
    pub node_ids: Vec<String>,
    pub lease_deadline: i64,
    pub reason: String,
}

impl SubmitReply {
    fn refused(reason: String) -> Self {
        Self { reason, ..Default::default() }
    }
}

/// Runs `f` on tokio's blocking pool (parsing, validation, store reads).
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, CoreError> {
    tokio::task::spawn_blocking(f).await.map_err(|e| CoreError::Io(format!("blocking task: {e}")))
}

/// The submissions of each lease that the core holds now, from arrival to reply: by
/// seq once parsed, counted before. Shared by the RPC tasks; a guard takes its entry out
/// however the call ends.
#[derive(Clone, Default)]
pub(crate) struct Arriving(Arc<Mutex<HashMap<(u64, u64), Held>>>);

#[derive(Default)]
struct Held {
    unparsed: usize,
    seqs: HashSet<u32>,
}

impl Arriving {
    fn enter(&self, job: u64, attempt: u64, seq: Option<u32>) -> ArrivingGuard {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let held = map.entry((job, attempt)).or_default();
        match seq {
            Some(s) => {
                held.seqs.insert(s);
            }
            None => held.unparsed += 1,
        }
        ArrivingGuard { arriving: self.clone(), key: (job, attempt), seq }
    }

    /// Whether submission `seq` of the lease may be with the core now: held by that
    /// seq, or one of the lease's submissions is not parsed yet.
    fn may_hold(&self, job: u64, attempt: u64, seq: u32) -> bool {
        let map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        map.get(&(job, attempt)).is_some_and(|h| h.unparsed > 0 || h.seqs.contains(&seq))
    }
}

struct ArrivingGuard {
    arriving: Arriving,
    key: (u64, u64),
    seq: Option<u32>,
}

impl Drop for ArrivingGuard {
    fn drop(&mut self) {
        let mut map = self.arriving.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(held) = map.get_mut(&self.key) {
            match self.seq {
                Some(s) => {
                    held.seqs.remove(&s);
                }
                None => held.unparsed = held.unparsed.saturating_sub(1),
            }
            if held.unparsed == 0 && held.seqs.is_empty() {
                map.remove(&self.key);
            }
        }
    }
}

impl Core {
    /// Applies a worker's result (see the module docs).
    pub async fn submit_result(&self, r: WorkerResult) -> Result<SubmitReply, CoreError> {
        let id = r.job_id;
        let worker = r.worker;
        // `worker_id` and `attempt` were added for fencing; a worker that speaks only the
        // seed's fields sends neither. Without `attempt` the submission is fenced by the
        // lease current when it arrives, and without `worker_id` by no holder: what is
        // then still fenced is that the job is leased, the lease does not change between
        // this look and the write (the store checks the number again), and the seq order
        // of its partials. A stale seed worker whose lease expired and was granted again
        // can land a result on the new lease; only the added fields prevent that.
        let attempt = match r.attempt {
            Some(a) => a,
            None => match self.current_lease(id).await? {
                Some(a) => a,
                None => return Ok(SubmitReply::refused(format!("job {id} is not leased"))),
            },
        };
        let bytes = match r.body {
            ResultBody::Failed { reason, permanent, retry_after_ms } => {
                let (kind, _) = failure::split_reason(&reason);
                let failure = FailureRecord {
                    kind: kind.unwrap_or(FailureKind::Transient).as_str().into(),
                    permanent: kind.map_or(permanent, |k| self.policy.is_permanent(k)),
                    reason: failure::truncate_utf8(&reason, failure::MAX_REASON_BYTES).to_string(),
                    worker_id: worker.clone().unwrap_or_default(),
                    retry_after_ms,
                    ..Default::default()
                };
                return Ok(match self.leases.fail(id, worker, attempt, failure).await? {
                    FailOutcome::NotCurrent(reason) => SubmitReply::refused(reason),
                    _ => SubmitReply { accepted: true, ..Default::default() },
                });
            }
            ResultBody::Submitted { result_json } => result_json,
        };
        // Parse, validate all of it and store child contents as blobs, off the async
        // workers (a partial may be tens of MB of JSON). A partial may arrive before its
        // predecessor is accepted (workers pipeline): it is parsed meanwhile, then
        // waits for the predecessor's text offset to validate its spans.
        // Entered until this call returns: a successor waiting on this submission keeps
        // waiting while it is parsed, validated and applied, however long that takes.
        // A small one (most jobs' results) is parsed and validated on this task: for it,
        // the hop to the blocking pool costs more than the work.
        let small = bytes.len() <= INLINE_BYTES;
        let unparsed = self.arriving.enter(id, attempt, None);
        let parsed = if small { wire::parse(&bytes).map(|sub| (sub, bytes)) } else { blocking(move || wire::parse(&bytes).map(|sub| (sub, bytes))).await? };
        let _arriving = parsed.as_ref().ok().map(|(sub, _)| self.arriving.enter(id, attempt, Some(sub.seq)));
        drop(unparsed);
        let checked = match parsed {
            Err(e) => Err(e),
            Ok((sub, bytes)) => match self.base_when_ready(id, attempt, sub.seq).await? {
                // Child contents are written (and fsync'd) as blobs: never on this task.
                Ok(base) if small && sub.child_jobs.iter().all(|c| c.content_b64.is_none()) => self.check(id, attempt, base, sub, bytes)?,
                Ok(base) => {
                    let core = self.clone();
                    blocking(move || core.check(id, attempt, base, sub, bytes)).await??
                }
                Err(gap) => Err(gap),
            },
        };
        let staged = match checked {
            Ok(staged) => Staged { worker_id: worker, ..staged },
            Err(err) => {
                // Malformed: the attempt fails as `protocol` (if it is current), nothing is applied.
                let kind = FailureKind::Protocol;
                let reason = failure::reason(kind, &err.to_string());
                let failure = FailureRecord {
                    kind: kind.as_str().into(),
                    permanent: self.policy.is_permanent(kind),
                    reason: reason.clone(),
                    worker_id: worker.clone().unwrap_or_default(),
                    ..Default::default()
                };
                return Ok(SubmitReply::refused(match self.leases.fail(id, worker, attempt, failure).await? {
                    FailOutcome::NotCurrent(fenced) => fenced,
                    _ => reason,
                }));
            }
        };
        Ok(match self.leases.submit(staged).await? {
            SubmitOutcome::Accepted { node_ids, lease_deadline, .. } => SubmitReply { accepted: true, node_ids, lease_deadline, reason: String::new() },
            SubmitOutcome::Rejected(reason) => SubmitReply::refused(reason),
            SubmitOutcome::Protocol { reason, .. } => SubmitReply::refused(failure::reason(FailureKind::Protocol, &reason)),
        })
    }

    /// The number of job `id`'s current lease, if it is leased (read on a blocking thread).
    async fn current_lease(&self, id: u64) -> Result<Option<u64>, CoreError> {
        let store = self.store.clone();
        let view = blocking(move || jobs::get(&store.read()?, id)).await??;
        Ok(view.and_then(|v| v.lease).map(|l| l.attempt))
    }

    /// The text offset submission `seq` of lease `attempt` starts at, once its
    /// predecessor is accepted. A gap is an error naming it: `seq - 2` not accepted
    /// (at most two partials are in flight), or `seq - 1` not accepted within
    /// `[jobs] partial_wait_secs`, during which the lease is kept alive (the core holds
    /// the worker's call; the worker is not silent). The wait counts only while no
    /// submission of the lease that may be `seq - 1` is with the core: a predecessor
    /// that arrived and is slow to parse, validate or apply is waited for. For a lease that is not current, 0:
    /// the store fences the submission.
    async fn base_when_ready(&self, job: u64, attempt: u64, seq: u32) -> Result<Result<u64, WireError>, CoreError> {
        // The first submission of a lease starts at offset 0: nothing to read.
        if seq == 0 {
            return Ok(Ok(0));
        }
        let gap = |missing: u32, why: &str| WireError::field("seq", format!("{seq} leaves a gap: seq {missing} of this lease {why}"));
        let config = self.config();
        let wait = config.jobs.partial_wait();
        let keep_alive_every = (config.jobs.lease() / 3).max(Duration::from_millis(10));
        // Subscribed before looking, so that a commit between the look and the wait is heard.
        let mut changes = self.store.subscribe();
        let mut deadline = tokio::time::Instant::now() + wait;
        let mut next_keep_alive = tokio::time::Instant::now();
        loop {
            let store = self.store.clone();
            match blocking(move || base_offset(&store.read()?, job, attempt, seq)).await?? {
                Base::At(base) => return Ok(Ok(base)),
                Base::NotLeased => return Ok(Ok(0)),
                Base::Gap => return Ok(Err(gap(seq.saturating_sub(2), "was not accepted (a worker keeps at most two partials in flight)"))),
                Base::Waiting => {}
            }
            loop {
                let now = tokio::time::Instant::now();
                // The predecessor is still with the core (parsed, validated or applied now):
                // not a gap, however slow; the wait restarts once it is gone.
                if seq > 0 && self.arriving.may_hold(job, attempt, seq - 1) {
                    deadline = now + wait;
                }
                if now >= deadline {
                    return Ok(Err(gap(seq.saturating_sub(1), &format!("was not accepted within {} s", wait.as_secs_f64()))));
                }
                if now >= next_keep_alive {
                    self.leases.keep_alive(job, attempt).await?;
                    next_keep_alive = now + keep_alive_every;
                }
                match tokio::time::timeout_at(deadline.min(next_keep_alive), changes.recv()).await {
                    Err(_) => continue,
                    Ok(Ok(changed)) if changed != job => continue,
                    Ok(Err(broadcast::error::RecvError::Closed)) => return Ok(Ok(0)),
                    // This job changed (or events were missed): look again.
                    Ok(_) => break,
                }
            }
        }
    }

    /// Validates a parsed submission against the text accepted so far for its lease
    /// (which ends at `base`), and stores its child jobs' large contents as blobs (the
    /// small ones go with the submission's commit).
    /// `Ok(Err(_))` is a malformed submission; `Err(_)` a failure of ours. Blocking.
    fn check(&self, job: u64, attempt: u64, base: u64, sub: Submission, bytes: Vec<u8>) -> Result<Result<Staged, WireError>, CoreError> {
        let config = self.config();
        let checked = match validate(&sub, base, &config.graph, &config.known_formats()) {
            Ok(c) => c,
            Err(e) => return Ok(Err(e)),
        };
        // Contents within [store].inline_kb are stored in the submission's own commit;
        // the larger ones as blob files, one batch for all of them (an archive's
        // thousands of files): two filesystem syncs per submission, not two fsyncs each.
        let inline_max = config.store.inline_bytes();
        let mut child_inline: Vec<(String, Vec<u8>)> = Vec::new();
        let mut child_blobs = vec![String::new(); checked.child_contents.len()];
        let mut large: Vec<(usize, Vec<u8>)> = Vec::new();
        for (i, content) in checked.child_contents.into_iter().enumerate() {
            match content {
                Some(data) if !data.is_empty() && data.len() <= inline_max => {
                    let hash = blake3::hash(&data).to_hex().to_string();
                    child_blobs[i] = format!("{hash}:{}:inline", data.len());
                    child_inline.push((hash, data));
                }
                Some(data) => large.push((i, data)),
                None => {}
            }
        }
        let contents: Vec<&[u8]> = large.iter().map(|(_, d)| d.as_slice()).collect();
        let stored = self.store.blobs().put_all(&contents).map_err(|e| CoreError::Io(format!("cannot store a child job's content: {e}")))?;
        for ((i, _), (hash, size)) in large.iter().zip(stored) {
            child_blobs[*i] = format!("{hash}:{size}");
        }
        let props = match Encoded::of(&sub) {
            Ok(p) => p,
            Err(e) => return Ok(Err(e)),
        };
        // Only a later partial can carry ids the core assigned earlier in this lease.
        let core_refs = if sub.seq == 0 { Vec::new() } else { crate::graph::positions::core_refs(&bytes) };
        Ok(Ok(Staged { job_id: job, worker_id: None, attempt, base, result_json: bytes, sub, props, child_blobs, child_inline, core_refs }))
    }
}
