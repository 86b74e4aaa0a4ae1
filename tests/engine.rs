//! The job engine end to end: the real `telha serve` process, real gRPC on
//! 127.0.0.1:0, a real redb file in a temp dir, and test workers speaking
//! WorkerService through the generated client.
mod common;

use std::time::Duration;

use common::*;
use telha::proto::*;
use tonic::Code;

/// Jobs go only to workers that declared their format.
#[tokio::test]
async fn routing_by_format() {
    let s = Server::start(None);
    let csv = s.submit("t", "csv", "a.csv", b"a,b\n1,2\n").await;
    let txt = s.submit("t", "txt", "a.txt", b"hello").await;
    let mut wt = Worker::connect(&s, "w-txt", &["txt"]).await;
    let mut wc = Worker::connect(&s, "w-csv", &["csv"]).await;
    let jt = wt.expect_job().await;
    let jc = wc.expect_job().await;
    assert_eq!((jt.job_id.as_str(), jt.kind.as_str()), (txt.id.as_str(), "txt"));
    assert_eq!((jc.job_id.as_str(), jc.kind.as_str()), (csv.id.as_str(), "csv"));
    assert_eq!(jc.tenant_id, "t");
    assert_eq!(jc.attempts, 0);
    assert_eq!(jc.attempt, 1);
    let payload: serde_json::Value = serde_json::from_str(&jc.payload_json).unwrap();
    assert_eq!(payload["format"], "csv");
    // A small content rides in the payload: no file to open.
    assert_eq!(payload["content"]["inline"], true);
    assert_eq!(jc.content, b"a,b\n1,2\n");
    assert!(wt.next(Duration::from_millis(300)).await.is_none(), "the txt worker got a second job");
}

/// The whole content a worker may read with ReadBlob.
async fn read_blob(w: &mut Worker, job: &JobPayload) -> Vec<u8> {
    let req = ReadBlobRequest { job_id: job.job_id.clone(), attempt: job.attempt, worker_id: w.id.clone() };
    let mut stream = w.client.read_blob(req).await.expect("ReadBlob").into_inner();
    let mut data = Vec::new();
    while let Some(chunk) = stream.message().await.expect("ReadBlob chunk") {
        data.extend(chunk.data);
    }
    data
}

/// Contents up to `[store].inline_kb` are stored with their job's commit and sent in the
/// payload; one byte more is a blob file. Both read back the same over ReadBlob, both
/// survive a kill -9, and no file is written for an inline one. `inline_kb = 0` turns it off.
#[tokio::test]
async fn small_contents_ride_in_the_job_commit_and_payload_larger_ones_are_blob_files() {
    let mut s = Server::start(None);
    let at_limit: Vec<u8> = (0..64 * 1024).map(|i| (i % 251) as u8).collect();
    let over: Vec<u8> = (0..64 * 1024 + 1).map(|i| (i % 241) as u8).collect();
    let small = s.submit("t", "txt", "small.txt", &at_limit).await;
    let large = s.submit("t", "txt", "large.txt", &over).await;
    assert_eq!(small.content_blake3, blake3::hash(&at_limit).to_hex().to_string());
    assert_eq!(small.content_size, at_limit.len() as u64);
    let blobs = |s: &Server| {
        let mut n = 0;
        for d in std::fs::read_dir(s.data_dir().join("blobs")).unwrap().flatten().filter(|d| d.file_name() != "tmp") {
            n += std::fs::read_dir(d.path()).unwrap().count();
        }
        n
    };
    // The empty blob and the large content.
    assert_eq!(blobs(&s), 2);
    // Acknowledged means durable: both are there after a crash.
    s.restart();
    let mut w = Worker::connect(&s, "w", &["txt"]).await;
    for _ in 0..2 {
        let j = w.expect_job().await;
        let payload: serde_json::Value = serde_json::from_str(&j.payload_json).unwrap();
        let (want, inline) = if j.job_id == small.id {
            (&at_limit, true)
        } else {
            assert_eq!(j.job_id, large.id);
            (&over, false)
        };
        assert_eq!(payload["content"]["inline"].as_bool().unwrap_or(false), inline, "{payload}");
        if inline {
            assert_eq!(&j.content, want);
            assert!(payload["content"].get("path").is_none());
        } else {
            assert!(j.content.is_empty());
            assert_eq!(&std::fs::read(payload["content"]["path"].as_str().unwrap()).unwrap(), want);
        }
        assert_eq!(&read_blob(&mut w, &j).await, want);
        assert!(w.succeed(&j, &result_with_nodes(0)).await.accepted);
    }
    // Turned off: every content is a file.
    let text = std::fs::read_to_string(&s.config).unwrap() + "\n[store]\ninline_kb = 0\n";
    std::fs::write(&s.config, text).unwrap();
    s.restart();
    let tiny = s.submit("t", "txt", "tiny.txt", b"tiny").await;
    let mut w = Worker::connect(&s, "w2", &["txt"]).await;
    let j = loop {
        let j = w.expect_job().await;
        if j.job_id == tiny.id {
            break j;
        }
    };
    let payload: serde_json::Value = serde_json::from_str(&j.payload_json).unwrap();
    assert!(j.content.is_empty() && payload["content"].get("inline").is_none(), "{payload}");
    assert_eq!(std::fs::read(payload["content"]["path"].as_str().unwrap()).unwrap(), b"tiny");
    assert_eq!(blobs(&s), 3);
}

