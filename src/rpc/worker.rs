//! `WorkerService`: what format workers speak.
use std::pin::Pin;
use std::sync::Arc;

use futures_util::{Stream, StreamExt};
use tokio::io::AsyncReadExt;
use tokio::sync::Semaphore;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use super::convert::{self, ident, job_id};
use super::{blocking, invalid, to_status};
use crate::actors::Core;
use crate::proto::worker_service_server::WorkerService;
use crate::proto::*;
use crate::store::jobs;

/// Most jobs one stream may hold at once.
const MAX_IN_FLIGHT: u32 = 64;
/// Most job ids in one heartbeat.
const MAX_HEARTBEAT_JOBS: usize = 10_000;
/// Most results of one `SubmitIngestionResults` stream handled at once; past it the
/// stream is not read until answers have gone out (HTTP/2 flow control holds the worker).
const MAX_STREAM_RESULTS: usize = 128;

pub struct WorkerApi {
    core: Core,
}

impl WorkerApi {
    pub fn new(core: Core) -> Self {
        Self { core }
    }
}

/// A worker's job stream. Jobs wait in its channel until the worker's connection takes
/// them; when the stream closes (the worker went away, or its connection broke) the jobs
/// still waiting were never sent, so each goes back to the queue uncharged at once instead
/// of staying leased until its lease expires.
struct JobStream {
    rx: tokio::sync::mpsc::Receiver<crate::actors::queue::Delivery>,
    leases: crate::actors::lease::Leases,
}

impl Stream for JobStream {
    type Item = crate::actors::queue::Delivery;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

impl Drop for JobStream {
    fn drop(&mut self) {
        // Closed first: a grant that comes later fails to send and releases its own job.
        self.rx.close();
        while let Ok(d) = self.rx.try_recv() {
            tracing::debug!(job = d.granted.job.id, attempt = d.granted.lease.attempt, "job stream closed before this job was sent; releasing it");
            self.leases.undelivered(d.granted.job.id, d.granted.lease.attempt);
        }
    }
}

/// The reply to a submission of job `job_id` (as the worker spelled it), tagged `request_id`.
fn answer(reply: crate::actors::submission::SubmitReply, job_id: String, request_id: u64) -> SubmitResponse {
    SubmitResponse { accepted: reply.accepted, node_ids: reply.node_ids, lease_deadline: reply.lease_deadline, reason: reply.reason, job_id, request_id, status_code: 0 }
}

type Stream_<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

#[tonic::async_trait]
impl WorkerService for WorkerApi {
    type PollJobsStream = Stream_<JobPayload>;
    type ReadBlobStream = Stream_<BlobChunk>;
    type SubmitIngestionResultsStream = Stream_<SubmitResponse>;

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
        let jobs = JobStream { rx, leases: self.core.leases.clone() };
        Ok(Response::new(Box::pin(jobs.map(|d| Ok(convert::payload(d))))))
    }

    async fn submit_ingestion_result(&self, req: Request<IngestionResult>) -> Result<Response<SubmitResponse>, Status> {
        let r = req.into_inner();
        let job_id = r.job_id.clone();
        let reply = self.core.submit_result(convert::worker_result(r)?).await.map_err(to_status)?;
        Ok(Response::new(answer(reply, job_id, 0)))
    }

