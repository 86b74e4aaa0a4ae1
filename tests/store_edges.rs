//! The reverse edge index in two parts (store::edges): reverse keys staged by job and
//! merged into the by-target index in batches. In process, through the real store
//! writer, real redb files in temp dirs and the real submit path: a node's incoming
//! edges read the same whether they are staged, merged or half of each; a failed
//! attempt's edges vanish from both; an old store is migrated on open and a newer one
//! is refused with a typed error.
use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use telha::config::Config;
use telha::graph::apply::Encoded;
use telha::graph::read::{self, EdgeView};
use telha::graph::{validate, wire};
use telha::lifecycle::submit::{self, Staged, SubmitOutcome};
use telha::store::jobs::{self, NewJob, Policy};
use telha::store::records::FailureRecord;
use telha::store::{edges, Store, StoreError};

struct Harness {
    store: Store,
    policy: Policy,
    config: Config,
}

impl Harness {
    fn open(dir: &std::path::Path, merge_rows: u64) -> Self {
        let config = Config::defaults();
        let store = Store::open_with(dir, 64, 16 << 20, merge_rows).expect("store opens");
        Self { store, policy: Policy::from_config(&config), config }
    }

    /// Enqueues and leases a job; returns (job id, attempt).
    async fn lease(&self, tenant: &str, name: &str) -> (u64, u64) {
        let new = NewJob { tenant: tenant.into(), format: "txt".into(), name: name.into(), options_json: "{}".into(), ..Default::default() };
        let (rec, _) = self.store.write(move |t| jobs::insert_once(t, new, telha::time::now_us())).await.unwrap();
        let p = self.policy.clone();
        let id = rec.id;
        let granted = self.store.write(move |t| jobs::lease(t, id, "w", &p, telha::time::now_us())).await.unwrap().expect("leased");
        (rec.id, granted.lease.attempt)
    }

    async fn send(&self, job: u64, attempt: u64, json: &str) -> SubmitOutcome {
        let bytes = json.as_bytes().to_vec();
        let sub = wire::parse(&bytes).expect("parses");
        validate::validate(&sub, 0, &self.config.graph, &self.config.known_formats()).expect("valid");
        let props = Encoded::of(&sub).expect("props");
        let staged = Staged { job_id: job, worker_id: Some("w".into()), attempt, base: 0, result_json: bytes, sub, props, child_blobs: vec![], child_inline: vec![], core_refs: vec![] };
        let p = self.policy.clone();
        self.store.write(move |t| submit::submit(t, staged, &p, telha::time::now_us())).await.unwrap()
    }

    /// A single-shot job with `json` as its final submission.
    async fn run(&self, tenant: &str, name: &str, json: &str) -> u64 {
        let (job, attempt) = self.lease(tenant, name).await;
        let outcome = self.send(job, attempt, json).await;
        assert!(matches!(outcome, SubmitOutcome::Accepted { finished: true, .. }), "{outcome:?}");
        job
    }