/// An expired lease fails the attempt as `lease_expired` and redelivers the job
/// with `attempts` + 1; the stale holder's submission is then rejected and the new
/// holder's result wins.
#[tokio::test]
async fn lease_expiry_redelivers_and_fences_the_stale_holder() {
    let s = Server::start(Some("max_attempts = 5\nlease_secs = 0.4\nbackoff_base_ms = 10\nbackoff_max_ms = 20"));
    let job = s.submit("t", "txt", "a.txt", b"x").await;
    let mut a = Worker::connect(&s, "a", &["txt"]).await;
    let first = a.expect_job().await;
    assert_eq!((first.attempts, first.attempt), (0, 1));
    a.stop_polling();
    let mut b = Worker::connect(&s, "b", &["txt"]).await;
    let second = b.expect_job().await;
    assert_eq!(second.job_id, job.id);
    assert_eq!((second.attempts, second.attempt), (1, 2));

    let stale = a.succeed(&first, &result_with_nodes(1)).await;
    assert!(!stale.accepted, "a stale submission was accepted");
    assert!(stale.reason.contains("not current"), "{}", stale.reason);
    let hb = a.heartbeat(&[(&first.job_id, first.attempt)]).await;
    assert!(hb.job_ids.is_empty(), "a stale heartbeat extended a lease");

    let fresh = b.succeed(&second, &result_with_nodes(2)).await;
    assert!(fresh.accepted, "{}", fresh.reason);
    assert_eq!(fresh.node_ids.len(), 2);
    let done = s.job(&job.id).await;
    assert_eq!(done.state, "succeeded");
    assert_eq!(done.node_count, 2);
    assert_eq!(done.failures.len(), 1);
    assert_eq!(done.failures[0].kind, "lease_expired");
    assert_eq!(done.failures[0].attempt, 1);
    assert_eq!(done.failures[0].worker_id, "a");
}

/// A heartbeat extends only leases the calling worker holds; with heartbeats a job
/// outlives `lease_secs` several times over.
#[tokio::test]
async fn heartbeat_extends_only_the_holders_leases() {
    let s = Server::start(Some("lease_secs = 1.0\nbackoff_base_ms = 10\nbackoff_max_ms = 20"));
    let job = s.submit("t", "txt", "a.txt", b"x").await;
    let mut holder = Worker::connect(&s, "holder", &["txt"]).await;
    let mut other = Worker::connect(&s, "other", &["csv"]).await;
    let j = holder.expect_job().await;
    let hb = other.heartbeat(&[(&j.job_id, j.attempt)]).await;
    assert!(hb.job_ids.is_empty(), "another worker extended the holder's lease");
    // Heartbeats every 0.3 s for 2.4 s: over twice the 1 s lease, with room for a slow machine.
    for _ in 0..8 {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let hb = holder.heartbeat(&[(&j.job_id, j.attempt)]).await;
        assert_eq!(hb.job_ids, vec![j.job_id.clone()]);
        assert!(hb.lease_deadline > 0);
    }
    // 2.4 s of a 1 s lease later, the job is still held and has not failed.
    let now = s.job(&job.id).await;
    assert_eq!(now.state, "leased");
    assert!(now.failures.is_empty());
    assert!(holder.succeed(&j, &result_with_nodes(0)).await.accepted);
}

