//! `IngestService`: what clients speak (the CLI among them).
use std::pin::Pin;

use futures_util::{Stream, StreamExt};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use super::convert::{self, ident, job_id};
use super::{invalid, to_status};
use crate::actors::Core;
use crate::proto::ingest_service_server::IngestService;
use crate::proto::submit_job_request::Part;
use crate::proto::*;
use crate::store::jobs::{self, ListFilter, NewJob};
use crate::store::state::JobState;

const DEFAULT_PAGE: u32 = 100;
const MAX_PAGE: u32 = 1000;

pub struct IngestApi {
    core: Core,
    supervisor: Option<crate::actors::supervisor::Supervisor>,
}

impl IngestApi {
    pub fn new(core: Core, supervisor: Option<crate::actors::supervisor::Supervisor>) -> Self {
        Self { core, supervisor }
    }

    /// Job `id` as a client sees it (of `tenant`, when given), read on a blocking thread.
    async fn view(&self, id: u64, tenant: &str) -> Result<Job, Status> {
        let store = self.core.store.clone();
        match super::blocking(move || jobs::get(&store.read()?, id)).await?.map_err(to_status)? {
            Some(v) if tenant.is_empty() || v.job.tenant == tenant => Ok(convert::job(v)),
            _ => Err(Status::not_found(format!("no job {id}"))),
        }
    }
}

type Stream_<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// A blob being written on a blocking thread, fed chunk by chunk.
struct BlobSink {
    chunks: tokio::sync::mpsc::Sender<Vec<u8>>,
    done: tokio::task::JoinHandle<std::io::Result<(String, u64)>>,
}

impl BlobSink {
    fn start(blobs: &crate::store::BlobStore) -> Result<Self, Status> {
        let mut writer = blobs.writer().map_err(|e| to_status(super::ApiError::Io(format!("cannot create blob: {e}"))))?;
        let (chunks, mut rx) = tokio::sync::mpsc::channel::<Vec<u8>>(8);
        let done = tokio::task::spawn_blocking(move || {
            while let Some(c) = rx.blocking_recv() {
                writer.write(&c)?;
            }
            writer.finish()
        });
        Ok(Self { chunks, done })
    }

    async fn finish(self) -> Result<(String, u64), Status> {
        drop(self.chunks);
        self.done.await.map_err(|e| to_status(super::ApiError::Io(e.to_string())))?.map_err(|e| to_status(super::ApiError::Io(format!("cannot store content: {e}"))))
    }
}

/// Validates a submit header into a job without content.
fn new_job(h: SubmitHeader, known: &std::collections::BTreeSet<String>) -> Result<NewJob, Status> {
    let tenant = if h.tenant_id.is_empty() { "default".to_string() } else { ident("tenant_id", &h.tenant_id)? };
    let organization = if h.organization_id.is_empty() { String::new() } else { ident("organization_id", &h.organization_id)? };
    if h.format.is_empty() {
        return Err(invalid("format", "required"));
    }
    if !known.contains(&h.format) {
        return Err(invalid("format", format!("unknown format {:?} (known: {})", crate::failure::truncate_utf8(&h.format, 64), known.iter().cloned().collect::<Vec<_>>().join(", "))));
    }
    if h.name.is_empty() {
        return Err(invalid("name", "required"));
    }
    if h.name.len() > convert::MAX_NAME_BYTES || h.name.contains('\0') {
        return Err(invalid("name", format!("must be at most {} bytes without NUL", convert::MAX_NAME_BYTES)));
    }
    let options_json = convert::options("options_json", &h.options_json)?;
    let url = if h.url.is_empty() { String::new() } else { convert::url("url", &h.url)? };
    let idempotency_key = if h.idempotency_key.is_empty() { String::new() } else { ident("idempotency_key", &h.idempotency_key)? };
    Ok(NewJob { tenant, organization, format: h.format, name: h.name, options_json, url, idempotency_key, ..Default::default() })
}

#[tonic::async_trait]
impl IngestService for IngestApi {
    type WatchJobStream = Stream_<Job>;