    /// `files` file jobs of tenant `t` calling into `t:0`, then the job that projects `t:0`.
    async fn files_then_target(&self, files: usize) {
        for i in 1..=files {
            self.run("t", &format!("f{i}"), &file_job(i)).await;
        }
        self.run("t", "target", r#"{"v":1,"nodes":[{"labels":["SYM"],"id":"t:0"}]}"#).await;
    }

    /// (type, from id, properties, from dangling) of `id`'s incoming edges, and whether they were cut.
    fn edges_in(&self, tenant: &str, id: &str, max: usize) -> (Vec<(String, String, String, bool)>, bool) {
        let txn = self.store.read().unwrap();
        let n = read::node(&txn, tenant, id, max).expect("node");
        (n.edges_in.iter().map(|e: &EdgeView| (e.kind.clone(), e.from_id.clone(), e.properties_json.clone(), e.from_dangling)).collect(), n.truncated)
    }

    fn staged_rows(&self) -> u64 {
        use redb::ReadableTableMetadata;
        self.store.read().unwrap().open_table(telha::store::tables::EDGES_IN_STAGED).unwrap().len().unwrap()
    }

    async fn merge(&self) -> u64 {
        self.store.write(|t| edges::merge(t.txn)).await.unwrap()
    }
}

/// Job `i` of the scenario: node `f:i`, which calls the shared target `t:0` (dangling
/// until job 0 lands) with a per-job count, and is called by `f:{i+1}` (not there yet).
fn file_job(i: usize) -> String {
    format!(
        r#"{{"v":1,"nodes":[{{"labels":["FILE"],"id":"f:{i}"}}],"relationships":[{{"type":"CALLS","fromRef":0,"toId":"t:0","properties":{{"n":{i}}}}},{{"type":"IMPORTS","fromRef":0,"toId":"t:0"}},{{"type":"CALLS","fromId":"f:{}","toRef":0}}]}}"#,
        i + 1
    )
}

/// The expected incoming edges of t:0 after jobs 1..=n landed (sorted by type, then from id).
fn expected(n: usize) -> Vec<(String, String, String, bool)> {
    let mut want = Vec::new();
    for i in 1..=n {
        want.push(("CALLS".to_string(), format!("f:{i}"), format!(r#"{{"n":{i}}}"#), false));
        want.push(("IMPORTS".to_string(), format!("f:{i}"), "{}".to_string(), false));
    }
    want.sort();
    want
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn incoming_edges_read_the_same_staged_merged_and_half_merged() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::open(dir.path(), 1 << 24);
    h.files_then_target(6).await;
    assert_eq!(h.staged_rows(), 18, "each written edge stages its reverse key");
    let staged = h.edges_in("t", "t:0", 100);
    assert_eq!(staged, (expected(6), false), "staged only");
    // Cut lists agree too (the same first entries, truncated).
    let cut = h.edges_in("t", "t:0", 5);
    assert_eq!((cut.0.as_slice(), cut.1), (&expected(6)[..5], true));

    assert_eq!(h.merge().await, 18);
    assert_eq!(h.staged_rows(), 0);
    assert_eq!(h.edges_in("t", "t:0", 100), staged, "merged only");
    assert_eq!(h.edges_in("t", "t:0", 5), cut);

    // Half of each: jobs 7..=9 staged over 1..=6 merged, interleaving in the order
    // (f:7 sorts between f:6 and nothing, f:10 never exists: f:9 calls it dangling).
    for i in 7..=9 {
        h.run("t", &format!("f{i}"), &file_job(i)).await;
    }
    assert_eq!(h.edges_in("t", "t:0", 100), (expected(9), false), "half merged");
    // Job 2 again under a new name writes the same keys: read once, its properties the last writer's.
    let again = file_job(2).replace(r#""n":2"#, r#""n":22"#);
    h.run("t", "f2-again", &again).await;
    let mut want = expected(9);
    want.iter_mut().filter(|e| e.0 == "CALLS" && e.1 == "f:2").for_each(|e| e.2 = r#"{"n":22}"#.into());
    assert_eq!(h.edges_in("t", "t:0", 100), (want.clone(), false), "a key staged by one job and merged from another");
    // f:3's incoming edge from f:4 (dangling source healed: f:4 exists).
    assert_eq!(h.edges_in("t", "f:3", 100).0, vec![("CALLS".to_string(), "f:4".to_string(), "{}".to_string(), false)]);
    // Another tenant sees none of it.
    assert!(read::node(&h.store.read().unwrap(), "u", "t:0", 100).is_err());
    h.merge().await;
    assert_eq!(h.edges_in("t", "t:0", 100), (want, false), "merged again");
    h.store.close().await;
}

/// A streamed attempt's early edges are staged at once; when the attempt fails they are
/// deleted, staged or already merged, and a retry's edges are the only ones left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_attempt_leaves_no_incoming_edge_staged_or_merged() {
    for merge_between in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let h = Harness::open(dir.path(), 1 << 24);
        h.run("t", "target", r#"{"v":1,"nodes":[{"labels":["SYM"],"id":"t:0"}]}"#).await;
        let (job, attempt) = h.lease("t", "stream").await;
        let partial = r#"{"v":1,"seq":0,"partial":true,"nodes":[{"labels":["ROW"]}],"relationships":[{"type":"IN","fromRef":0,"toId":"t:0"}]}"#;
        assert!(matches!(h.send(job, attempt, partial).await, SubmitOutcome::Accepted { finished: false, .. }));
        assert_eq!(h.staged_rows(), 1);
        if merge_between {
            h.merge().await;
        }
        assert!(h.edges_in("t", "t:0", 100).0.is_empty(), "a running job's edge shows");
        let p = h.policy.clone();
        let failure = FailureRecord { kind: "timeout".into(), reason: "test".into(), ..Default::default() };
        h.store.write(move |t| telha::lifecycle::fail(t, job, Some("w"), attempt, failure, &p, telha::time::now_us())).await.unwrap();
        assert_eq!(h.staged_rows(), 0, "merge_between {merge_between}");
        let txn = h.store.read().unwrap();
        let merged = txn.open_table(telha::store::tables::EDGES_IN).unwrap();
        assert_eq!(merged.iter().unwrap().count(), 0, "merge_between {merge_between}: the reverse key outlived its edge");
        drop((merged, txn));
        // Another job landing an edge to the same node is the only one read.
        let fin = r#"{"v":1,"nodes":[{"labels":["ROW"],"id":"row:1"}],"relationships":[{"type":"IN","fromRef":0,"toId":"t:0"}]}"#;
        h.run("t", "again", fin).await;
        let got = h.edges_in("t", "t:0", 100).0;
        assert_eq!(got, vec![("IN".to_string(), "row:1".to_string(), "{}".to_string(), false)], "merge_between {merge_between}");
        h.store.close().await;
    }
}

/// The writer merges by itself once `merge_rows` are staged, and at close: a store
/// closed cleanly has nothing staged, and reads the same after reopening.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_writer_merges_at_the_threshold_and_at_close() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::open(dir.path(), 7);
    for i in 1..=2 {
        h.run("t", &format!("f{i}"), &file_job(i)).await;
    }
    assert_eq!(h.staged_rows(), 6, "below the threshold");
    h.run("t", "f3", &file_job(3)).await;
    // The merge commits after the batch's reply: a later change waits for it.
    h.store.write(|_| Ok(())).await.unwrap();
    assert_eq!(h.staged_rows(), 0, "9 >= 7 staged rows were not merged");
    h.run("t", "f4", &file_job(4)).await;
    h.run("t", "target", r#"{"v":1,"nodes":[{"labels":["SYM"],"id":"t:0"}]}"#).await;
    let before = h.edges_in("t", "t:0", 100);
    assert_eq!(before, (expected(4), false));
    assert_eq!(h.staged_rows(), 3);
    h.store.close().await;
    let h = Harness::open(dir.path(), 7);
    assert_eq!(h.staged_rows(), 0, "close left rows staged");
    assert_eq!(h.edges_in("t", "t:0", 100), before);
    h.store.close().await;
}

const OLD_EDGES_IN: TableDefinition<(&str, &str, &str, &str), ()> = TableDefinition::new("edges-in-1");

/// Turns a store of this layout back into the layout before staging: the reverse
/// index named edges-in-1, no stage table, no layout mark.
fn make_old_layout(path: &std::path::Path) {
    let db = redb::Database::create(path.join("telha.redb")).unwrap();
    let txn = db.begin_write().unwrap();
    txn.rename_table(telha::store::tables::EDGES_IN, OLD_EDGES_IN).unwrap();
    txn.delete_table(telha::store::tables::EDGES_IN_STAGED).unwrap();
    txn.open_table(telha::store::tables::META).unwrap().remove(edges::LAYOUT_KEY).unwrap();
    txn.commit().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_old_store_is_migrated_on_open_and_a_newer_one_refused() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::open(dir.path(), 1 << 24);
    h.files_then_target(3).await;
    h.store.close().await;
    make_old_layout(dir.path());
    {
        let db = redb::Database::open(dir.path().join("telha.redb")).unwrap();
        let txn = db.begin_read().unwrap();
        assert_eq!(txn.open_table(OLD_EDGES_IN).unwrap().iter().unwrap().count(), 9, "the old layout holds the whole index");
    }
    // Opened by this binary: renamed into the merged index, readable at once.
    let h = Harness::open(dir.path(), 1 << 24);
    assert_eq!(h.edges_in("t", "t:0", 100), (expected(3), false), "migrated");
    h.store.close().await;

    // An old binary ran on a migrated store and wrote its own edges-in-1: its rows join the merged index.
    {
        let db = redb::Database::create(dir.path().join("telha.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        let mut merged = txn.open_table(telha::store::tables::EDGES_IN).unwrap();
        merged.remove(("t", "t:0", "CALLS", "f:3")).unwrap();
        drop(merged);
        txn.open_table(OLD_EDGES_IN).unwrap().insert(("t", "t:0", "CALLS", "f:3"), ()).unwrap();
        txn.commit().unwrap();
    }
    let h = Harness::open(dir.path(), 1 << 24);
    assert_eq!(h.edges_in("t", "t:0", 100), (expected(3), false), "both tables");
    assert!(!h.store.read().unwrap().list_tables().unwrap().any(|t| redb::TableHandle::name(&t) == "edges-in-1"));
    h.store.close().await;

    // A layout from a later version is refused, naming what to do; the store is left as it was.
    {
        let db = redb::Database::create(dir.path().join("telha.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(telha::store::tables::META).unwrap().insert(edges::LAYOUT_KEY, edges::LAYOUT + 1).unwrap();
        txn.commit().unwrap();
    }
    match Store::open(dir.path(), 16) {
        Err(e @ StoreError::Layout { found, known }) => {
            assert_eq!((found, known), (edges::LAYOUT + 1, edges::LAYOUT));
            let msg = e.to_string();
            assert!(msg.contains("newer telha") && msg.contains("data_dir"), "{msg}");
        }
        Err(e) => panic!("another error: {e}"),
        Ok(_) => panic!("a newer layout was opened"),
    }
}
