//! Submissions that a careless or hostile worker can send, through the real `telha serve`:
//! each is refused as `protocol` with the JSON path (never stored altered), bounded in
//! the work it costs, and streamed jobs hash the same whatever the store already holds.
mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};
use telha::proto::*;

/// Submits a job and takes it with `w`.
async fn take(s: &Server, w: &mut Worker, name: &str) -> JobPayload {
    let job = s.submit("t", "txt", name, b"x").await;
    let j = w.expect_job().await;
    assert_eq!(j.job_id, job.id);
    j
}

/// Sends `result` as the job's only submission and expects a `protocol` refusal whose
/// reason starts with `want`; the job is then dead and nothing of it was stored.
async fn refused(s: &Server, w: &mut Worker, result: &str, want: &str) {
    let j = take(s, w, "bad").await;
    let r = w.succeed(&j, result).await;
    assert!(!r.accepted, "accepted: {}", short(result));
    assert!(r.reason.starts_with(&format!("protocol: {want}")), "reason {:?}, want {want:?}", r.reason);
    let job = s.job(&j.job_id).await;
    assert_eq!((job.state.as_str(), job.failures[0].kind.as_str()), ("dead", "protocol"));
}

fn short(s: &str) -> &str {
    &s[..s.len().min(200)]
}

