//! Conversions between proto messages and domain values, with the validation that
//! names the offending field.
use tonic::Status;

use super::invalid;
use crate::actors::submission::{ResultBody, WorkerResult};
use crate::proto;
use crate::store::jobs::JobView;
use crate::store::state::JobState;

/// Longest failure_reason accepted on the wire (stored capped at 512 bytes).
pub const MAX_REASON_WIRE_BYTES: usize = 64 * 1024;

/// A worker's `IngestionResult` as the domain's [`WorkerResult`]: ids checked, the
/// seed's form (no `worker_id`, `attempt` 0) kept as absent.
pub fn worker_result(r: proto::IngestionResult) -> Result<WorkerResult, Status> {
    let job_id = job_id("job_id", &r.job_id)?;
    let worker = if r.worker_id.is_empty() { None } else { Some(ident("worker_id", &r.worker_id)?) };
    let attempt = (r.attempt != 0).then_some(r.attempt);
    let body = if r.success {
        ResultBody::Submitted { result_json: r.result_json }
    } else {
        if r.failure_reason.len() > MAX_REASON_WIRE_BYTES {
            return Err(invalid("failure_reason", format!("{} bytes is over the limit of {MAX_REASON_WIRE_BYTES}", r.failure_reason.len())));
        }
        ResultBody::Failed { reason: r.failure_reason, permanent: r.permanent, retry_after_ms: r.retry_after_ms }
    };
    Ok(WorkerResult { job_id, worker, attempt, body })
}

/// Longest identifier (tenant, organization, worker id) accepted.
pub const MAX_ID_BYTES: usize = 256;
pub const MAX_NAME_BYTES: usize = 4096;
pub const MAX_OPTIONS_BYTES: usize = 64 * 1024;
pub const MAX_URL_BYTES: usize = 8192;

pub fn job_id(field: &str, s: &str) -> Result<u64, Status> {
    if s.is_empty() {
        return Err(invalid(field, "required"));
    }
    s.parse::<u64>().ok().filter(|&id| id > 0).ok_or_else(|| invalid(field, format!("{:?} is not a job id", truncate(s))))
}

/// A printable identifier: non-empty, at most [`MAX_ID_BYTES`], no control characters.
pub fn ident(field: &str, s: &str) -> Result<String, Status> {
    if s.is_empty() {
        return Err(invalid(field, "required"));
    }
    if s.len() > MAX_ID_BYTES {
        return Err(invalid(field, format!("{} bytes is over the limit of {MAX_ID_BYTES}", s.len())));
    }
    if s.chars().any(char::is_control) {
        return Err(invalid(field, "control characters are not allowed"));
    }
    Ok(s.to_string())
}

/// A JSON object (empty text means `{}`), returned in compact form.
pub fn options(field: &str, s: &str) -> Result<String, Status> {
    if s.trim().is_empty() {
        return Ok("{}".into());
    }
    if s.len() > MAX_OPTIONS_BYTES {
        return Err(invalid(field, format!("{} bytes is over the limit of {MAX_OPTIONS_BYTES}", s.len())));
    }
    match serde_json::from_str::<serde_json::Value>(s) {
        Ok(v @ serde_json::Value::Object(_)) => Ok(v.to_string()),
        Ok(_) => Err(invalid(field, "must be a JSON object")),
        Err(e) => Err(invalid(field, format!("not JSON: {e}"))),
    }
}

pub fn url(field: &str, s: &str) -> Result<String, Status> {
    if s.len() > MAX_URL_BYTES {
        return Err(invalid(field, format!("{} bytes is over the limit of {MAX_URL_BYTES}", s.len())));
    }
    let lower = s.to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) || s.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(invalid(field, "must be an http:// or https:// URL"));
    }
    Ok(s.to_string())
}