    async fn submit_job(&self, req: Request<Streaming<SubmitJobRequest>>) -> Result<Response<Job>, Status> {
        let mut stream = req.into_inner();
        let header = match stream.next().await {
            Some(Ok(SubmitJobRequest { part: Some(Part::Header(h)) })) => h,
            Some(Ok(_)) => return Err(invalid("header", "the first message must be a SubmitHeader")),
            Some(Err(e)) => return Err(e),
            None => return Err(invalid("header", "required")),
        };
        let mut new = new_job(header, &self.core.config().known_formats())?;
        let config = self.core.config();
        let max = config.server.max_content_mb.saturating_mul(1024 * 1024);
        let inline_max = config.store.inline_bytes();
        // A content that stays within [store].inline_kb is gathered in memory and stored
        // in the job's own commit; past that it goes to a blob file on a blocking thread
        // as it arrives (what was gathered first), and is never held whole in memory.
        let mut gathered: Vec<u8> = Vec::new();
        let mut sink: Option<BlobSink> = None;
        let mut total: u64 = 0;
        while let Some(msg) = stream.next().await {
            match msg?.part {
                Some(Part::Chunk(c)) => {
                    if !new.url.is_empty() {
                        return Err(invalid("chunk", "a URL job carries no content"));
                    }
                    total += c.len() as u64;
                    if total > max {
                        return Err(invalid("chunk", format!("content is over the limit of {} MiB ([server].max_content_mb)", config.server.max_content_mb)));
                    }
                    if c.is_empty() {
                        continue;
                    }
                    if sink.is_none() && gathered.len() + c.len() <= inline_max {
                        gathered.extend_from_slice(&c);
                        continue;
                    }
                    if sink.is_none() {
                        let s = BlobSink::start(self.core.store.blobs())?;
                        if !gathered.is_empty() && s.chunks.send(std::mem::take(&mut gathered)).await.is_err() {
                            break;
                        }
                        sink = Some(s);
                    }
                    if let Some(s) = &sink {
                        if s.chunks.send(c).await.is_err() {
                            break;
                        }
                    }
                }
                Some(Part::Header(_)) => return Err(invalid("header", "only the first message may be a header")),
                None => return Err(invalid("part", "empty message")),
            }
        }
        let mut inline = None;
        if new.url.is_empty() {
            let (hash, size) = match sink {
                Some(s) => s.finish().await?,
                None if gathered.is_empty() => self.core.store.blobs().empty(),
                None => {
                    let hash = blake3::hash(&gathered).to_hex().to_string();
                    new.inline = true;
                    let size = gathered.len() as u64;
                    inline = Some(gathered);
                    (hash, size)
                }
            };
            new.blob = hash;
            new.size = size;
        }
        let (rec, lease, created) = self.core.enqueue(new, inline).await.map_err(to_status)?;
        if !created {
            // The job an earlier submission with this idempotency key made, as it is now.
            return self.view(rec.id, "").await.map(Response::new);
        }
        let what = if lease.is_some() { "job queued and leased in one commit" } else { "job queued" };
        tracing::info!(job = rec.id, tenant = %rec.tenant, format = %rec.format, name = %rec.name, size = rec.size, "{what}");
        // A new job is exactly its record as committed (with the lease granted in that
        // commit, if a worker was waiting): no failures yet.
        Ok(Response::new(convert::job(jobs::JobView { job: rec, lease, failures: Vec::new() })))
    }

    async fn get_job(&self, req: Request<GetJobRequest>) -> Result<Response<Job>, Status> {
        let r = req.into_inner();
        let id = job_id("job_id", &r.job_id)?;
        self.view(id, &r.tenant_id).await.map(Response::new)
    }

    async fn get_projection(&self, req: Request<GetProjectionRequest>) -> Result<Response<Projection>, Status> {
        super::graph::projection(&self.core, req.into_inner()).await.map(Response::new)
    }

    async fn get_node(&self, req: Request<GetNodeRequest>) -> Result<Response<GraphNode>, Status> {
        super::graph::node(&self.core, req.into_inner()).await.map(Response::new)
    }

    async fn list_ambiguities(&self, req: Request<ListAmbiguitiesRequest>) -> Result<Response<ListAmbiguitiesResponse>, Status> {
        super::graph::ambiguities(&self.core, req.into_inner()).await.map(Response::new)
    }