/// A permanent failure dead-letters at once, with the worker's kind and reason.
#[tokio::test]
async fn permanent_failure_is_dead_at_once() {
    let s = Server::start(None);
    let job = s.submit("t", "csv", "bad.csv", b"\x00\x01").await;
    let mut w = Worker::connect(&s, "w", &["csv"]).await;
    let j = w.expect_job().await;
    let r = w.fail(&j, "invalid_input: not a CSV file", true).await;
    assert!(r.accepted);
    let dead = s.job(&job.id).await;
    assert_eq!(dead.state, "dead");
    assert_eq!(dead.attempts, 1);
    assert_eq!(dead.failures.len(), 1);
    assert_eq!(dead.failures[0].kind, "invalid_input");
    assert!(dead.failures[0].permanent);
    assert_eq!(dead.failures[0].reason, "invalid_input: not a CSV file");
    assert!(w.next(Duration::from_millis(300)).await.is_none());
}

/// Retryable failures wait out a growing backoff, then the job is dead at
/// `max_attempts` with its whole failure history; `retry` brings it back.
/// Robust under load: every time bound is measured from before the failure was sent
/// (the backoff starts at its commit, later), and the state read after a failure
/// accepts a backoff that already ran out on a slow machine only if the floor passed.
#[tokio::test]
async fn retryable_failures_back_off_then_dead_then_retry() {
    let s = Server::start(Some("max_attempts = 3\nlease_secs = 30\nbackoff_base_ms = 200\nbackoff_max_ms = 800"));
    let job = s.submit("t", "txt", "flaky.txt", b"x").await;
    let mut w = Worker::connect(&s, "w", &["txt"]).await;
    let mut failed_at = std::time::Instant::now();
    for attempt in 0..3u32 {
        let j = w.expect_job().await;
        assert_eq!(j.attempts, attempt);
        if attempt > 0 {
            // Equal jitter: at least half of base · 2^(attempts-1) passed before redelivery.
            let floor = Duration::from_millis(100 << (attempt - 1));
            let elapsed = failed_at.elapsed();
            if elapsed < floor {
                let v = s.job(&job.id).await;
                panic!("attempt {attempt} redelivered after {elapsed:?}: lease {} of job {} ({}), failures {:?}, next_attempt_at {} updated_at {}", j.attempt, j.job_id, job.id, v.failures.iter().map(|f| (f.attempt, f.kind.clone(), f.at)).collect::<Vec<_>>(), v.next_attempt_at, v.updated_at);
            }
        }
        // Before the call: the commit that starts the backoff comes after this instant.
        failed_at = std::time::Instant::now();
        assert!(w.fail(&j, &format!("transient: try {attempt}"), false).await.accepted);
        let now = s.job(&job.id).await;
        let kinds: Vec<_> = now.failures.iter().map(|f| (f.attempt, f.kind.as_str(), f.permanent)).collect();
        let expected: Vec<_> = (1..=u64::from(attempt) + 1).map(|a| (a, "transient", false)).collect();
        assert_eq!(kinds, expected, "the failure history after try {attempt}: {:?}", now.failures.iter().map(|f| (&f.reason, f.at)).collect::<Vec<_>>());
        if attempt < 2 {
            match now.state.as_str() {
                "retrying" => assert!(now.next_attempt_at > now.updated_at, "no backoff scheduled"),
                // A loaded machine read the job after its backoff ran out: it must have.
                "queued" | "leased" => assert!(failed_at.elapsed() >= Duration::from_millis(100 << attempt), "requeued before its backoff ran out"),
                other => panic!("after a retryable failure the job is {other}"),
            }
        } else {
            assert_eq!(now.state, "dead");
            assert_eq!(now.attempts, 3);
        }
    }
    let retried = s.client().await.retry_job(GetJobRequest { job_id: job.id.clone(), tenant_id: String::new() }).await.unwrap().into_inner();
    assert_eq!(retried.state, "queued");
    assert_eq!(retried.attempts, 0);
    assert_eq!(retried.failures.len(), 3, "retry keeps the history");
    let j = w.expect_job().await;
    assert_eq!(j.attempt, 4);
    assert!(w.succeed(&j, &result_with_nodes(1)).await.accepted);
    assert_eq!(s.job(&job.id).await.state, "succeeded");
}