pub fn state(field: &str, s: &str) -> Result<Option<JobState>, Status> {
    if s.is_empty() {
        return Ok(None);
    }
    JobState::parse(s).map(Some).ok_or_else(|| {
        let known: Vec<_> = JobState::ALL.iter().map(|s| s.as_str()).collect();
        invalid(field, format!("unknown state {:?} (known: {})", truncate(s), known.join(", ")))
    })
}

fn truncate(s: &str) -> &str {
    crate::failure::truncate_utf8(s, 64)
}

fn state_name(code: u32) -> String {
    u8::try_from(code).ok().and_then(JobState::from_code).map_or("unknown", JobState::as_str).to_string()
}

pub fn job(v: JobView) -> proto::Job {
    let j = v.job;
    proto::Job {
        id: j.id.to_string(),
        name: j.name,
        tenant_id: j.tenant,
        organization_id: j.organization,
        format: j.format,
        state: state_name(j.state),
        attempts: j.attempts,
        failures: v
            .failures
            .into_iter()
            .map(|f| proto::Failure {
                attempt: f.attempt,
                kind: f.kind,
                permanent: f.permanent,
                reason: f.reason,
                at: f.at,
                worker_id: f.worker_id,
                exit_code: f.exit_code,
                signal: f.signal,
                stderr_tail: f.stderr_tail,
                peak_rss_bytes: f.peak_rss_bytes,
                retry_after_ms: f.retry_after_ms,
            })
            .collect(),
        options_json: j.options_json,
        url: j.url,
        content_blake3: j.blob,
        content_size: j.size,
        created_at: j.created_at,
        updated_at: j.updated_at,
        next_attempt_at: j.next_attempt_at,
        worker_id: v.lease.as_ref().map(|l| l.worker_id.clone()).unwrap_or_default(),
        lease_attempt: v.lease.as_ref().map_or(0, |l| l.attempt),
        lease_deadline: v.lease.as_ref().map_or(0, |l| l.deadline),
        submission_hash: j.submission_hash,
        node_count: j.node_count,
        parents: j.parents.iter().map(u64::to_string).collect(),
        children: j.children.iter().map(u64::to_string).collect(),
        unchanged: j.unchanged,
    }
}

pub fn pool(p: crate::actors::pool::PoolStatus) -> proto::PoolInfo {
    proto::PoolInfo {
        name: p.name,
        formats: p.formats,
        desired: p.desired,
        live: p.live,
        degraded: p.degraded,
        restarts: p.restarts,
        last_error: p.last_error,
        workers: p
            .workers
            .into_iter()
            .map(|w| proto::WorkerInfo {
                worker_id: w.worker_id,
                pid: w.pid,
                state: w.state.as_str().into(),
                job_id: w.job_id.map(|j| j.to_string()).unwrap_or_default(),
                restarts: w.restarts,
                jobs_done: w.jobs_done,
            })
            .collect(),
    }
}

/// The JobPayload a worker receives: the seed's fields plus the lease number, and a
/// small content itself.
pub fn payload(d: crate::actors::queue::Delivery) -> proto::JobPayload {
    let (job, lease, content) = (d.granted.job, d.granted.lease, d.granted.content);
    let options: serde_json::Value = serde_json::from_str(&job.options_json).unwrap_or_else(|_| serde_json::json!({}));
    let mut body = serde_json::json!({ "format": job.format, "name": job.name, "options": options });
    if !job.url.is_empty() {
        body["url"] = job.url.clone().into();
    } else if content.is_some() {
        // Small content rides in the payload itself (JobPayload.content): no file to open.
        body["content"] = serde_json::json!({ "blake3": job.blob, "size": job.size, "inline": true });
    } else {
        let path = d.content_path.map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
        body["content"] = serde_json::json!({ "blake3": job.blob, "size": job.size, "path": path });
    }
    proto::JobPayload {
        job_id: job.id.to_string(),
        tenant_id: job.tenant,
        organization_id: job.organization,
        kind: job.format,
        payload_json: body.to_string(),
        lease_deadline: lease.deadline,
        attempts: job.attempts,
        attempt: lease.attempt,
        content: content.unwrap_or_default(),
    }
}