    async fn list_jobs(&self, req: Request<ListJobsRequest>) -> Result<Response<ListJobsResponse>, Status> {
        let r = req.into_inner();
        let filter = ListFilter {
            state: convert::state("state", &r.state)?,
            format: (!r.format.is_empty()).then_some(r.format),
            tenant: (!r.tenant_id.is_empty()).then_some(r.tenant_id),
        };
        if r.page_size > MAX_PAGE {
            return Err(invalid("page_size", format!("at most {MAX_PAGE}")));
        }
        let limit = if r.page_size == 0 { DEFAULT_PAGE } else { r.page_size } as usize;
        let after = if r.page_token.is_empty() { 0 } else { r.page_token.parse::<u64>().map_err(|_| invalid("page_token", "not a token from ListJobs"))? };
        let store = self.core.store.clone();
        let (views, next) = super::blocking(move || jobs::list(&store.read()?, &filter, after, limit)).await?.map_err(to_status)?;
        Ok(Response::new(ListJobsResponse { jobs: views.into_iter().map(convert::job).collect(), next_page_token: next.map(|n| n.to_string()).unwrap_or_default() }))
    }

    async fn watch_job(&self, req: Request<GetJobRequest>) -> Result<Response<Self::WatchJobStream>, Status> {
        let r = req.into_inner();
        let id = job_id("job_id", &r.job_id)?;
        // Subscribe before the first read, so no change between the two is missed.
        let mut changes = self.core.store.subscribe();
        let first = self.view(id, &r.tenant_id).await?;
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        let this = IngestApi { core: self.core.clone(), supervisor: None };
        tokio::spawn(async move {
            let mut last = first.clone();
            let finished = |j: &Job| JobState::parse(&j.state).is_some_and(JobState::is_finished);
            if tx.send(Ok(first)).await.is_err() || finished(&last) {
                return;
            }
            loop {
                tokio::select! {
                    () = tx.closed() => return,
                    ev = changes.recv() => {
                        match ev {
                            Ok(changed) if changed != id => continue,
                            Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                        }
                        let Ok(now) = this.view(id, "").await else { return };
                        if now.state != last.state || now.attempts != last.attempts || now.lease_attempt != last.lease_attempt {
                            last = now.clone();
                            if tx.send(Ok(now)).await.is_err() || finished(&last) {
                                return;
                            }
                        }
                    }
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn retry_job(&self, req: Request<GetJobRequest>) -> Result<Response<Job>, Status> {
        let r = req.into_inner();
        let id = job_id("job_id", &r.job_id)?;
        let tenant = (!r.tenant_id.is_empty()).then_some(r.tenant_id);
        self.core.retry(id, tenant).await.map_err(to_status)?;
        self.view(id, "").await.map(Response::new)
    }

    async fn cancel_job(&self, req: Request<GetJobRequest>) -> Result<Response<Job>, Status> {
        let r = req.into_inner();
        let id = job_id("job_id", &r.job_id)?;
        let tenant = (!r.tenant_id.is_empty()).then_some(r.tenant_id);
        self.core.cancel(id, tenant).await.map_err(to_status)?;
        self.view(id, "").await.map(Response::new)
    }

    async fn get_status(&self, _req: Request<GetStatusRequest>) -> Result<Response<crate::proto::Status>, Status> {
        let store = self.core.store.clone();
        let depths = super::blocking(move || jobs::depths(&store.read()?)).await?.map_err(to_status)?;
        let snapshot = self.core.queue.snapshot().await?;
        let pools = match &self.supervisor {
            Some(s) => s.status().await,
            None => Vec::new(),
        };
        Ok(Response::new(crate::proto::Status {
            queue: depths.into_iter().map(|(format, state, count)| QueueDepth { format, state: state.as_str().into(), count }).collect(),
            known_formats: self.core.config().known_formats().into_iter().collect(),
            pollers: snapshot
                .pollers
                .into_iter()
                .map(|(worker_id, formats, in_flight)| PollerInfo { worker_id, formats, in_flight: u32::try_from(in_flight).unwrap_or(u32::MAX) })
                .collect(),
            pools: pools.into_iter().map(convert::pool).collect(),
        }))
    }
}
