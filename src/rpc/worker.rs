//! `WorkerService`: what format workers speak.
use std::pin::Pin;
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use tokio::io::AsyncReadExt;
use tokio::sync::broadcast;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use super::convert::{self, ident, job_id};
use super::{blocking, invalid, to_status};
use crate::actors::Core;
use crate::failure::{self, FailureKind};
use crate::proto::worker_service_server::WorkerService;
use crate::proto::*;
use crate::graph::apply::Encoded;
use crate::lifecycle::submit::{base_offset, Base, Staged, SubmitOutcome};
use crate::graph::validate::validate;
use crate::graph::wire::{self, Submission, WireError};
use crate::store::jobs::{self, FailOutcome};
use crate::store::records::FailureRecord;

/// Most jobs one stream may hold at once.
const MAX_IN_FLIGHT: u32 = 64;
/// Most job ids in one heartbeat.
const MAX_HEARTBEAT_JOBS: usize = 10_000;
/// Longest failure_reason accepted on the wire (stored capped at 512 bytes).
const MAX_REASON_WIRE_BYTES: usize = 64 * 1024;

pub struct WorkerApi {
    core: Core,
}

impl WorkerApi {
    pub fn new(core: Core) -> Self {
        Self { core }
    }
}

type Stream_<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

#[tonic::async_trait]
impl WorkerService for WorkerApi {
    type PollJobsStream = Stream_<JobPayload>;
    type ReadBlobStream = Stream_<BlobChunk>;

    async fn poll_jobs(&self, req: Request<PollJobsRequest>) -> Result<Response<Self::PollJobsStream>, Status> {
        let r = req.into_inner();
        let worker_id = ident("worker_id", &r.worker_id)?;
        if r.formats.is_empty() {
            return Err(invalid("formats", "declare at least one format"));
        }
        let known = self.core.config().known_formats();
        for (i, f) in r.formats.iter().enumerate() {
            if !known.contains(f) {
                return Err(invalid(&format!("formats[{i}]"), format!("unknown format {f:?} (known: {})", known.iter().cloned().collect::<Vec<_>>().join(", "))));
            }
        }
        if r.max_in_flight > MAX_IN_FLIGHT {
            return Err(invalid("max_in_flight", format!("at most {MAX_IN_FLIGHT}")));
        }
        let max_in_flight = r.max_in_flight.max(1) as usize;
        // Room for every job the stream may hold: a send never waits on a slow reader.
        let (tx, rx) = tokio::sync::mpsc::channel(max_in_flight);
        let mut formats = r.formats;
        formats.sort();
        formats.dedup();
        self.core.queue.register(worker_id, formats, max_in_flight, tx).await?;
        Ok(Response::new(Box::pin(ReceiverStream::new(rx).map(|d| Ok(convert::payload(d))))))
    }