/// A worker's `retry_after_ms` (an HTTP Retry-After) is a floor under the backoff, and
/// `retry_after_max_ms` caps it: a server asking for ten hours does not park the job.
#[tokio::test]
async fn a_retry_after_hint_holds_the_retry_back_and_is_capped() {
    let s = Server::start(Some("max_attempts = 3\nlease_secs = 30\nbackoff_base_ms = 10\nbackoff_max_ms = 20\nretry_after_max_ms = 1500"));
    let job = s.submit("t", "txt", "busy.txt", b"x").await;
    let mut w = Worker::connect(&s, "w", &["txt"]).await;
    let j = w.expect_job().await;
    let sent = std::time::Instant::now();
    assert!(w.fail_after(&j, "fetch_failed: HTTP 429", 800).await.accepted);
    let v = s.job(&job.id).await;
    let failure = v.failures.last().expect("the failure is kept");
    assert_eq!((failure.kind.as_str(), failure.retry_after_ms), ("fetch_failed", 800));
    if v.state == "retrying" {
        let wait = v.next_attempt_at - failure.at;
        assert!((800_000..=820_000).contains(&wait), "due {wait} µs after the failure, not the hint's 800 ms");
    }
    let again = w.expect_job().await;
    assert!(sent.elapsed() >= Duration::from_millis(800), "redelivered after {:?}, before the hint ran out", sent.elapsed());
    assert!(w.fail_after(&again, "fetch_failed: HTTP 503", 36_000_000).await.accepted);
    let v = s.job(&job.id).await;
    let failure = v.failures.last().expect("the failure is kept");
    assert_eq!(failure.retry_after_ms, 36_000_000, "the hint is recorded as given");
    assert_eq!(v.state, "retrying", "1.5 s cannot have passed on the way back");
    let wait = v.next_attempt_at - failure.at;
    assert!((1_500_000..=1_520_000).contains(&wait), "due {wait} µs after the failure: the cap is 1.5 s");
}

/// Cancel works on queued and leased jobs; the holder of a cancelled job is fenced
/// out; finished jobs cannot be cancelled.
#[tokio::test]
async fn cancel_queued_and_leased_jobs() {
    let s = Server::start(None);
    let mut c = s.client().await;
    let queued = s.submit("t", "csv", "q.csv", b"a").await;
    let cancelled = c.cancel_job(GetJobRequest { job_id: queued.id.clone(), tenant_id: String::new() }).await.unwrap().into_inner();
    assert_eq!(cancelled.state, "cancelled");

    let leased = s.submit("t", "txt", "l.txt", b"a").await;
    let mut w = Worker::connect(&s, "w", &["txt", "csv"]).await;
    let j = w.expect_job().await;
    assert_eq!(j.job_id, leased.id, "the cancelled job was delivered");
    let c2 = c.cancel_job(GetJobRequest { job_id: leased.id.clone(), tenant_id: String::new() }).await.unwrap().into_inner();
    assert_eq!(c2.state, "cancelled");
    let r = w.succeed(&j, &result_with_nodes(1)).await;
    assert!(!r.accepted);
    assert!(w.heartbeat(&[(&j.job_id, j.attempt)]).await.job_ids.is_empty());
    let again = c.cancel_job(GetJobRequest { job_id: leased.id.clone(), tenant_id: String::new() }).await.unwrap_err();
    assert_eq!(again.code(), Code::FailedPrecondition);
    // The worker's credit came back: a new job reaches it.
    let next = s.submit("t", "txt", "n.txt", b"a").await;
    assert_eq!(w.expect_job().await.job_id, next.id);
}

/// A job enqueued while a worker of its format waits with credit is leased to it in the
/// commit that creates it: the reply already says leased, the lease runs from the job's
/// creation, and the job reaches the worker. With the worker's credit used, the next
/// job waits queued and comes once the first is done; and the handed job's end gives
/// its credit back, so a third is handed over again.
#[tokio::test]
async fn a_job_enqueued_to_a_waiting_worker_is_leased_in_the_commit_that_creates_it() {
    let s = Server::start(Some("lease_secs = 30"));
    let mut w = Worker::connect(&s, "w", &["txt"]).await;
    let first = s.submit("t", "txt", "a.txt", b"first").await;
    assert_eq!((first.state.as_str(), first.worker_id.as_str(), first.lease_attempt), ("leased", "w", 1));
    assert_eq!(first.lease_deadline - first.created_at, 30_000_000, "the lease was not granted in the job's own commit");
    let stored = s.job(&first.id).await;
    assert_eq!((stored.state.as_str(), stored.lease_deadline), ("leased", first.lease_deadline));
    let got = w.expect_job().await;
    assert_eq!((got.job_id.as_str(), got.attempt, got.content.as_slice()), (first.id.as_str(), 1, b"first".as_slice()));

    let second = s.submit("t", "txt", "b.txt", b"second").await;
    assert_eq!(second.state, "queued", "a worker without credit was handed a job");
    assert!(w.next(Duration::from_millis(300)).await.is_none(), "a second job came past max_in_flight 1");
    assert!(w.succeed(&got, &result_with_nodes(1)).await.accepted);
    let next = w.expect_job().await;
    assert_eq!(next.job_id, second.id);
    assert!(w.succeed(&next, &result_with_nodes(1)).await.accepted);
    s.wait_for(&second.id, Duration::from_secs(10), |j| j.state == "succeeded").await;

    let third = s.submit("t", "txt", "c.txt", b"third").await;
    assert_eq!(third.state, "leased", "the credit of the handed job did not come back");
    assert_eq!(w.expect_job().await.job_id, third.id);
    assert_eq!(s.job(&first.id).await.state, "succeeded");
}