    async fn submit_ingestion_results(&self, req: Request<Streaming<IngestionResult>>) -> Result<Response<Self::SubmitIngestionResultsStream>, Status> {
        let mut inbound = req.into_inner();
        // A result holds its permit until its answer is in the channel: a worker that stops
        // reading answers fills the channel, then the permits, and then this stream is not
        // read any further (backpressure, not a buffer that grows).
        let (tx, rx) = tokio::sync::mpsc::channel(MAX_STREAM_RESULTS);
        let permits = Arc::new(Semaphore::new(MAX_STREAM_RESULTS));
        let core = self.core.clone();
        tokio::spawn(async move {
            loop {
                let Ok(permit) = permits.clone().acquire_owned().await else { return };
                let r = match inbound.message().await {
                    Ok(Some(r)) => r,
                    // The worker closed its side: the results in hand are still answered.
                    Ok(None) => return,
                    Err(status) => {
                        tracing::debug!(%status, "result stream ended");
                        return;
                    }
                };
                // Each on a task of its own, which finishes even if the worker goes away
                // meanwhile (the submission is applied or not as a whole either way).
                let (core, tx) = (core.clone(), tx.clone());
                tokio::spawn(async move {
                    let (job_id, request_id) = (r.job_id.clone(), r.request_id);
                    let outcome = match convert::worker_result(r) {
                        Ok(r) => core.submit_result(r).await.map_err(to_status),
                        Err(status) => Err(status),
                    };
                    let reply = match outcome {
                        Ok(reply) => answer(reply, job_id, request_id),
                        Err(status) => SubmitResponse { reason: status.message().to_string(), job_id, request_id, status_code: status.code() as i32, ..Default::default() },
                    };
                    let _ = tx.send(Ok(reply)).await;
                    drop(permit);
                });
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
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
        let (view, inline) = blocking(move || {
            let txn = store.read()?;
            let view = jobs::get(&txn, id)?;
            let inline = match &view {
                Some(v) => jobs::inline_content(&v.job, || txn.open_table(crate::store::tables::CONTENTS))?,
                None => None,
            };
            Ok::<_, crate::store::StoreError>((view, inline))
        })
        .await?
        .map_err(to_status)?;
        // The one fencing check; a job that is gone or not leased is fenced too (PERMISSION_DENIED).
        let Some(view) = view else { return Err(to_status(jobs::Fenced::NoJob(id))) };
        let Some(lease) = view.lease.as_ref() else { return Err(to_status(jobs::Fenced::NoLease(id))) };
        jobs::check_holder(id, lease, Some(&worker), Some(r.attempt)).map_err(to_status)?;
        if view.job.inline {
            // A small content kept in the database: one chunk (at most [store] inline_kb).
            let data = inline.ok_or_else(|| to_status(super::ApiError::NoBlob(id)))?;
            let chunks = (!data.is_empty()).then_some(Ok(BlobChunk { data }));
            return Ok(Response::new(Box::pin(tokio_stream::iter(chunks))));
        }
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

#[cfg(test)]
mod tests {
    use super::JobStream;
    use crate::actors::queue::Delivery;
    use crate::actors::Core;
    use crate::config::Config;
    use crate::store::jobs::{self, NewJob};
    use crate::store::state::JobState;

    /// Jobs still waiting in a job stream's channel when the stream closes were never sent:
    /// each is released at once, uncharged; the one the connection took stays leased.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_closed_job_stream_gives_back_the_jobs_it_never_sent() {
        let dir = tempfile::tempdir().unwrap();
        let text = format!("[server]\nlisten = \"127.0.0.1:0\"\ndata_dir = \"{}\"\n[jobs]\nlease_secs = 300\n", dir.path().join("data").display());
        let core = Core::start(Config::parse(&text, &dir.path().join("supervisor.toml")).unwrap()).await.unwrap();
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        let mut ids = Vec::new();
        for i in 0..3 {
            let new = NewJob { tenant: "t".into(), format: "txt".into(), name: format!("job-{i}"), ..Default::default() };
            let policy = core.policy.clone();
            let granted = core
                .store
                .write(move |t| {
                    let id = jobs::insert(t, new, 1)?.id;
                    jobs::lease(t, id, "w-1", &policy, 2)
                })
                .await
                .unwrap()
                .unwrap();
            ids.push(granted.job.id);
            tx.send(Delivery { granted, content_path: None }).await.unwrap();
        }
        let mut stream = JobStream { rx, leases: core.leases.clone() };
        let taken = futures_util::StreamExt::next(&mut stream).await.unwrap();
        assert_eq!(taken.granted.job.id, ids[0]);
        drop(stream);

        let state = |id: u64| {
            let view = jobs::get(&core.store.read().unwrap(), id).unwrap().unwrap();
            (jobs::state_of(&view.job).unwrap(), view.job.attempts)
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while ids[1..].iter().any(|&id| state(id).0 != JobState::Queued) {
            assert!(std::time::Instant::now() < deadline, "the unsent jobs were not released: {:?}", ids.iter().map(|&id| state(id)).collect::<Vec<_>>());
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        for &id in &ids[1..] {
            assert_eq!(state(id), (JobState::Queued, 0), "job {id} back, uncharged");
        }
        assert_eq!(state(ids[0]).0, JobState::Leased, "the job the connection took stays leased");
        assert!(tx.send(Delivery { granted: taken.granted, content_path: None }).await.is_err(), "the channel is closed");
        core.shutdown().await;
    }
}