    async fn submit_ingestion_result(&self, req: Request<IngestionResult>) -> Result<Response<SubmitResponse>, Status> {
        let r = req.into_inner();
        let id = job_id("job_id", &r.job_id)?;
        // `worker_id` and `attempt` were added for fencing; a worker that speaks only the
        // seed's fields sends neither. Without `attempt` the submission is fenced by the
        // lease current when it arrives, and without `worker_id` by no holder: what is
        // then still fenced is that the job is leased, the lease does not change between
        // this look and the write (the store checks the number again), and the seq order
        // of its partials. A stale seed worker whose lease expired and was granted again
        // can land a result on the new lease; only the added fields prevent that.
        let worker = if r.worker_id.is_empty() { None } else { Some(ident("worker_id", &r.worker_id)?) };
        let attempt = match r.attempt {
            0 => match current_lease(&self.core, id).await? {
                Some(a) => a,
                None => return Ok(Response::new(SubmitResponse { accepted: false, reason: format!("job {id} is not leased"), ..Default::default() })),
            },
            a => a,
        };
        let leases = &self.core.leases;
        if !r.success {
            if r.failure_reason.len() > MAX_REASON_WIRE_BYTES {
                return Err(invalid("failure_reason", format!("{} bytes is over the limit of {MAX_REASON_WIRE_BYTES}", r.failure_reason.len())));
            }
            let (kind, _) = failure::split_reason(&r.failure_reason);
            let permanent = match kind {
                Some(k) => leases.policy().is_permanent(k),
                None => r.permanent,
            };
            let failure = FailureRecord {
                kind: kind.unwrap_or(FailureKind::Transient).as_str().into(),
                permanent,
                reason: failure::truncate_utf8(&r.failure_reason, failure::MAX_REASON_BYTES).to_string(),
                worker_id: worker.clone().unwrap_or_default(),
                ..Default::default()
            };
            let outcome = leases.fail(id, worker, attempt, failure).await.map_err(to_status)?;
            return Ok(Response::new(match outcome {
                FailOutcome::NotCurrent(reason) => SubmitResponse { accepted: false, reason, ..Default::default() },
                _ => SubmitResponse { accepted: true, ..Default::default() },
            }));
        }
        let bytes = r.result_json;
        // Parse, validate all of it and store child contents as blobs, off the async
        // workers (a partial may be tens of MB of JSON). A partial may arrive before its
        // predecessor is accepted (workers pipeline): it is parsed meanwhile, then
        // waits for the predecessor's text offset to validate its spans.
        let parsed = blocking(move || wire::parse(&bytes).map(|sub| (sub, bytes))).await?;
        let checked = match parsed {
            Err(e) => Err(e),
            Ok((sub, bytes)) => match base_when_ready(&self.core, id, attempt, sub.seq).await? {
                Ok(base) => {
                    let core = self.core.clone();
                    blocking(move || check(&core, id, attempt, base, sub, bytes)).await??
                }
                Err(gap) => Err(gap),
            },
        };
        let sub = match checked {
            Ok(staged) => staged,
            Err(err) => {
                // Malformed: the attempt fails as `protocol` (if it is current), nothing is applied.
                let reason = err.to_string();
                let kind = FailureKind::Protocol;
                let failure = FailureRecord {
                    kind: kind.as_str().into(),
                    permanent: leases.policy().is_permanent(kind),
                    reason: failure::reason(kind, &reason),
                    worker_id: worker.clone().unwrap_or_default(),
                    ..Default::default()
                };
                let outcome = leases.fail(id, worker, attempt, failure).await.map_err(to_status)?;
                let reason = match outcome {
                    FailOutcome::NotCurrent(fenced) => fenced,
                    _ => failure::reason(kind, &reason),
                };
                return Ok(Response::new(SubmitResponse { accepted: false, reason, ..Default::default() }));
            }
        };
        let sub = Staged { worker_id: worker, ..sub };
        let outcome = leases.submit(sub).await.map_err(to_status)?;
        Ok(Response::new(match outcome {
            SubmitOutcome::Accepted { node_ids, lease_deadline, .. } => SubmitResponse { accepted: true, node_ids, lease_deadline, reason: String::new() },
            SubmitOutcome::Rejected(reason) => SubmitResponse { accepted: false, reason, ..Default::default() },
            SubmitOutcome::Protocol { reason, .. } => SubmitResponse { accepted: false, reason: failure::reason(FailureKind::Protocol, &reason), ..Default::default() },
        }))
    }

    async fn heartbeat(&self, req: Request<HeartbeatRequest>) -> Result<Response<HeartbeatResponse>, Status> {
        let r = req.into_inner();
        let worker = ident("worker_id", &r.worker_id)?;
        if r.job_ids.len() + r.leases.len() > MAX_HEARTBEAT_JOBS {
            return Err(invalid("job_ids", format!("at most {MAX_HEARTBEAT_JOBS} jobs per heartbeat")));
        }
        let mut items: Vec<(u64, Option<u64>)> = Vec::with_capacity(r.job_ids.len() + r.leases.len());
        for (i, l) in r.leases.iter().enumerate() {
            items.push((job_id(&format!("leases[{i}].job_id"), &l.job_id)?, Some(l.attempt)));
        }
        for (i, s) in r.job_ids.iter().enumerate() {
            let id = job_id(&format!("job_ids[{i}]"), s)?;
            if !items.iter().any(|(j, _)| *j == id) {
                items.push((id, None));
            }
        }
        let (extended, deadline) = self.core.leases.heartbeat(worker, items).await.map_err(to_status)?;
        Ok(Response::new(HeartbeatResponse { job_ids: extended.iter().map(u64::to_string).collect(), lease_deadline: deadline }))
    }