/// One tenant's large backlog does not starve another tenant's single job.
#[tokio::test]
async fn tenant_fairness() {
    let s = Server::start(None);
    let mut c = s.client().await;
    for i in 0..300 {
        submit(&mut c, "big", "txt", &format!("big-{i}"), b"x").await.unwrap();
    }
    let small = s.submit("small", "txt", "small", b"x").await;
    let mut w = Worker::connect(&s, "w", &["txt"]).await;
    let mut order = Vec::new();
    for _ in 0..3 {
        let j = w.expect_job().await;
        order.push(j.tenant_id.clone());
        assert!(w.succeed(&j, &result_with_nodes(0)).await.accepted);
        if j.job_id == small.id {
            break;
        }
    }
    assert!(order.contains(&"small".to_string()), "the small tenant waited behind the backlog: {order:?}");
}

/// Streaming partials: a re-sent seq is idempotent (same node ids), a gap fails the
/// attempt as `protocol`.
#[tokio::test]
async fn partials_are_idempotent_and_gaps_are_protocol_errors() {
    let s = Server::start(Some("max_attempts = 3\nlease_secs = 30\nbackoff_base_ms = 10\nbackoff_max_ms = 20"));
    let job = s.submit("t", "csv", "s.csv", b"a").await;
    let mut w = Worker::connect(&s, "w", &["csv"]).await;
    let j = w.expect_job().await;
    let p0 = r#"{"v":1,"seq":0,"partial":true,"canonicalText":"a","nodes":[{"labels":["TABLE"],"properties":{}}]}"#;
    let r0 = w.succeed(&j, p0).await;
    assert!(r0.accepted, "{}", r0.reason);
    let again = w.succeed(&j, p0).await;
    assert!(again.accepted);
    assert_eq!(again.node_ids, r0.node_ids, "a re-sent seq got new ids");
    let p1 = r#"{"v":1,"seq":1,"partial":false,"canonicalText":"b","nodes":[{"labels":["ROW"],"properties":{}}]}"#;
    let r1 = w.succeed(&j, p1).await;
    assert!(r1.accepted);
    assert_ne!(r1.node_ids, r0.node_ids);
    let done = s.job(&job.id).await;
    assert_eq!(done.state, "succeeded");
    assert_eq!(done.node_count, 2);
    assert_eq!(done.submission_hash, submission_hash([p0.as_bytes(), p1.as_bytes()]));

    let gap_job = s.submit("t", "csv", "g.csv", b"a").await;
    let g = w.expect_job().await;
    let gap = w.succeed(&g, r#"{"v":1,"seq":2,"partial":true,"canonicalText":"x"}"#).await;
    assert!(!gap.accepted);
    assert!(gap.reason.contains("gap"), "{}", gap.reason);
    let dead = s.job(&gap_job.id).await;
    assert_eq!(dead.state, "dead");
    assert_eq!(dead.failures[0].kind, "protocol");
}

/// A malformed submission is rejected, fails the attempt as permanent `protocol`,
/// and applies nothing.
#[tokio::test]
async fn malformed_submission_is_a_protocol_failure() {
    let s = Server::start(None);
    let job = s.submit("t", "txt", "m.txt", b"a").await;
    let mut w = Worker::connect(&s, "w", &["txt"]).await;
    let j = w.expect_job().await;
    let r = w.succeed(&j, "{not json").await;
    assert!(!r.accepted);
    assert!(r.reason.contains("not a v1 submission"), "{}", r.reason);
    let dead = s.job(&job.id).await;
    assert_eq!(dead.state, "dead");
    assert_eq!(dead.failures[0].kind, "protocol");
    assert!(dead.failures[0].permanent);
    assert!(dead.submission_hash.is_empty());
}

/// Every RPC but health needs the bearer token.
#[tokio::test]
async fn unauthenticated_calls_are_refused() {
    let s = Server::start(None);
    let ch = s.channel().await;
    let mut ingest = telha::proto::ingest_service_client::IngestServiceClient::with_interceptor(ch.clone(), Bearer(None));
    let e = ingest.get_status(GetStatusRequest {}).await.unwrap_err();
    assert_eq!(e.code(), Code::Unauthenticated);
    let wrong = Bearer(Some("Bearer nope".parse().unwrap()));
    let mut ingest = telha::proto::ingest_service_client::IngestServiceClient::with_interceptor(ch.clone(), wrong.clone());
    assert_eq!(ingest.get_job(GetJobRequest { job_id: "1".into(), tenant_id: String::new() }).await.unwrap_err().code(), Code::Unauthenticated);
    let mut worker = telha::proto::worker_service_client::WorkerServiceClient::with_interceptor(ch.clone(), wrong);
    let e = worker.poll_jobs(PollJobsRequest { worker_id: "w".into(), formats: vec!["txt".into()], max_in_flight: 1 }).await.unwrap_err();
    assert_eq!(e.code(), Code::Unauthenticated);
    let mut health = tonic_health::pb::health_client::HealthClient::new(ch);
    let h = health.check(tonic_health::pb::HealthCheckRequest { service: String::new() }).await.expect("health is exempt");
    assert_eq!(h.into_inner().status, tonic_health::pb::health_check_response::ServingStatus::Serving as i32);
}

/// Malformed requests are INVALID_ARGUMENT and name the field.
#[tokio::test]
async fn malformed_requests_name_the_field() {
    let s = Server::start(None);
    let mut c = s.client().await;
    let bad = |e: tonic::Status, field: &str| {
        assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
        assert!(e.message().starts_with(field), "{field}: {}", e.message());
    };
    bad(submit(&mut c, "t", "bogus", "x", b"").await.unwrap_err(), "format");
    bad(submit(&mut c, "t", "", "x", b"").await.unwrap_err(), "format");
    bad(submit(&mut c, "t", "txt", "", b"").await.unwrap_err(), "name");
    bad(submit(&mut c, &"t".repeat(300), "txt", "x", b"").await.unwrap_err(), "tenant_id");
    use telha::proto::submit_job_request::Part;
    let h = SubmitHeader { tenant_id: "t".into(), format: "txt".into(), name: "x".into(), options_json: "[1]".into(), ..Default::default() };
    bad(c.submit_job(tokio_stream::iter(vec![SubmitJobRequest { part: Some(Part::Header(h)) }])).await.unwrap_err(), "options_json");
    let h = SubmitHeader { tenant_id: "t".into(), format: "web".into(), name: "x".into(), url: "file:///etc/passwd".into(), ..Default::default() };
    bad(c.submit_job(tokio_stream::iter(vec![SubmitJobRequest { part: Some(Part::Header(h)) }])).await.unwrap_err(), "url");
    bad(c.submit_job(tokio_stream::iter(vec![SubmitJobRequest { part: Some(Part::Chunk(vec![1])) }])).await.unwrap_err(), "header");
    bad(c.get_job(GetJobRequest { job_id: "abc".into(), tenant_id: String::new() }).await.unwrap_err(), "job_id");
    bad(c.list_jobs(ListJobsRequest { state: "sleeping".into(), ..Default::default() }).await.unwrap_err(), "state");
    bad(c.list_jobs(ListJobsRequest { page_size: 100_000, ..Default::default() }).await.unwrap_err(), "page_size");
    assert_eq!(c.get_job(GetJobRequest { job_id: "999".into(), tenant_id: String::new() }).await.unwrap_err().code(), Code::NotFound);

    let mut w = s.worker_client().await;
    bad(w.poll_jobs(PollJobsRequest { worker_id: String::new(), formats: vec!["txt".into()], max_in_flight: 1 }).await.unwrap_err(), "worker_id");
    bad(w.poll_jobs(PollJobsRequest { worker_id: "w".into(), formats: vec![], max_in_flight: 1 }).await.unwrap_err(), "formats");
    bad(w.poll_jobs(PollJobsRequest { worker_id: "w".into(), formats: vec!["txt".into(), "nope".into()], max_in_flight: 1 }).await.unwrap_err(), "formats[1]");
    let sub = |job_id: &str, worker: &str, attempt: u64| IngestionResult { job_id: job_id.into(), worker_id: worker.into(), attempt, success: true, ..Default::default() };
    bad(w.submit_ingestion_result(sub("", "w", 1)).await.unwrap_err(), "job_id");
    bad(w.submit_ingestion_result(sub("1", "bad\nid", 1)).await.unwrap_err(), "worker_id");
    // Without the added fencing fields (a seed-only worker) a submission is fenced by the
    // job's current lease: for a job that is not leased it is refused, not an error.
    for (worker, attempt) in [("", 1), ("w", 0), ("", 0)] {
        let r = w.submit_ingestion_result(sub("1", worker, attempt)).await.unwrap().into_inner();
        assert!(!r.accepted && !r.reason.is_empty(), "{worker:?} {attempt}: {r:?}");
    }
    let long = IngestionResult { job_id: "1".into(), worker_id: "w".into(), attempt: 1, failure_reason: "x".repeat(100_000), ..Default::default() };
    bad(w.submit_ingestion_result(long).await.unwrap_err(), "failure_reason");
    bad(w.heartbeat(HeartbeatRequest { worker_id: "w".into(), job_ids: vec!["x".into()], leases: vec![] }).await.unwrap_err(), "job_ids[0]");
    // A submission for a job that does not exist is refused, not an error.
    let r = w.submit_ingestion_result(sub("12345", "w", 1)).await.unwrap().into_inner();
    assert!(!r.accepted);
    // The server is still healthy after all of that.
    assert!(c.get_status(GetStatusRequest {}).await.is_ok());
}

/// WatchJob streams each state change and ends when the job is finished.
#[tokio::test]
async fn watch_follows_a_job_to_the_end() {
    let s = Server::start(None);
    let job = s.submit("t", "txt", "w.txt", b"x").await;
    let mut c = s.client().await;
    let mut watch = c.watch_job(GetJobRequest { job_id: job.id.clone(), tenant_id: String::new() }).await.unwrap().into_inner();
    assert_eq!(watch.message().await.unwrap().unwrap().state, "queued");
    let mut w = Worker::connect(&s, "w", &["txt"]).await;
    let j = w.expect_job().await;
    assert_eq!(watch.message().await.unwrap().unwrap().state, "leased");
    w.succeed(&j, &result_with_nodes(0)).await;
    assert_eq!(watch.message().await.unwrap().unwrap().state, "succeeded");
    assert!(watch.message().await.unwrap().is_none(), "the watch did not end");
}

/// On start-up, the leases of the previous run are released without costing an attempt.
#[tokio::test]
async fn restart_releases_leases_of_the_previous_run() {
    let mut s = Server::start(None);
    let job = s.submit("t", "txt", "r.txt", b"x").await;
    let mut w = Worker::connect(&s, "w", &["txt"]).await;
    let j = w.expect_job().await;
    assert_eq!(j.attempt, 1);
    s.restart();
    let now = s.job(&job.id).await;
    assert_eq!(now.state, "queued");
    assert_eq!(now.attempts, 0);
    assert!(now.failures.is_empty());
    let mut w2 = Worker::connect(&s, "w", &["txt"]).await;
    let j2 = w2.expect_job().await;
    assert_eq!((j2.attempts, j2.attempt), (0, 2));
}

/// gRPC reflection lists our services (what `grpcurl -H 'authorization: Bearer …' list`
/// asks); like every RPC but health, it needs the token.
#[tokio::test]
async fn reflection_lists_the_services() {
    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
    use tonic_reflection::pb::v1::ServerReflectionRequest;
    let s = Server::start(None);
    let req = ServerReflectionRequest { host: String::new(), message_request: Some(MessageRequest::ListServices(String::new())) };
    let mut anonymous = ServerReflectionClient::new(s.channel().await);
    let refused = anonymous.server_reflection_info(tokio_stream::iter(vec![req.clone()])).await;
    assert_eq!(refused.map(|_| ()).unwrap_err().code(), Code::Unauthenticated);
    let mut r = ServerReflectionClient::with_interceptor(s.channel().await, s.bearer());
    let mut stream = r.server_reflection_info(tokio_stream::iter(vec![req])).await.expect("reflection").into_inner();
    let resp = stream.message().await.unwrap().unwrap();
    let Some(MessageResponse::ListServicesResponse(list)) = resp.message_response else { panic!("{resp:?}") };
    let names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
    for want in ["telha.v1.WorkerService", "telha.v1.IngestService", "grpc.health.v1.Health"] {
        assert!(names.iter().any(|n| n == want), "{want} missing from {names:?}");
    }
}

/// SubmitIngestionResults: many results on one stream, each handled as the unary call
/// handles it and answered by its request_id, whatever order the answers come in. A
/// result the unary call would refuse with a status is answered with that status and the
/// stream goes on; pipelined partials of one job wait for each other as on unary calls;
/// closing the sending side ends the answers once every result in hand is answered.
#[tokio::test]
async fn a_result_stream_answers_every_result_by_its_request_id() {
    let s = Server::start(None);
    let mut ids = Vec::new();
    for i in 0..6 {
        ids.push(s.submit("t", "txt", &format!("r{i}.txt"), b"x").await.id);
    }
    let mut w = Worker::connect_with(&s, "ws", &["txt"], 8).await;
    let mut jobs = Vec::new();
    for _ in 0..6 {
        jobs.push(w.expect_job().await);
    }
    let (tx, rx) = tokio::sync::mpsc::channel::<IngestionResult>(16);
    let mut answers = w.client.submit_ingestion_results(tokio_stream::wrappers::ReceiverStream::new(rx)).await.expect("open the result stream").into_inner();
    let result = |job: &JobPayload, request_id: u64, json: String| IngestionResult { job_id: job.job_id.clone(), success: true, result_json: json.into_bytes(), worker_id: "ws".into(), attempt: job.attempt, request_id, ..Default::default() };
    // Not a job id: the unary call's INVALID_ARGUMENT, as an answer.
    tx.send(IngestionResult { job_id: "abc".into(), worker_id: "ws".into(), attempt: 1, request_id: 1, ..Default::default() }).await.unwrap();
    // Jobs 0..4: one final result each.
    for (i, job) in jobs[..4].iter().enumerate() {
        tx.send(result(job, 100 + i as u64, result_with_nodes(i))).await.unwrap();
    }
    // Job 4: two partials sent back to back (the second waits for the first, as on unary
    // calls; a worker keeps at most two in flight), then the final once the first is in.
    let partial = |seq: u32, last: bool| format!(r#"{{"v":1,"seq":{seq},"partial":{},"canonicalText":"p{seq}","spans":[],"nodes":[{{"labels":["PARAGRAPH"],"properties":{{"seq":{seq}}}}}],"relationships":[]}}"#, !last);
    for seq in 0..2 {
        tx.send(result(&jobs[4], 200 + u64::from(seq), partial(seq, false))).await.unwrap();
    }
    let mut got = std::collections::BTreeMap::new();
    let mut next = async || tokio::time::timeout(Duration::from_secs(20), answers.message()).await.expect("answers in time").expect("the stream stays healthy");
    while !got.contains_key(&200) {
        let a = next().await.expect("an answer to seq 0");
        got.insert(a.request_id, a);
    }
    tx.send(result(&jobs[4], 202, partial(2, true))).await.unwrap();
    // Job 5 under a lease it does not hold: refused (fenced), not a status.
    let mut stale = result(&jobs[5], 300, result_with_nodes(1));
    stale.attempt += 1;
    tx.send(stale).await.unwrap();
    // A failure report rides the stream too.
    tx.send(IngestionResult { job_id: jobs[5].job_id.clone(), failure_reason: "invalid_input: not text".into(), permanent: true, worker_id: "ws".into(), attempt: jobs[5].attempt, request_id: 301, ..Default::default() }).await.unwrap();
    drop(tx);

    while let Some(a) = next().await {
        assert!(got.insert(a.request_id, a).is_none(), "one answer per request_id");
    }
    assert_eq!(got.keys().copied().collect::<Vec<_>>(), vec![1, 100, 101, 102, 103, 200, 201, 202, 300, 301]);
    let bad = &got[&1];
    assert_eq!((bad.accepted, bad.status_code, bad.job_id.as_str()), (false, Code::InvalidArgument as i32, "abc"));
    assert!(bad.reason.contains("job_id"), "{}", bad.reason);
    for i in 0..4u64 {
        let a = &got[&(100 + i)];
        assert!(a.accepted && a.status_code == 0, "{a:?}");
        assert_eq!((a.job_id.as_str(), a.node_ids.len()), (jobs[i as usize].job_id.as_str(), i as usize));
        assert_eq!(s.job(&jobs[i as usize].job_id).await.state, "succeeded");
    }
    for seq in 0..3u64 {
        assert!(got[&(200 + seq)].accepted, "{:?}", got[&(200 + seq)]);
        assert_eq!(got[&(200 + seq)].node_ids.len(), 1);
    }
    let streamed = s.job(&jobs[4].job_id).await;
    assert_eq!((streamed.state.as_str(), streamed.node_count), ("succeeded", 3));
    let fenced = &got[&300];
    assert!(!fenced.accepted && fenced.status_code == 0 && !fenced.reason.is_empty(), "{fenced:?}");
    assert!(got[&301].accepted, "{:?}", got[&301]);
    assert_eq!(s.job(&jobs[5].job_id).await.state, "dead");
    // The six jobs answered are the six enqueued.
    let mut taken: Vec<String> = jobs.iter().map(|j| j.job_id.clone()).collect();
    taken.sort();
    ids.sort();
    assert_eq!(taken, ids);
}
