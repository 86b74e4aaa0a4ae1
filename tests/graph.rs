//! The graph store end to end: the real `telha serve`, real gRPC, test workers
//! submitting wire v1 projections, and the graph reads (RPC and CLI).
mod common;

use std::time::Duration;

use common::*;
use serde_json::{json, Value};
use telha::proto::*;
use tonic::Code;

/// A server whose config gets `extra` appended (e.g. a `[graph]` table).
fn server_with(extra: &str) -> Server {
    let mut s = Server::start(None);
    let text = std::fs::read_to_string(&s.config).unwrap() + "\n" + extra + "\n";
    std::fs::write(&s.config, text).unwrap();
    s.restart();
    s
}

/// Submits a job and takes it with `w`.
async fn take(s: &Server, w: &mut Worker, tenant: &str, name: &str) -> JobPayload {
    let job = s.submit(tenant, "txt", name, b"x").await;
    let j = w.expect_job().await;
    assert_eq!(j.job_id, job.id);
    j
}

/// Runs a single-shot job to the end with `result`; returns (job id, node ids).
async fn run(s: &Server, w: &mut Worker, tenant: &str, name: &str, result: &Value) -> (String, Vec<String>) {
    let j = take(s, w, tenant, name).await;
    let r = w.succeed(&j, &result.to_string()).await;
    assert!(r.accepted, "{}", r.reason);
    (j.job_id, r.node_ids)
}

async fn projection(s: &Server, job: &str, tenant: &str) -> Result<Projection, tonic::Status> {
    let req = GetProjectionRequest { job_id: job.into(), tenant_id: tenant.into(), max_items: 0, skip: 0 };
    s.client().await.get_projection(req).await.map(|r| r.into_inner())
}

async fn node(s: &Server, tenant: &str, id: &str) -> Result<GraphNode, tonic::Status> {
    s.client().await.get_node(GetNodeRequest { tenant_id: tenant.into(), node_id: id.into() }).await.map(|r| r.into_inner())
}

async fn ambiguities(s: &Server, tenant: &str, job: &str) -> Result<Vec<GraphAmbiguity>, tonic::Status> {
    let req = ListAmbiguitiesRequest { tenant_id: tenant.into(), job_id: job.into(), page_size: 0, page_token: String::new() };
    s.client().await.list_ambiguities(req).await.map(|r| r.into_inner().ambiguities)
}