/// A number past float64 (`1e400`) and a value nested deeper than serde's 128 levels
/// were accepted and stored as `{}`; both are refused with the path inside the properties.
#[tokio::test]
async fn properties_that_cannot_be_stored_exactly_are_refused_not_emptied() {
    let s = Server::start(None);
    let mut w = Worker::connect(&s, "w", &["txt"]).await;
    refused(&s, &mut w, r#"{"v":1,"nodes":[{"labels":["A"],"properties":{"ok":1,"x":1e400}}]}"#, "nodes[0].properties.x: ").await;
    let deep = format!(r#"{{"v":1,"nodes":[{{"labels":["A"],"properties":{{"a":{}1{}}}}}]}}"#, "[".repeat(200), "]".repeat(200));
    refused(&s, &mut w, &deep, "nodes[0].properties.a").await;
    let edge = r#"{"v":1,"relationships":[{"type":"R","fromId":"a","toId":"b","properties":{"y":-1e999}}]}"#;
    refused(&s, &mut w, edge, "relationships[0].properties.y: ").await;
    // An integer past 64 bits would come back as the nearest double, and -0 as -0.0.
    refused(&s, &mut w, r#"{"v":1,"nodes":[{"labels":["A"],"properties":{"n":18446744073709551616}}]}"#, "nodes[0].properties: the integer 18446744073709551616 does not fit 64 bits").await;
    refused(&s, &mut w, r#"{"v":1,"nodes":[{"labels":["A"],"properties":{"n":[-9223372036854775809]}}]}"#, "nodes[0].properties: the integer -9223372036854775809").await;
    refused(&s, &mut w, r#"{"v":1,"relationships":[{"type":"R","fromId":"a","toId":"b","properties":{"z":-0}}]}"#, "relationships[0].properties: the integer -0").await;
    // The 64-bit extremes, digits inside strings and doubles written with an exponent are kept exactly.
    let j = take(&s, &mut w, "extremes").await;
    let props = r#"{"max":18446744073709551615,"min":-9223372036854775808,"s":"18446744073709551616 \" -0","d":1.8446744073709552e19,"z":-0.0}"#;
    let r = w.succeed(&j, &format!(r#"{{"v":1,"nodes":[{{"labels":["A"],"properties":{props}}}]}}"#)).await;
    assert!(r.accepted, "{}", r.reason);
    let n = s.client().await.get_node(GetNodeRequest { tenant_id: "t".into(), node_id: r.node_ids[0].clone() }).await.unwrap().into_inner();
    assert_eq!(serde_json::from_str::<Value>(&n.versions[0].properties_json).unwrap(), serde_json::from_str::<Value>(props).unwrap());
    assert!(n.versions[0].properties_json.contains("18446744073709551615") && n.versions[0].properties_json.contains("-9223372036854775808"), "{}", n.versions[0].properties_json);
    // A large but representable number is kept as it was sent.
    let j = take(&s, &mut w, "big").await;
    let r = w.succeed(&j, r#"{"v":1,"nodes":[{"labels":["A"],"properties":{"x":1e300}}]}"#).await;
    assert!(r.accepted, "{}", r.reason);
    let n = s.client().await.get_node(GetNodeRequest { tenant_id: "t".into(), node_id: r.node_ids[0].clone() }).await.unwrap().into_inner();
    assert_eq!(serde_json::from_str::<Value>(&n.versions[0].properties_json).unwrap()["x"], json!(1e300));
}

/// Structs in array form (`"spans":[[0,3,"k"]]`, `"validTime":[1]`) were read as their
/// fields in order; the wire is objects, so they are refused naming the path.
#[tokio::test]
async fn structs_in_array_form_are_refused() {
    let s = Server::start(None);
    let mut w = Worker::connect(&s, "w", &["txt"]).await;
    refused(&s, &mut w, r#"{"v":1,"canonicalText":"abc","spans":[[0,3,"k"]]}"#, "spans[0]: ").await;
    refused(&s, &mut w, r#"{"v":1,"nodes":[{"labels":["A"],"validTime":[1]}]}"#, "nodes[0].validTime: ").await;
    refused(&s, &mut w, r#"{"v":1,"nodes":[["A"]]}"#, "nodes[0]: ").await;
    refused(&s, &mut w, r#"{"v":1,"relationships":[["R",null,"a",null,"b"]]}"#, "relationships[0]: ").await;
    refused(&s, &mut w, r#"{"v":1,"childJobs":[["txt","c"]]}"#, "childJobs[0]: ").await;
    let amb = r#"{"v":1,"nodes":[{"labels":["A"]}],"ambiguities":[{"nodeRef":0,"kind":"k","candidates":[["l",0]],"detectorConfidence":0.5,"appliedCandidateConfidence":0.5}]}"#;
    refused(&s, &mut w, amb, "ambiguities[0].candidates[0]: ").await;
}

/// 300,000 labels on one node kept a core busy for 20 s (a quadratic duplicate check);
/// labels per node are capped (`[graph] max_labels_per_node`) and the answer is quick.
#[tokio::test]
async fn a_node_with_too_many_labels_is_refused_quickly() {
    let s = Server::start(None);
    let mut w = Worker::connect(&s, "w", &["txt"]).await;
    let labels: Vec<String> = (0..300_000).map(|i| format!("L{i}")).collect();
    let result = json!({"v":1,"nodes":[{"labels":labels}]}).to_string();
    let started = Instant::now();
    refused(&s, &mut w, &result, "nodes[0].labels: 300000 is over the limit of 256").await;
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    // Under the cap, many distinct labels pass (the check is linear).
    let j = take(&s, &mut w, "many").await;
    let labels: Vec<String> = (0..256).map(|i| format!("L{i}")).collect();
    let r = w.succeed(&j, &json!({"v":1,"nodes":[{"labels":labels}]}).to_string()).await;
    assert!(r.accepted, "{}", r.reason);
}

/// 500,000 refs to one span were accepted and stored (a 2 MB node record); the entries
/// of a node's spanRefs are capped (`[graph] max_span_refs_per_node`, duplicates counted),
/// refused with the node's path in linear time; at the cap a node is accepted and reads
/// back with every entry.
#[tokio::test]
async fn a_node_with_too_many_span_refs_is_refused_quickly() {
    let s = Server::start(None);
    let mut w = Worker::connect(&s, "w", &["txt"]).await;
    let cap = telha::rules::DEFAULT_MAX_SPAN_REFS_PER_NODE;
    let dup = json!({"v":1,"canonicalText":"x","spans":[{"start":0,"end":1}],"nodes":[{"labels":["A"]},{"labels":["B"],"spanRefs":vec![0; 500_000]}]}).to_string();
    let started = Instant::now();
    refused(&s, &mut w, &dup, &format!("nodes[1].spanRefs: 500000 is over the limit of {cap} per node")).await;
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    // One past the cap with distinct spans (under max_spans) is refused the same way.
    let text = "x".repeat(cap + 1);
    let spans: Vec<Value> = (0..=cap).map(|i| json!({"start": i, "end": i + 1})).collect();
    let over = json!({"v":1,"canonicalText":text,"spans":spans,"nodes":[{"labels":["A"],"spanRefs":(0..=cap).collect::<Vec<_>>()}]}).to_string();
    refused(&s, &mut w, &over, &format!("nodes[0].spanRefs: {} is over the limit of {cap}", cap + 1)).await;
    // At the cap: accepted, and the node reads back with all its refs.
    let j = take(&s, &mut w, "at-cap").await;
    let at = json!({"v":1,"canonicalText":"x","spans":[{"start":0,"end":1}],"nodes":[{"labels":["A"],"spanRefs":vec![0; cap]}]}).to_string();
    let r = w.succeed(&j, &at).await;
    assert!(r.accepted, "{}", r.reason);
    let req = GetProjectionRequest { job_id: j.job_id.clone(), tenant_id: "t".into(), max_items: 0, skip: 0 };
    let graph = s.client().await.get_projection(req).await.unwrap().into_inner();
    assert_eq!(graph.nodes[0].span_refs, vec![0; cap]);
}

/// A streamed job whose later partials point at a node the core named in partial 0 (as
/// the tabular worker's rows point at their TABLE).
fn streamed(table_id: &str) -> [String; 3] {
    [
        json!({"v":1,"seq":0,"partial":true,"canonicalText":"T","spans":[{"start":0,"end":1}],"nodes":[{"labels":["TABLE"],"spanRefs":[0]},{"labels":["ROW"],"properties":{"i":0}}]}).to_string(),
        json!({"v":1,"seq":1,"partial":true,"nodes":[{"labels":["ROW"],"properties":{"i":1}}],"relationships":[{"type":"HAS_ROW","fromId":table_id,"toRef":0}]}).to_string(),
        json!({"v":1,"seq":2,"partial":false,"nodes":[{"labels":["ROW"],"properties":{"i":2}}],"relationships":[{"type":"HAS_ROW","fromId":table_id,"toRef":0},{"type":"NEXT","fromId":"elsewhere:1","toRef":0}]}).to_string(),
    ]
}

/// Runs the streamed job on `s` and returns its submission hash.
async fn streamed_hash(s: &Server, w: &mut Worker) -> String {
    let j = take(s, w, "table.csv").await;
    let first = w.succeed(&j, &streamed("")[0]).await;
    assert!(first.accepted, "{}", first.reason);
    let parts = streamed(&first.node_ids[0]);
    for p in &parts[1..] {
        let r = w.succeed(&j, p).await;
        assert!(r.accepted, "{}", r.reason);
    }
    let job = s.job(&j.job_id).await;
    assert_eq!(job.state, "succeeded");
    job.submission_hash
}

/// The same multi-partial job into an empty store and into a busy one gives the same
/// hash: the core-assigned id in later partials is hashed as its position (`@0.0`,
/// seq 0, node 0), which is what the documented definition computes from the bytes.
#[tokio::test]
async fn a_streamed_job_hashes_the_same_into_a_busy_store() {
    let empty = Server::start(None);
    let mut w = Worker::connect(&empty, "w", &["txt"]).await;
    let fresh = streamed_hash(&empty, &mut w).await;

    let busy = Server::start(None);
    let mut w = Worker::connect(&busy, "w", &["txt"]).await;
    let j = take(&busy, &mut w, "other").await;
    assert!(w.succeed(&j, &result_with_nodes(7)).await.accepted);
    let again = streamed_hash(&busy, &mut w).await;
    assert_eq!(fresh, again);
    let positions = streamed("@0.0");
    assert_eq!(fresh, submission_hash(positions.iter().map(|p| p.as_bytes())));
}

/// A partial whose predecessor never comes held the call 30 s while a short lease ran
/// out (the job retried as `lease_expired`). The wait is bounded by
/// `[jobs] partial_wait_secs`, keeps the lease alive, and a real gap is `protocol`.
#[tokio::test]
async fn an_early_partial_waits_a_bounded_time_and_a_gap_is_protocol() {
    let s = Server::start(Some("max_attempts = 3\nlease_secs = 1\npartial_wait_secs = 2.5\nbackoff_base_ms = 50\nbackoff_max_ms = 100"));
    let mut w = Worker::connect(&s, "w", &["txt"]).await;
    let j = take(&s, &mut w, "gap").await;
    let started = Instant::now();
    let early = json!({"v":1,"seq":1,"partial":true,"canonicalText":"b"}).to_string();
    let r = tokio::time::timeout(Duration::from_secs(10), w.succeed(&j, &early)).await.expect("answered within 10 s");
    assert!(!r.accepted);
    assert!(r.reason.starts_with("protocol: seq: 1 leaves a gap: seq 0 of this lease was not accepted within 2.5 s"), "{}", r.reason);
    assert!(started.elapsed() >= Duration::from_millis(2400), "answered after {:?}", started.elapsed());
    let job = s.job(&j.job_id).await;
    assert_eq!(job.state, "dead", "{job:?}");
    assert_eq!(job.failures.iter().map(|f| f.kind.as_str()).collect::<Vec<_>>(), vec!["protocol"]);
}

/// A partial pipelined behind a predecessor that is slow to apply (a large one) is not a
/// gap: it waits while the predecessor is with the core, past `partial_wait_secs`.
#[tokio::test]
async fn a_partial_behind_a_slow_predecessor_waits_for_it_past_the_partial_wait() {
    let s = Server::start(Some("max_attempts = 3\nlease_secs = 30\npartial_wait_secs = 0.05\nbackoff_base_ms = 50\nbackoff_max_ms = 100"));
    let mut w = Worker::connect(&s, "w", &["txt"]).await;
    let j = take(&s, &mut w, "slow").await;
    // 50,000 nodes in ~2 MB: received at once, then seconds of validating and applying.
    let nodes: Vec<Value> = (0..50_000).map(|i| json!({"labels": ["LINE"], "properties": {"i": i}})).collect();
    let first = json!({"v":1,"seq":0,"partial":true,"canonicalText":"head\n","nodes": nodes}).to_string();
    let second = json!({"v":1,"seq":1,"partial":false,"canonicalText":"tail\n","nodes":[{"labels":["DOC"],"properties":{}}]}).to_string();
    let mut client = w.client.clone();
    let r = IngestionResult { job_id: j.job_id.clone(), success: true, result_json: first.into_bytes(), worker_id: w.id.clone(), attempt: j.attempt, ..Default::default() };
    let slow = tokio::spawn(async move { client.submit_ingestion_result(r).await.expect("submit result").into_inner() });
    // Past the transfer of the first (the core sees a submission once it is received whole).
    tokio::time::sleep(Duration::from_millis(100)).await;
    let r = w.succeed(&j, &second).await;
    let r0 = slow.await.unwrap();
    assert!(r0.accepted, "{}", r0.reason);
    assert!(r.accepted, "{}", r.reason);
    let job = s.wait_for(&j.job_id, Duration::from_secs(10), |j| j.state == "succeeded").await;
    assert!(job.failures.is_empty(), "{:?}", job.failures);
}