    async fn read_blob(&self, req: Request<ReadBlobRequest>) -> Result<Response<Self::ReadBlobStream>, Status> {
        let r = req.into_inner();
        let id = job_id("job_id", &r.job_id)?;
        let worker = ident("worker_id", &r.worker_id)?;
        let store = self.core.store.clone();
        let view = blocking(move || jobs::get(&store.read()?, id)).await?.map_err(to_status)?;
        // The one fencing check; a job that is gone or not leased is fenced too (PERMISSION_DENIED).
        let Some(view) = view else { return Err(to_status(jobs::Fenced::NoJob(id))) };
        let Some(lease) = view.lease.as_ref() else { return Err(to_status(jobs::Fenced::NoLease(id))) };
        jobs::check_holder(id, lease, Some(&worker), Some(r.attempt)).map_err(to_status)?;
        let path = self.core.store.blob_path(&view.job.blob).ok_or_else(|| to_status(super::ApiError::NoBlob(id)))?;
        let mut file = tokio::fs::File::open(&path).await.map_err(|e| to_status(super::ApiError::Io(format!("blob of job {id}: {e}"))))?;
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        tokio::spawn(async move {
            let mut buf = vec![0u8; 1 << 20];
            loop {
                match file.read(&mut buf).await {
                    Ok(0) => return,
                    Ok(n) => {
                        if tx.send(Ok(BlobChunk { data: buf[..n].to_vec() })).await.is_err() {
                            return;
                        }
                    }
                    Err(e) => {
                        let _ = tx.send(Err(to_status(super::ApiError::Io(format!("reading blob: {e}"))))).await;
                        return;
                    }
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }
}

/// The number of job `id`'s current lease, if it is leased (read on a blocking thread).
async fn current_lease(core: &Core, id: u64) -> Result<Option<u64>, Status> {
    let store = core.store.clone();
    let view = blocking(move || jobs::get(&store.read()?, id)).await?.map_err(to_status)?;
    Ok(view.and_then(|v| v.lease).map(|l| l.attempt))
}

/// The text offset submission `seq` of lease `attempt` starts at, once its
/// predecessor is accepted. A gap is an error naming it: `seq - 2` not accepted
/// (at most two partials are in flight), or `seq - 1` not accepted within
/// `[jobs] partial_wait_secs`, during which the lease is kept alive (the core holds
/// the worker's call; the worker is not silent). For a lease that is not current, 0:
/// the store fences the submission.
async fn base_when_ready(core: &Core, job: u64, attempt: u64, seq: u32) -> Result<Result<u64, WireError>, Status> {
    let gap = |missing: u32, why: &str| WireError::field("seq", format!("{seq} leaves a gap: seq {missing} of this lease {why}"));
    let config = core.config();
    let wait = config.jobs.partial_wait();
    let keep_alive_every = (config.jobs.lease() / 3).max(Duration::from_millis(10));
    // Subscribed before looking, so that a commit between the look and the wait is heard.
    let mut changes = core.store.subscribe();
    let deadline = tokio::time::Instant::now() + wait;
    let mut next_keep_alive = tokio::time::Instant::now();
    loop {
        let store = core.store.clone();
        match blocking(move || base_offset(&store.read()?, job, attempt, seq)).await?.map_err(to_status)? {
            Base::At(base) => return Ok(Ok(base)),
            Base::NotLeased => return Ok(Ok(0)),
            Base::Gap => return Ok(Err(gap(seq.saturating_sub(2), "was not accepted (a worker keeps at most two partials in flight)"))),
            Base::Waiting => {}
        }
        loop {
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return Ok(Err(gap(seq.saturating_sub(1), &format!("was not accepted within {} s", wait.as_secs_f64()))));
            }
            if now >= next_keep_alive {
                core.leases.keep_alive(job, attempt).await.map_err(to_status)?;
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
/// (which ends at `base`), and stores its child jobs' contents as blobs.
/// `Ok(Err(_))` is a malformed submission; `Err(_)` a failure of ours.
fn check(core: &Core, job: u64, attempt: u64, base: u64, sub: Submission, bytes: Vec<u8>) -> Result<Result<Staged, WireError>, Status> {
    let checked = match validate(&sub, base, &core.config().graph, &core.config().known_formats()) {
        Ok(c) => c,
        Err(e) => return Ok(Err(e)),
    };
    let mut child_blobs = Vec::with_capacity(checked.child_contents.len());
    for content in checked.child_contents {
        child_blobs.push(match content {
            None => String::new(),
            Some(data) => {
                let blob = (|| {
                    let mut w = core.store.blobs().writer()?;
                    w.write(&data)?;
                    w.finish()
                })()
                .map_err(|e| to_status(super::ApiError::Io(format!("cannot store a child job's content: {e}"))))?;
                format!("{}:{}", blob.0, blob.1)
            }
        });
    }
    let props = match Encoded::of(&sub) {
        Ok(p) => p,
        Err(e) => return Ok(Err(e)),
    };
    // Only a later partial can carry ids the core assigned earlier in this lease.
    let core_refs = if sub.seq == 0 { Vec::new() } else { crate::graph::positions::core_refs(&bytes) };
    Ok(Ok(Staged { job_id: job, worker_id: None, attempt, base, result_json: bytes, sub, props, child_blobs, core_refs }))
}