/// Every validation rule, through real gRPC: the submission is refused with a reason
/// naming the field, the attempt is dead as permanent `protocol`, nothing is visible.
#[tokio::test]
async fn every_validation_rule_is_a_protocol_failure() {
    let s = server_with("[graph]\nmax_text_bytes = 64\nmax_nodes = 3\nmax_relationships = 2\nmax_spans = 4\n");
    let mut w = Worker::connect(&s, "w", &["txt"]).await;
    let a = r#"{"nodeRef":0,"kind":"k","candidates":[{"label":"l","validFrom":0}],"detectorConfidence":0.5,"appliedCandidateConfidence":0.5}"#;
    let cases: Vec<(String, &str)> = vec![
        (r#"{"v":1,"canonicalText":"ab","spans":[{"start":2,"end":1}],"nodes":[{"labels":["A"],"id":"vis:1"}]}"#.into(), "spans[0]: start 2 is after end 1"),
        (r#"{"v":1,"canonicalText":"ab","spans":[{"start":0,"end":3}]}"#.into(), "spans[0]: [0, 3) is outside"),
        (r#"{"v":1,"canonicalText":"é","spans":[{"start":0,"end":1}]}"#.into(), "does not fall on UTF-8"),
        (r#"{"v":1,"nodes":[{"labels":[]}]}"#.into(), "nodes[0].labels: a node needs at least one label"),
        (r#"{"v":1,"nodes":[{"labels":["not a label"]}]}"#.into(), "nodes[0].labels[0]"),
        (r#"{"v":1,"nodes":[{"labels":["A"],"properties":5}]}"#.into(), "nodes[0].properties: must be a JSON object"),
        (r#"{"v":1,"nodes":[{"labels":["A"],"spanRefs":[0]}]}"#.into(), "nodes[0].spanRefs[0]: 0 is out of range"),
        (r#"{"v":1,"nodes":[{"labels":["A"],"id":"n1"}]}"#.into(), "core-assigned"),
        (r#"{"v":1,"nodes":[{"labels":["A"],"validTime":{"validFrom":2,"validTo":1}}]}"#.into(), "nodes[0].validTime"),
        (r#"{"v":1,"nodes":[{"labels":["A"]}],"relationships":[{"type":"R","fromRef":0,"fromId":"x","toRef":0}]}"#.into(), "give exactly one of fromRef and fromId"),
        (r#"{"v":1,"nodes":[{"labels":["A"]}],"relationships":[{"type":"R","fromRef":0}]}"#.into(), "give exactly one of toRef and toId"),
        (r#"{"v":1,"nodes":[{"labels":["A"]}],"relationships":[{"type":"R","fromRef":0,"toRef":4}]}"#.into(), "relationships[0].toRef: 4 is out of range"),
        (r#"{"v":1,"relationships":[{"type":"","fromId":"a","toId":"b"}]}"#.into(), "relationships[0].type"),
        (r#"{"v":1,"stats":[1]}"#.into(), "stats: invalid type"),
        (r#"{"v":1,"contentHash":"not-hex"}"#.into(), "contentHash"),
        (r#"{"v":1,"childJobs":[{"format":"bogus","name":"c"}]}"#.into(), "childJobs[0].format: unknown format"),
        (r#"{"v":1,"childJobs":[{"format":"txt","name":"c","contentB64":"%%"}]}"#.into(), "childJobs[0].contentB64: not base64"),
        (format!(r#"{{"v":1,"nodes":[{{"labels":["A"]}}],"ambiguities":[{}]}}"#, a.replace("\"nodeRef\":0", "\"nodeRef\":1")), "ambiguities[0].nodeRef"),
        (format!(r#"{{"v":1,"nodes":[{{"labels":["A"]}}],"ambiguities":[{}]}}"#, a.replace(r#"[{"label":"l","validFrom":0}]"#, "[]")), "ambiguities[0].candidates"),
        (format!(r#"{{"v":1,"nodes":[{{"labels":["A"]}}],"ambiguities":[{}]}}"#, a.replace("\"detectorConfidence\":0.5", "\"detectorConfidence\":-0.1")), "ambiguities[0].detectorConfidence"),
        (format!(r#"{{"v":1,"canonicalText":"{}"}}"#, "x".repeat(65)), "[graph].max_text_bytes"),
        (r#"{"v":1,"nodes":[{"labels":["A"]},{"labels":["A"]},{"labels":["A"]},{"labels":["A"]}]}"#.into(), "[graph].max_nodes"),
        (r#"{"v":1,"relationships":[{"type":"R","fromId":"a","toId":"b"},{"type":"R","fromId":"a","toId":"c"},{"type":"R","fromId":"a","toId":"d"}]}"#.into(), "[graph].max_relationships"),
        (r#"{"v":1,"canonicalText":"abcde","spans":[{"start":0,"end":1},{"start":0,"end":1},{"start":0,"end":1},{"start":0,"end":1},{"start":0,"end":1}]}"#.into(), "[graph].max_spans"),
        (r#"{"v":1,"nodes":[{"labels":["A"],"extra":1}]}"#.into(), "unknown field `extra`"),
        (r#"{"v":3}"#.into(), "v: unsupported version 3"),
    ];
    for (i, (bad, want)) in cases.iter().enumerate() {
        let j = take(&s, &mut w, "t", &format!("bad-{i}")).await;
        let r = w.succeed(&j, bad).await;
        assert!(!r.accepted, "case {i} accepted: {bad}");
        assert!(r.reason.starts_with("protocol: ") && r.reason.contains(want), "case {i}: {bad}\n  reason: {}\n  want:   {want}", r.reason);
        let job = s.job(&j.job_id).await;
        assert_eq!((job.state.as_str(), job.failures[0].kind.as_str(), job.failures[0].permanent), ("dead", "protocol", true), "case {i}");
        assert!(job.submission_hash.is_empty());
        assert_eq!(projection(&s, &j.job_id, "").await.unwrap_err().code(), Code::FailedPrecondition);
    }
    assert_eq!(node(&s, "t", "vis:1").await.unwrap_err().code(), Code::NotFound, "a refused submission left a node behind");
}

/// Partials: text slices concatenate byte-exactly, spans are global, node ids come
/// back in order and later partials wire edges to earlier nodes by id; nothing is
/// readable until the final submission commits; a re-sent final gets the same ids.
#[tokio::test]
async fn partials_concatenate_and_stay_invisible_until_the_final_commit() {
    partials_concatenate_and_stay_invisible_until_the_final_commit_with(Server::start(None)).await;
}

/// The same with the staged reverse edges merged after every commit (`[store] merge_rows = 0`).
#[tokio::test]
async fn partials_concatenate_and_stay_invisible_until_the_final_commit_merging_every_commit() {
    partials_concatenate_and_stay_invisible_until_the_final_commit_with(server_with("[store]\nmerge_rows = 0\n")).await;
}

async fn partials_concatenate_and_stay_invisible_until_the_final_commit_with(mut s: Server) {
    let mut w = Worker::connect(&s, "w", &["txt"]).await;
    let j = take(&s, &mut w, "t", "stream").await;
    let p0 = json!({"v":1,"seq":0,"partial":true,"canonicalText":"héllo ","spans":[{"start":0,"end":6,"kind":"w"}],
        "nodes":[{"labels":["TABLE"],"properties":{"name":"t"},"spanRefs":[0],"id":"table:1"},{"labels":["ROW"],"spanRefs":[0]}]});
    let r0 = w.succeed(&j, &p0.to_string()).await;
    assert!(r0.accepted, "{}", r0.reason);
    assert_eq!(r0.node_ids[0], "table:1");
    assert!(r0.node_ids[1].starts_with('n'));
    assert_eq!(node(&s, "t", "table:1").await.unwrap_err().code(), Code::NotFound, "a partial's node is visible");
    assert_eq!(node(&s, "t", &r0.node_ids[1]).await.unwrap_err().code(), Code::NotFound, "a partial's core-id node is visible");
    assert_eq!(projection(&s, &j.job_id, "").await.unwrap_err().code(), Code::FailedPrecondition);
    let p1 = json!({"v":1,"seq":1,"partial":true,"canonicalText":"wörld","spans":[{"start":7,"end":13,"kind":"w"}],
        "nodes":[{"labels":["ROW"],"spanRefs":[0]}],
        "relationships":[{"type":"IN_TABLE","fromRef":0,"toId":"table:1"},{"type":"NEXT","fromId":r0.node_ids[1],"toRef":0}]});
    let r1 = w.succeed(&j, &p1.to_string()).await;
    assert!(r1.accepted, "{}", r1.reason);
    let again = w.succeed(&j, &p1.to_string()).await;
    assert_eq!(again.node_ids, r1.node_ids, "a re-sent partial got new ids");
    let fin = json!({"v":1,"seq":2,"partial":false,"canonicalText":"!","spans":[{"start":13,"end":14}]});
    let rf = w.succeed(&j, &fin.to_string()).await;
    assert!(rf.accepted, "{}", rf.reason);
    assert_eq!(w.succeed(&j, &fin.to_string()).await.node_ids, rf.node_ids, "a re-sent final is not idempotent");

    let p = projection(&s, &j.job_id, "t").await.unwrap();
    assert_eq!(p.canonical_text, "héllo wörld!");
    let spans: Vec<(u64, u64)> = p.spans.iter().map(|s| (s.start, s.end)).collect();
    assert_eq!(spans, vec![(0, 6), (7, 13), (13, 14)]);
    let ids: Vec<&str> = p.nodes.iter().map(|n| n.id.as_str()).collect();
    assert_eq!(ids, vec!["table:1", r0.node_ids[1].as_str(), r1.node_ids[0].as_str()]);
    assert_eq!(p.nodes[2].span_refs, vec![1], "spanRefs of a later partial are not global");
    let req = GetProjectionRequest { job_id: j.job_id.clone(), tenant_id: "t".into(), max_items: 2, skip: 0 };
    let cut = s.client().await.get_projection(req).await.unwrap().into_inner();
    let cut_ids: Vec<&str> = cut.nodes.iter().map(|n| n.id.as_str()).collect();
    assert_eq!((cut_ids, cut.spans.len(), cut.truncated), (ids[..2].to_vec(), 2, true), "max_items cuts inside a partial's record");
    assert_eq!(p.relationships.len(), 2);
    assert!(p.relationships.iter().all(|r| !r.from_dangling && !r.to_dangling));
    assert_eq!(p.relationships[1].from_id, r0.node_ids[1]);
    let t = node(&s, "t", "table:1").await.unwrap();
    assert_eq!(t.edges_in.len(), 1);
    assert_eq!(t.edges_in[0].from_id, r1.node_ids[0]);
    let job = s.job(&j.job_id).await;
    assert_eq!((job.state.as_str(), job.node_count), ("succeeded", 3));
    // p1's reference to the core id of node 1 of seq 0 hashes as that position (README).
    let p1_positions = p1.to_string().replace(&format!("\"{}\"", r0.node_ids[1]), "\"@0.1\"");
    assert_ne!(p1_positions, p1.to_string());
    let parts = [p0.to_string(), p1_positions, fin.to_string()];
    assert_eq!(job.submission_hash, submission_hash(parts.iter().map(|p| p.as_bytes())));

    // The position runs the partials recorded went with the final commit.
    s.kill9();
    let store = telha::store::Store::open(&s.data_dir(), 16).expect("the data dir opens again");
    let txn = store.read().unwrap();
    let runs = redb::ReadableTableMetadata::len(&txn.open_table(telha::store::tables::CORE_IDS).unwrap()).unwrap();
    assert_eq!(runs, 0, "position runs left after the final commit");
    drop(txn);
    store.close().await;
}

/// Partials are applied as they arrive, yet nothing of them shows before the final
/// commit: not a fresh node, not an edge from a visible node to it, not an ambiguity;
/// an edge whose key another job holds keeps that job's version until then. An
/// attempt that dies is reclaimed: after a retry succeeds, only its rows remain.
#[tokio::test]
async fn early_applied_partials_stay_hidden_and_a_failed_attempt_leaves_nothing() {
    early_applied_partials_stay_hidden_and_a_failed_attempt_leaves_nothing_with(Server::start(None)).await;
}

/// The same with the staged reverse edges merged after every commit (`[store] merge_rows = 0`).
#[tokio::test]
async fn early_applied_partials_stay_hidden_and_a_failed_attempt_leaves_nothing_merging_every_commit() {
    early_applied_partials_stay_hidden_and_a_failed_attempt_leaves_nothing_with(server_with("[store]\nmerge_rows = 0\n")).await;
}

async fn early_applied_partials_stay_hidden_and_a_failed_attempt_leaves_nothing_with(s: Server) {
    let mut w = Worker::connect(&s, "w", &["txt"]).await;
    let base = json!({"v":1,"nodes":[{"labels":["HUB"],"id":"hub"},{"labels":["X"],"id":"x:1"}],
        "relationships":[{"type":"LINK","fromRef":0,"toRef":1,"properties":{"by":"a"}}]});
    run(&s, &mut w, "t", "base", &base).await;
    let link_by = |n: &GraphNode| -> Vec<(String, String)> { n.edges_out.iter().map(|e| (e.r#type.clone(), e.properties_json.clone())).collect() };
    let partial = |by: &str| {
        json!({"v":1,"seq":0,"partial":true,"canonicalText":"row",
            "nodes":[{"labels":["ROW"],"properties":{"by":by}}],
            "relationships":[{"type":"HAS","fromId":"hub","toRef":0},{"type":"LINK","fromId":"hub","toId":"x:1","properties":{"by":by}}],
            "ambiguities":[{"nodeRef":0,"kind":"day_month_order","candidates":[{"label":"a","validFrom":1},{"label":"b","validFrom":2}],
                "detectorConfidence":0.5,"appliedCandidateConfidence":0.5}]})
        .to_string()
    };
    let only_base = vec![("LINK".to_string(), r#"{"by":"a"}"#.to_string())];

    let j = take(&s, &mut w, "t", "stream").await;
    let r0 = w.succeed(&j, &partial("b1")).await;
    assert!(r0.accepted, "{}", r0.reason);
    assert_eq!(node(&s, "t", &r0.node_ids[0]).await.unwrap_err().code(), Code::NotFound);
    assert_eq!(link_by(&node(&s, "t", "hub").await.unwrap()), only_base, "a partial's edges show before its final");
    assert!(ambiguities(&s, "t", "").await.unwrap().is_empty(), "a running job's ambiguity is listed");
    assert!(w.fail(&j, "gave up", true).await.accepted);
    assert_eq!(s.job(&j.job_id).await.state, "dead");

    let retried = s.client().await.retry_job(GetJobRequest { job_id: j.job_id.clone(), tenant_id: String::new() }).await.unwrap().into_inner();
    assert_eq!(retried.state, "queued");
    let j2 = w.expect_job().await;
    assert_eq!((j2.job_id.as_str(), j2.attempt), (j.job_id.as_str(), 2));
    let r1 = w.succeed(&j2, &partial("b2")).await;
    assert!(r1.accepted, "{}", r1.reason);
    assert_eq!(link_by(&node(&s, "t", "hub").await.unwrap()), only_base);
    let fin = json!({"v":1,"seq":1,"partial":false,"canonicalText":"!"});
    assert!(w.succeed(&j2, &fin.to_string()).await.accepted);

    assert_eq!(node(&s, "t", &r0.node_ids[0]).await.unwrap_err().code(), Code::NotFound, "the dead attempt's node came back");
    let hub = node(&s, "t", "hub").await.unwrap();
    let mut edges = link_by(&hub);
    edges.sort();
    assert_eq!(edges, vec![("HAS".to_string(), "{}".to_string()), ("LINK".to_string(), r#"{"by":"b2"}"#.to_string())]);
    assert!(hub.edges_out.iter().all(|e| e.to_id != r0.node_ids[0]));
    let row = node(&s, "t", &r1.node_ids[0]).await.unwrap();
    assert_eq!(row.versions[0].properties_json, r#"{"by":"b2"}"#);
    assert_eq!(row.versions[0].valid_from, Some(1), "the ambiguity's first candidate is the valid time");
    let listed = ambiguities(&s, "t", "").await.unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].node_id, r1.node_ids[0]);
    let p = projection(&s, &j.job_id, "t").await.unwrap();
    assert_eq!(p.canonical_text, "row!");
    assert_eq!(p.relationships.len(), 2);
}

/// A pipelining worker's seq 1 that arrives before seq 0 is accepted waits for it
/// (it is not a gap), and both land in order; seq 2 with neither before it is a gap.
#[tokio::test]
async fn a_partial_that_overtakes_its_predecessor_waits_for_it() {
    let s = Server::start(None);
    let mut w = Worker::connect(&s, "w", &["txt"]).await;
    let j = take(&s, &mut w, "t", "pipelined").await;
    let p0 = json!({"v":1,"seq":0,"partial":true,"canonicalText":"ab","spans":[{"start":0,"end":2}],"nodes":[{"labels":["A"],"spanRefs":[0]}]});
    let p1 = json!({"v":1,"seq":1,"partial":false,"canonicalText":"cd","spans":[{"start":2,"end":4}],"nodes":[{"labels":["B"],"spanRefs":[0]}]});
    let request = IngestionResult { job_id: j.job_id.clone(), success: true, result_json: p1.to_string().into_bytes(), worker_id: "w".into(), attempt: j.attempt, ..Default::default() };
    let mut ahead = s.worker_client().await;
    let second = tokio::spawn(async move { ahead.submit_ingestion_result(request).await.unwrap().into_inner() });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!second.is_finished(), "seq 1 was answered before seq 0 arrived");
    let r0 = w.succeed(&j, &p0.to_string()).await;
    assert!(r0.accepted, "{}", r0.reason);
    let r1 = tokio::time::timeout(Duration::from_secs(10), second).await.expect("seq 1 still waits").unwrap();
    assert!(r1.accepted, "{}", r1.reason);
    let p = projection(&s, &j.job_id, "t").await.unwrap();
    assert_eq!(p.canonical_text, "abcd");
    assert_eq!(p.spans.iter().map(|s| (s.start, s.end)).collect::<Vec<_>>(), vec![(0, 2), (2, 4)]);
    assert_eq!(p.nodes.iter().map(|n| n.span_refs.clone()).collect::<Vec<_>>(), vec![vec![0], vec![1]]);

    let g = take(&s, &mut w, "t", "gap").await;
    let r = w.succeed(&g, r#"{"v":1,"seq":2,"partial":true,"canonicalText":"x"}"#).await;
    assert!(!r.accepted && r.reason.contains("seq 0 of this lease was not accepted"), "{}", r.reason);
}

/// A partial whose span points before its own slice (or past the accumulated text)
/// fails the attempt, and the earlier accepted partials never become visible.
#[tokio::test]
async fn a_bad_later_partial_discards_the_whole_attempt() {
    let s = Server::start(Some("max_attempts = 1\nlease_secs = 30\nbackoff_base_ms = 10\nbackoff_max_ms = 20"));
    let mut w = Worker::connect(&s, "w", &["txt"]).await;
    let j = take(&s, &mut w, "t", "bad-later").await;
    let p0 = json!({"v":1,"seq":0,"partial":true,"canonicalText":"abc","nodes":[{"labels":["A"],"id":"early:1"}]});
    assert!(w.succeed(&j, &p0.to_string()).await.accepted);
    let p1 = json!({"v":1,"seq":1,"partial":false,"canonicalText":"de","spans":[{"start":3,"end":6}]});
    let r = w.succeed(&j, &p1.to_string()).await;
    assert!(!r.accepted && r.reason.contains("outside this submission's text [3, 5)"), "{}", r.reason);
    assert_eq!(s.job(&j.job_id).await.state, "dead");
    assert_eq!(node(&s, "t", "early:1").await.unwrap_err().code(), Code::NotFound);
}

/// kill -9 of the server between partials: the retried attempt produces exactly one
/// visible projection, the first attempt's nodes never appear, and no partial of it
/// is left in the store.
#[tokio::test]
async fn kill9_between_partials_then_retry_gives_one_projection() {
    let mut s = Server::start(None);
    let job = s.submit("t", "txt", "crashy", b"x").await;
    let first_ids = {
        let mut w = Worker::connect(&s, "w1", &["txt"]).await;
        let j = w.expect_job().await;
        let p0 = json!({"v":1,"seq":0,"partial":true,"canonicalText":"first ","nodes":[{"labels":["A"]},{"labels":["A"],"id":"first:1"}]});
        let r = w.succeed(&j, &p0.to_string()).await;
        assert!(r.accepted);
        let p1 = json!({"v":1,"seq":1,"partial":true,"canonicalText":"attempt","nodes":[{"labels":["A"]}]});
        let mut ids = r.node_ids;
        ids.extend(w.succeed(&j, &p1.to_string()).await.node_ids);
        ids
    };
    s.restart();
    let mut w = Worker::connect(&s, "w2", &["txt"]).await;
    let j = w.expect_job().await;
    assert_eq!(j.job_id, job.id);
    assert_eq!(j.attempt, 2);
    let p0 = json!({"v":1,"seq":0,"partial":true,"canonicalText":"second ","nodes":[{"labels":["B"],"id":"second:1"}]});
    assert!(w.succeed(&j, &p0.to_string()).await.accepted);
    let fin = json!({"v":1,"seq":1,"partial":false,"canonicalText":"try","nodes":[{"labels":["B"]}]});
    assert!(w.succeed(&j, &fin.to_string()).await.accepted);
    let p = projection(&s, &job.id, "t").await.unwrap();
    assert_eq!(p.canonical_text, "second try");
    assert_eq!(p.nodes.len(), 2);
    for id in &first_ids {
        assert_eq!(node(&s, "t", id).await.unwrap_err().code(), Code::NotFound, "node {id} of the dead attempt is visible");
    }
    s.kill9();
    let db = redb::Database::open(s.data_dir().join("telha.redb")).unwrap();
    let txn = redb::ReadableDatabase::begin_read(&db).unwrap();
    let subs = txn.open_table(telha::store::tables::SUBMISSIONS).unwrap();
    let id: u64 = job.id.parse().unwrap();
    let left: Vec<(u64, u64, u32)> = redb::ReadableTable::range(&subs, (id, 0, 0)..=(id, u64::MAX, u32::MAX)).unwrap().map(|e| e.unwrap().0.value()).collect();
    assert_eq!(left, vec![(id, 2, 1)], "orphaned partials (only the final's bytes-free record should stay)");
}

/// Deterministic ids upsert across jobs: the same labels and properties keep one
/// version, changed properties make a second; nodes without ids are always new.
#[tokio::test]
async fn upsert_across_jobs() {
    let s = Server::start(None);
    let mut w = Worker::connect(&s, "w", &["txt"]).await;
    let person = |name: &str| json!({"v":1,"nodes":[{"labels":["PERSON"],"properties":{"name":name},"id":"person:a@x"},{"labels":["MESSAGE"]}]});
    let (j1, ids1) = run(&s, &mut w, "t", "m1", &person("Ann")).await;
    let (j2, ids2) = run(&s, &mut w, "t", "m2", &person("Ann")).await;
    assert_eq!(ids1[0], ids2[0]);
    assert_ne!(ids1[1], ids2[1], "core-assigned ids were reused");
    let n = node(&s, "t", "person:a@x").await.unwrap();
    assert_eq!(n.versions.len(), 1, "an unchanged upsert made a new version");
    assert_eq!(n.versions[0].job_id, j1);
    assert_eq!(projection(&s, &j2, "").await.unwrap().nodes[0].version, 1);
    // Labels compare as a set; a property change makes version 2.
    let (j3, _) = run(&s, &mut w, "t", "m3", &person("Ann B.")).await;
    let n = node(&s, "t", "person:a@x").await.unwrap();
    let versions: Vec<(u32, &str)> = n.versions.iter().map(|v| (v.version, v.job_id.as_str())).collect();
    assert_eq!(versions, vec![(1, j1.as_str()), (2, j3.as_str())]);
    assert_eq!(serde_json::from_str::<Value>(&n.versions[1].properties_json).unwrap(), json!({"name":"Ann B."}));
    assert!(n.versions[1].committed_at >= n.versions[0].committed_at);
    assert_eq!(n.versions[1].attempt, 1);
}

/// An edge to an id that does not exist yet is kept and reads as dangling; it
/// resolves when the node arrives. The other order (node first) resolves at once.
#[tokio::test]
async fn dangling_edges_heal_in_both_orders() {
    dangling_edges_heal_in_both_orders_with(Server::start(None)).await;
}

/// The same with the staged reverse edges merged after every commit (`[store] merge_rows = 0`).
#[tokio::test]
async fn dangling_edges_heal_in_both_orders_merging_every_commit() {
    dangling_edges_heal_in_both_orders_with(server_with("[store]\nmerge_rows = 0\n")).await;
}

async fn dangling_edges_heal_in_both_orders_with(s: Server) {
    let mut w = Worker::connect(&s, "w", &["eml", "txt"]).await;
    let reply = json!({"v":1,"nodes":[{"labels":["MESSAGE"],"id":"msg:2"}],"relationships":[{"type":"IN_REPLY_TO","fromRef":0,"toId":"msg:1"}]});
    let parent = json!({"v":1,"nodes":[{"labels":["MESSAGE"],"id":"msg:1"}]});
    // Edge first.
    let (reply_job, _) = run(&s, &mut w, "t", "reply.eml", &reply).await;
    let p = projection(&s, &reply_job, "").await.unwrap();
    assert!(p.relationships[0].to_dangling && !p.relationships[0].from_dangling);
    assert!(node(&s, "t", "msg:2").await.unwrap().edges_out[0].to_dangling);
    assert_eq!(node(&s, "t", "msg:1").await.unwrap_err().code(), Code::NotFound);
    run(&s, &mut w, "t", "parent.eml", &parent).await;
    let p = projection(&s, &reply_job, "").await.unwrap();
    assert!(!p.relationships[0].to_dangling, "the edge did not heal");
    let n = node(&s, "t", "msg:1").await.unwrap();
    assert_eq!((n.edges_in.len(), n.edges_in[0].from_id.as_str(), n.edges_in[0].r#type.as_str()), (1, "msg:2", "IN_REPLY_TO"));
    // Node first (another tenant, same ids): resolved from the start.
    run(&s, &mut w, "u", "parent.eml", &parent).await;
    let (reply_u, _) = run(&s, &mut w, "u", "reply.eml", &reply).await;
    assert!(!projection(&s, &reply_u, "").await.unwrap().relationships[0].to_dangling);
    assert_eq!(node(&s, "u", "msg:1").await.unwrap().edges_in.len(), 1);
    // A dangling source heals too.
    let (j, _) = run(&s, &mut w, "t", "src", &json!({"v":1,"relationships":[{"type":"CITES","fromId":"doc:9","toId":"msg:1"}]})).await;
    assert!(projection(&s, &j, "").await.unwrap().relationships[0].from_dangling);
    run(&s, &mut w, "t", "doc9", &json!({"v":1,"nodes":[{"labels":["DOC"],"id":"doc:9"}]})).await;
    assert!(!projection(&s, &j, "").await.unwrap().relationships[0].from_dangling);
}

/// Child jobs are enqueued by the parent's final commit with their content as a
/// blob; the same name from a second parent links the existing job.
#[tokio::test]
async fn child_jobs_dedup_across_two_parents() {
    let s = Server::start(None);
    let mut w = Worker::connect(&s, "w", &["eml"]).await;
    let mut wt = Worker::connect(&s, "wt", &["txt"]).await;
    let with_child = json!({"v":1,"nodes":[{"labels":["MESSAGE"]}],"childJobs":[{"format":"txt","name":"attachment:abc","contentB64":"aGVsbG8=","options":{"clarify":true}}]});
    let p1 = s.submit("t", "eml", "m1.eml", b"x").await;
    let j1 = w.expect_job().await;
    assert!(w.succeed(&j1, &with_child.to_string()).await.accepted);
    let child = wt.expect_job().await;
    let payload: Value = serde_json::from_str(&child.payload_json).unwrap();
    assert_eq!(payload["name"], "attachment:abc");
    assert_eq!(payload["options"], json!({"clarify": true}));
    assert_eq!((payload["content"]["inline"].as_bool(), child.content.as_slice()), (Some(true), b"hello".as_slice()));
    // Finished, so that the txt worker is free to receive a (wrongly) duplicated child.
    assert!(wt.succeed(&child, &result_with_nodes(0)).await.accepted);
    let p2 = s.submit("t", "eml", "m2.eml", b"y").await;
    let j2 = w.expect_job().await;
    assert!(w.succeed(&j2, &with_child.to_string()).await.accepted);
    assert!(wt.next(Duration::from_millis(300)).await.is_none(), "a second child job was created for the same name");
    let c = s.job(&child.job_id).await;
    assert_eq!(c.parents, vec![p1.id.clone(), p2.id.clone()]);
    assert_eq!(c.content_blake3, blake3::hash(b"hello").to_hex().to_string());
    assert_eq!(s.job(&p1.id).await.children, vec![child.job_id.clone()]);
    assert_eq!(s.job(&p2.id).await.children, vec![child.job_id.clone()]);
    // Per tenant: the same name in another tenant is another job.
    let _p3 = s.submit("u", "eml", "m3.eml", b"z").await;
    let j3 = w.expect_job().await;
    assert!(w.succeed(&j3, &with_child.to_string()).await.accepted);
    let other = wt.expect_job().await;
    assert_ne!(other.job_id, child.job_id);
    assert_eq!(other.tenant_id, "u");
}

/// A partial's child contents are stored when the partial is accepted: a small one with
/// the partial's commit (inline), a large one as a blob file; each child job created by
/// the final commit gets its own, whichever way it was stored.
#[tokio::test]
async fn child_contents_of_a_partial_small_and_large_reach_their_child_jobs() {
    use base64::Engine as _;
    let s = Server::start(None);
    let mut w = Worker::connect(&s, "w", &["eml"]).await;
    let mut wt = Worker::connect(&s, "wt", &["txt"]).await;
    let large: Vec<u8> = (0..100_000).map(|i| (i % 253) as u8).collect();
    let b64 = |d: &[u8]| base64::engine::general_purpose::STANDARD.encode(d);
    s.submit("t", "eml", "m.eml", b"x").await;
    let j = w.expect_job().await;
    let p0 = json!({"v":1,"seq":0,"partial":true,"nodes":[{"labels":["MESSAGE"]}],
        "childJobs":[{"format":"txt","name":"att:small","contentB64":b64(b"small one")},
                     {"format":"txt","name":"att:large","contentB64":b64(&large)}]});
    assert!(w.succeed(&j, &p0.to_string()).await.accepted);
    assert!(wt.next(Duration::from_millis(200)).await.is_none(), "a child job before the final commit");
    assert!(w.succeed(&j, &json!({"v":1,"seq":1,"partial":false}).to_string()).await.accepted);
    let mut got = std::collections::BTreeMap::new();
    for _ in 0..2 {
        let c = wt.expect_job().await;
        let payload: Value = serde_json::from_str(&c.payload_json).unwrap();
        let data = match payload["content"]["inline"].as_bool() {
            Some(true) => c.content.clone(),
            _ => std::fs::read(payload["content"]["path"].as_str().unwrap()).unwrap(),
        };
        got.insert(payload["name"].as_str().unwrap().to_string(), (payload["content"]["inline"].as_bool().unwrap_or(false), data));
        assert!(wt.succeed(&c, &result_with_nodes(0)).await.accepted);
    }
    assert_eq!(got["att:small"], (true, b"small one".to_vec()));
    assert_eq!(got["att:large"], (false, large));
}

/// A partial that carries only child jobs and an edge to a node of another job (no nodes of
/// its own: the code worker's archive fan-out) is applied at the final commit like any other.
#[tokio::test]
async fn a_partial_without_nodes_carries_child_jobs_and_deferred_edges() {
    let s = Server::start(None);
    let mut w = Worker::connect(&s, "w", &["txt"]).await;
    let j = take(&s, &mut w, "t", "archive").await;
    let p0 = json!({"v":1,"seq":0,"partial":true,"nodes":[{"labels":["REPOSITORY"],"id":"repo:1"}]});
    assert!(w.succeed(&j, &p0.to_string()).await.accepted);
    let p1 = json!({"v":1,"seq":1,"partial":true,
        "relationships":[{"type":"DEPENDS_ON","fromId":"repo:1","toId":"pkg:elsewhere"}],
        "childJobs":[{"format":"txt","name":"file:a","contentB64":"YQ=="}]});
    let r1 = w.succeed(&j, &p1.to_string()).await;
    assert!(r1.accepted, "{}", r1.reason);
    let fin = json!({"v":1,"seq":2,"partial":false});
    let rf = w.succeed(&j, &fin.to_string()).await;
    assert!(rf.accepted, "{}", rf.reason);
    let job = s.job(&j.job_id).await;
    assert_eq!((job.state.as_str(), job.children.len()), ("succeeded", 1), "{job:?}");
    let repo = node(&s, "t", "repo:1").await.unwrap();
    assert_eq!(repo.edges_out.len(), 1);
    assert!(repo.edges_out[0].to_dangling);
}

/// A content-less child named `url:<URL>` (the web worker's crawl fan-out) is a URL job for
/// that URL; the same name from another page is the same job, so a link cycle stops.
#[tokio::test]
async fn url_child_jobs_fetch_their_url_and_dedup_by_name() {
    let s = Server::start(None);
    let mut w = Worker::connect(&s, "w", &["web"]).await;
    let links = json!({"v":1,"nodes":[{"labels":["PAGE"]}],"childJobs":[
        {"format":"web","name":"url:https://example.com/b","options":{"depth":1}},
        {"format":"web","name":"url:not a url"}]});
    let parent = {
        let j = {
            let mut c = s.client().await;
            let header = SubmitHeader { tenant_id: "t".into(), format: "web".into(), name: "url:https://example.com/a".into(), url: "https://example.com/a".into(), ..Default::default() };
            c.submit_job(tokio_stream::iter(vec![SubmitJobRequest { part: Some(submit_job_request::Part::Header(header)) }])).await.unwrap().into_inner()
        };
        let p = w.expect_job().await;
        assert_eq!(p.job_id, j.id);
        let r = w.succeed(&p, &links.to_string()).await;
        assert!(r.accepted, "{}", r.reason);
        j.id
    };
    let child = w.expect_job().await;
    let payload: Value = serde_json::from_str(&child.payload_json).unwrap();
    assert_eq!(payload["url"], "https://example.com/b", "{payload}");
    assert_eq!(payload["options"], json!({"depth": 1}));
    assert!(payload.get("content").is_none(), "{payload}");
    // `b` links to itself: the name dedup ends the cycle with no new job.
    let back = json!({"v":1,"nodes":[{"labels":["PAGE"]}],"childJobs":[{"format":"web","name":"url:https://example.com/b"}]});
    assert!(w.succeed(&child, &back.to_string()).await.accepted);
    // A name that is no URL after the prefix gets empty content, not a fetch.
    let other = w.expect_job().await;
    let payload: Value = serde_json::from_str(&other.payload_json).unwrap();
    assert!(payload.get("url").is_none() && payload["content"]["size"] == 0, "{payload}");
    assert!(w.succeed(&other, &result_with_nodes(0)).await.accepted);
    assert!(w.next(Duration::from_millis(300)).await.is_none(), "a link cycle made another job");
    assert_eq!(s.job(&child.job_id).await.parents, vec![parent]);
}

/// Crawls https://example.com/a once more with `result`; returns the finished job.
async fn crawl(s: &Server, w: &mut Worker, result: &Value) -> Job {
    let mut c = s.client().await;
    let header = SubmitHeader { tenant_id: "t".into(), format: "web".into(), name: "example".into(), url: "https://example.com/a".into(), ..Default::default() };
    let job = c.submit_job(tokio_stream::iter(vec![SubmitJobRequest { part: Some(submit_job_request::Part::Header(header)) }])).await.unwrap().into_inner();
    let j = w.expect_job().await;
    assert_eq!(j.job_id, job.id);
    let r = w.succeed(&j, &result.to_string()).await;
    assert!(r.accepted, "{}", r.reason);
    s.job(&job.id).await
}

/// A recrawl whose contentHash equals the stored one succeeds without re-projecting
/// and says so; a changed hash projects again.
#[tokio::test]
async fn recrawl_with_unchanged_content_hash_is_not_reprojected() {
    let s = Server::start(None);
    let mut w = Worker::connect(&s, "w", &["web"]).await;
    let h1 = "a".repeat(64);
    let h2 = "b".repeat(64);
    let page = |h: &str, title: &str| json!({"v":1,"canonicalText":title,"nodes":[{"labels":["PAGE"],"properties":{"title":title}}],"contentHash":h});
    let first = crawl(&s, &mut w, &page(&h1, "one")).await;
    assert!(!first.unchanged);
    assert_eq!(first.node_count, 1);
    let second = crawl(&s, &mut w, &page(&h1, "one")).await;
    assert_eq!((second.state.as_str(), second.unchanged, second.node_count), ("succeeded", true, 0));
    let p = projection(&s, &second.id, "").await.unwrap();
    assert!(p.unchanged && p.nodes.is_empty() && p.canonical_text.is_empty());
    let out = s.cli(&["job", &second.id, "--json"]);
    assert_eq!(serde_json::from_slice::<Value>(&out.stdout).unwrap()["unchanged"], true);
    let third = crawl(&s, &mut w, &page(&h2, "two")).await;
    assert!(!third.unchanged);
    assert_eq!(projection(&s, &third.id, "").await.unwrap().canonical_text, "two");
}

/// Every read is tenant-scoped: tenant B never sees tenant A's jobs, nodes, edges
/// or ambiguities, and the same deterministic id in two tenants is two nodes.
#[tokio::test]
async fn tenant_isolation_of_every_read() {
    let s = Server::start(None);
    let mut w = Worker::connect(&s, "w", &["txt"]).await;
    let amb = json!({"nodeRef":0,"kind":"missing_date","candidates":[{"label":"2026","validFrom":1}],"detectorConfidence":0.4,"appliedCandidateConfidence":0.3});
    let a = json!({"v":1,"nodes":[{"labels":["P"],"properties":{"t":"A"},"id":"p:1"},{"labels":["Q"]}],"relationships":[{"type":"R","fromRef":0,"toRef":1}],"ambiguities":[amb]});
    let b = json!({"v":1,"nodes":[{"labels":["P"],"properties":{"t":"B"},"id":"p:1"}]});
    let (ja, ids_a) = run(&s, &mut w, "A", "a", &a).await;
    let (jb, _) = run(&s, &mut w, "B", "b", &b).await;
    assert_eq!(projection(&s, &ja, "B").await.unwrap_err().code(), Code::NotFound);
    assert_eq!(projection(&s, &ja, "A").await.unwrap().nodes.len(), 2);
    assert_eq!(projection(&s, &jb, "A").await.unwrap_err().code(), Code::NotFound);
    let nb = node(&s, "B", "p:1").await.unwrap();
    assert_eq!(nb.versions.len(), 1);
    assert_eq!(serde_json::from_str::<Value>(&nb.versions[0].properties_json).unwrap(), json!({"t":"B"}));
    assert!(nb.edges_out.is_empty(), "tenant A's edge shows in tenant B");
    assert_eq!(node(&s, "A", "p:1").await.unwrap().edges_out.len(), 1);
    assert_eq!(node(&s, "B", &ids_a[1]).await.unwrap_err().code(), Code::NotFound);
    assert_eq!(node(&s, "", "p:1").await.unwrap_err().code(), Code::NotFound, "the default tenant saw another's node");
    assert!(ambiguities(&s, "B", "").await.unwrap().is_empty());
    assert_eq!(ambiguities(&s, "B", &ja).await.unwrap_err().code(), Code::NotFound);
    assert_eq!(ambiguities(&s, "A", "").await.unwrap().len(), 1);
    assert_eq!(ambiguities(&s, "", &ja).await.unwrap().len(), 1);
    let out = s.cli(&["graph", &ja, "--tenant", "B", "--json"]);
    assert!(!out.status.success());
}

/// Ambiguities keep every candidate and give their node's version its valid time
/// (a node's own validTime wins); the CLI prints graph, node and ambiguities as JSON.
#[tokio::test]
async fn ambiguities_valid_time_and_cli_json() {
    let s = Server::start(None);
    let mut w = Worker::connect(&s, "w", &["txt"]).await;
    let result = json!({"v":1,"canonicalText":"Alpha owes Beta.","spans":[{"start":0,"end":16,"kind":"body"}],
        "nodes":[{"labels":["CONTRACT"],"properties":{"name":"Alpha"},"spanRefs":[0],"id":"contract:alpha"},
                 {"labels":["CLAUSE"],"validTime":{"validFrom":10,"validTo":20}}],
        "relationships":[{"type":"PART_OF","fromRef":1,"toRef":0,"properties":{"n":1}}],
        "ambiguities":[{"nodeRef":0,"kind":"conflicting_dates","candidates":[{"label":"2026-05-01 (effective)","validFrom":1746057600000000i64},{"label":"2026-06-01 (signed)","validFrom":1748736000000000i64,"validTo":1748736000000001i64}],
                        "detectorConfidence":0.7,"appliedCandidateConfidence":0.55,"severityHint":"high"}]});
    let (job, ids) = run(&s, &mut w, "default", "contract.txt", &result).await;
    let n = node(&s, "default", "contract:alpha").await.unwrap();
    assert_eq!((n.versions[0].valid_from, n.versions[0].valid_to), (Some(1746057600000000), None));
    let g: Value = serde_json::from_slice(&s.cli(&["graph", &job, "--json"]).stdout).unwrap();
    assert_eq!(g["canonicalText"], "Alpha owes Beta.");
    assert_eq!(g["spans"], json!([{"start":0,"end":16,"kind":"body"}]));
    assert_eq!(g["nodes"][0], json!({"id":"contract:alpha","labels":["CONTRACT"],"properties":{"name":"Alpha"},"spanRefs":[0],"version":1}));
    assert_eq!(g["relationships"], json!([{"type":"PART_OF","fromId":ids[1],"toId":"contract:alpha","properties":{"n":1},"dangling":false}]));
    assert_eq!(g["ambiguities"][0]["candidates"].as_array().unwrap().len(), 2);
    let clause: Value = serde_json::from_slice(&s.cli(&["node", &ids[1], "--json"]).stdout).unwrap();
    assert_eq!((clause["versions"][0]["validFrom"].clone(), clause["versions"][0]["validTo"].clone()), (json!(10), json!(20)));
    assert_eq!(clause["edgesOut"][0]["toId"], "contract:alpha");
    let list: Value = serde_json::from_slice(&s.cli(&["ambiguities", "--job", &job, "--json"]).stdout).unwrap();
    assert_eq!(list[0]["kind"], "conflicting_dates");
    assert_eq!(list[0]["severityHint"], "high");
    assert_eq!(list[0]["candidates"][1]["validTo"], 1748736000000001i64);
    let text = s.cli(&["graph", &job]);
    assert!(text.status.success());
    assert!(String::from_utf8_lossy(&text.stdout).contains("contract:alpha"));
}
