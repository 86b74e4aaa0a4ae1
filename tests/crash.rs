//! `kill -9` of a real server process at random points under load: after a restart,
//! every acknowledged state is intact.
mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use telha::proto::*;

#[derive(Default)]
struct Acked {
    /// Jobs whose submission the server acknowledged.
    enqueued: Vec<String>,
    /// job id → lease number of an acknowledged final result.
    succeeded: HashMap<String, u64>,
    /// job id → lease numbers of acknowledged failures.
    failed: HashMap<String, Vec<u64>>,
}

async fn load(server_addr: String, token: String, acked: Arc<Mutex<Acked>>, stop: Arc<tokio::sync::Notify>) {
    let ch = match tonic::transport::Channel::from_shared(format!("http://{server_addr}")).unwrap().connect().await {
        Ok(c) => c,
        Err(_) => return,
    };
    let bearer = Bearer(Some(format!("Bearer {token}").parse().unwrap()));
    let mut ingest = telha::proto::ingest_service_client::IngestServiceClient::with_interceptor(ch.clone(), bearer.clone());
    let mut worker = telha::proto::worker_service_client::WorkerServiceClient::with_interceptor(ch, bearer);
    let producer = {
        let acked = acked.clone();
        async move {
            for i in 0.. {
                match submit(&mut ingest, if i % 3 == 0 { "a" } else { "b" }, "txt", &format!("job-{i}"), b"payload").await {
                    Ok(job) => acked.lock().unwrap().enqueued.push(job.id),
                    Err(_) => return,
                }
            }
        }
    };
    let consumer = {
        let acked = acked.clone();
        async move {
            let req = PollJobsRequest { worker_id: "crash-worker".into(), formats: vec!["txt".into()], max_in_flight: 4 };
            let Ok(resp) = worker.poll_jobs(req).await else { return };
            let mut stream = resp.into_inner();
            while let Ok(Some(job)) = stream.message().await {
                let fail = job.job_id.ends_with('7');
                let r = IngestionResult {
                    job_id: job.job_id.clone(),
                    success: !fail,
                    result_json: if fail { vec![] } else { result_with_nodes(1).into_bytes() },
                    failure_reason: if fail { "transient: flaky".into() } else { String::new() },
                    permanent: false,
                    worker_id: "crash-worker".into(),
                    attempt: job.attempt,
                    retry_after_ms: 0,
                    request_id: 0,
                };
                match worker.submit_ingestion_result(r).await {
                    Ok(resp) if resp.get_ref().accepted => {
                        let mut a = acked.lock().unwrap();
                        if fail {
                            a.failed.entry(job.job_id).or_default().push(job.attempt);
                        } else {
                            a.succeeded.insert(job.job_id, job.attempt);
                        }
                    }
                    Ok(_) => {}
                    Err(_) => return,
                }
            }
        }
    };
    tokio::select! {
        _ = async { tokio::join!(producer, consumer) } => {},
        _ = stop.notified() => {},
    }
}

/// Eight rounds of load, each ended by SIGKILL after a random delay; after each
/// restart, every job the server acknowledged exists, every acknowledged result is
/// still `succeeded`, every acknowledged failure is in the history, and no lease of
/// the dead process survives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_at_random_points_loses_nothing_acknowledged() {
    let mut server = Server::start(Some("max_attempts = 50\nlease_secs = 30\nbackoff_base_ms = 5\nbackoff_max_ms = 10"));
    let acked = Arc::new(Mutex::new(Acked::default()));
    let mut rng = fastrand::Rng::with_seed(0x7e1a);
    for round in 0..8 {
        let stop = Arc::new(tokio::sync::Notify::new());
        let task = tokio::spawn(load(server.addr.clone(), server.token.clone(), acked.clone(), stop.clone()));
        tokio::time::sleep(Duration::from_millis(rng.u64(30..400))).await;
        // A loaded machine may not have acknowledged anything yet: the first kill waits for
        // the load to get going (bounded), so the round tests something.
        let started = std::time::Instant::now();
        while round == 0 && acked.lock().unwrap().enqueued.is_empty() && started.elapsed() < Duration::from_secs(20) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        server.kill9();
        stop.notify_one();
        let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
        server.restart();

        let mut c = server.client().await;
        let (enqueued, succeeded, failed) = {
            let a = acked.lock().unwrap();
            (a.enqueued.clone(), a.succeeded.clone(), a.failed.clone())
        };
        assert!(!enqueued.is_empty() || round > 0, "round {round}: the load never got going");
        for id in &enqueued {
            let job = c.get_job(GetJobRequest { job_id: id.clone(), tenant_id: String::new() }).await;
            let job = job.unwrap_or_else(|e| panic!("round {round}: acknowledged job {id} is gone: {e}")).into_inner();
            assert_ne!(job.state, "leased", "round {round}: job {id} still leased after restart");
        }
        for (id, attempt) in &succeeded {
            let job = c.get_job(GetJobRequest { job_id: id.clone(), tenant_id: String::new() }).await.unwrap().into_inner();
            assert_eq!(job.state, "succeeded", "round {round}: acknowledged result of job {id} lost");
            assert!(!job.submission_hash.is_empty());
            assert!(job.failures.iter().all(|f| f.attempt < *attempt));
        }
        for (id, attempts) in &failed {
            let job = c.get_job(GetJobRequest { job_id: id.clone(), tenant_id: String::new() }).await.unwrap().into_inner();
            for at in attempts {
                assert!(job.failures.iter().any(|f| f.attempt == *at && f.kind == "transient"), "round {round}: acknowledged failure {at} of job {id} lost");
            }
        }
    }
    let a = acked.lock().unwrap();
    assert!(a.enqueued.len() > 50 && a.succeeded.len() > 20, "too little load to prove anything: {} enqueued, {} succeeded", a.enqueued.len(), a.succeeded.len());
    eprintln!("acknowledged: {} jobs, {} results, {} failures", a.enqueued.len(), a.succeeded.len(), a.failed.len());
}
