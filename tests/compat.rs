//! Clients as others write them, through the real `telha serve`: a worker that speaks
//! only the seed's fields, and a client that retries `SubmitJob` with an idempotency key.
mod common;

use std::time::Duration;

use common::*;
use telha::proto::submit_job_request::Part;
use telha::proto::*;

/// A worker that sets only the seed's fields (no `worker_id` or `attempt` on
/// `IngestionResult`, heartbeats with `job_ids` only) was refused ("attempt: required").
/// It is fenced by the job's current lease: its heartbeat extends, its result and its
/// failure land, and a result for a job it no longer holds is rejected.
#[tokio::test]
async fn a_worker_with_only_the_seed_fields_is_served() {
    let s = Server::start(None);
    let mut w = Worker::connect(&s, "seed-worker", &["txt"]).await;
    let job = s.submit("t", "txt", "a.txt", b"x").await;
    let j = w.expect_job().await;
    assert_eq!(j.job_id, job.id);

    let hb = w.client.heartbeat(HeartbeatRequest { worker_id: "seed-worker".into(), job_ids: vec![j.job_id.clone()], leases: vec![] }).await.unwrap().into_inner();
    assert_eq!(hb.job_ids, vec![j.job_id.clone()]);

    let seed = |job_id: &str, success: bool, result: &str, reason: &str| IngestionResult {
        job_id: job_id.into(),
        success,
        result_json: result.as_bytes().to_vec(),
        failure_reason: reason.into(),
        permanent: !success,
        ..Default::default()
    };
    let r = w.client.submit_ingestion_result(seed(&j.job_id, true, &result_with_nodes(2), "")).await.unwrap().into_inner();
    assert!(r.accepted, "{}", r.reason);
    assert_eq!(r.node_ids.len(), 2);
    assert_eq!(s.job(&j.job_id).await.state, "succeeded");

    // The job is finished: the same seed result again is not applied twice.
    let again = w.client.submit_ingestion_result(seed(&j.job_id, true, &result_with_nodes(3), "")).await.unwrap().into_inner();
    assert!(!again.accepted, "a result for a finished job was accepted");

    let second = s.submit("t", "txt", "b.txt", b"y").await;
    let k = w.expect_job().await;
    assert_eq!(k.job_id, second.id);
    let f = w.client.submit_ingestion_result(seed(&k.job_id, false, "", "invalid_input: not text")).await.unwrap().into_inner();
    assert!(f.accepted, "{}", f.reason);
    let dead = s.job(&k.job_id).await;
    assert_eq!((dead.state.as_str(), dead.failures[0].kind.as_str()), ("dead", "invalid_input"));
}

async fn submit_keyed(s: &Server, tenant: &str, name: &str, key: &str) -> Result<Job, tonic::Status> {
    let header = SubmitHeader { tenant_id: tenant.into(), format: "txt".into(), name: name.into(), idempotency_key: key.into(), ..Default::default() };
    let msgs = vec![SubmitJobRequest { part: Some(Part::Header(header)) }, SubmitJobRequest { part: Some(Part::Chunk(b"hello".to_vec())) }];
    s.client().await.submit_job(tokio_stream::iter(msgs)).await.map(|r| r.into_inner())
}

/// A client that retries `SubmitJob` (say after a crash between commit and reply) made
/// a second job. With the same `idempotency_key` in the same tenant it gets the first
/// job back; another tenant's equal key is its own job; no key means a new job each time.
#[tokio::test]
async fn a_retried_submit_with_its_idempotency_key_returns_the_same_job() {
    let mut s = Server::start(None);
    let first = submit_keyed(&s, "t", "a.txt", "cli-1:a.txt").await.unwrap();
    let retried = submit_keyed(&s, "t", "a.txt", "cli-1:a.txt").await.unwrap();
    assert_eq!(first.id, retried.id);
    // It survives a crash of the server.
    s.restart();
    let after_crash = submit_keyed(&s, "t", "a.txt", "cli-1:a.txt").await.unwrap();
    assert_eq!(first.id, after_crash.id);
    let other_tenant = submit_keyed(&s, "u", "a.txt", "cli-1:a.txt").await.unwrap();
    assert_ne!(first.id, other_tenant.id);
    let unkeyed = (submit_keyed(&s, "t", "a.txt", "").await.unwrap(), submit_keyed(&s, "t", "a.txt", "").await.unwrap());
    assert_ne!(unkeyed.0.id, unkeyed.1.id);
    let all = s.client().await.list_jobs(ListJobsRequest { tenant_id: "t".into(), ..Default::default() }).await.unwrap().into_inner().jobs;
    assert_eq!(all.len(), 3, "{all:?}");
    let bad = submit_keyed(&s, "t", "a.txt", &"k".repeat(300)).await.unwrap_err();
    assert!(bad.message().starts_with("idempotency_key:"), "{}", bad.message());
    // One worker takes the keyed job once.
    let mut w = Worker::connect(&s, "w", &["txt"]).await;
    let mut seen = Vec::new();
    while let Some(j) = w.next(Duration::from_millis(500)).await {
        seen.push(j.job_id.clone());
        assert!(w.succeed(&j, &result_with_nodes(1)).await.accepted);
    }
    assert_eq!(seen.iter().filter(|id| **id == first.id).count(), 1);
}
