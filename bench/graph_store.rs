//! `bench/graph --jobs N`: the store's write cost per job as the store grows, in
//! process. Each job is what a one-file code job costs the core: an enqueue (its content
//! stored, then one commit), a lease (one commit) and one final submission of ~50 nodes
//! with worker-given ids, ~100 relationships (a third of them dangling: cross-file calls
//! to symbols not projected yet), one span per node, a contentHash and ~4 KB of text
//! (one commit). Every commit goes through the store writer one change at a time (no
//! batching: the worst case, one job in flight), durably, as the server's do.
//!
//! It prints the bytes written per job split by step (blob file, enqueue, lease and
//! submit commits), and at the end where the redb file's bytes are, per table.
//!
//! What it shows (2026-12-01, release, 2 loaded cores): the enqueue and lease commits
//! cost a flat 32-40 KiB each (redb is copy-on-write: every table a commit touches
//! rewrites its root-to-leaf path, plus the table tree, the freed-page record and the
//! header). The submit commit grows from ~120 KiB to ~450 KiB and levels off: each insert
//! whose key is not near the job's other keys rewrites a whole 4 KiB leaf and its branch.
//! While the tree is small those inserts share leaves; once it has many more leaves than
//! a commit has such inserts, every one costs ~7 KiB. The reverse edge index (EDGES_IN,
//! keyed by target) is where a job's keys scatter: a cross-file call's target is another
//! file's symbol, so it is half of the submit's bytes here (skipping it measured 195
//! instead of 387 KiB at 500 jobs), and a real source file with hundreds of cross-file
//! calls pays megabytes per job. Node versions, EDGES_OUT and the per-job tables keep a
//! job's keys together and cost a few pages each. The file holds ~48 KB of live data
//! per job in ~2x that of pages (leaves split by scattered inserts sit half full) and
//! grows by doubling (258 MiB file, 168 MiB allocated, 96 MiB stored after 2,000 jobs).
//!
//! Since the staged reverse index (src/store/edges.rs): a job's reverse keys are staged
//! next to its other rows and merged many jobs at a time (`--merge-rows`, default
//! `[store] merge_rows`); the merge commit runs right after a submit's reply, so its
//! bytes show up in the next step's column (enqueue). 2026-12-01, same sitting: 553 ->
//! 422 KiB per job at 2,000 jobs (submit 463 -> 242).
use std::fmt::Write as _;
use std::time::Instant;

use telha::graph::apply::Encoded;
use telha::graph::{validate, wire};
use telha::lifecycle::submit::{self, Staged, SubmitOutcome};
use telha::store::jobs::{self, NewJob, Policy};
use telha::store::Store;

/// Bytes this process has caused to be written to storage (/proc/self/io).
fn write_bytes() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
    io.lines().find_map(|l| l.strip_prefix("write_bytes: ")).and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}

/// The content and the final submission of job `j` of `total` (deterministic).
fn job(j: usize, total: usize) -> (Vec<u8>, String) {
    const SYMBOLS: usize = 49;
    let path = format!("pkg{}/mod_{j}.py", j % 40);
    let mut text = String::with_capacity(4096);
    let mut spans = String::new();
    let mut nodes = String::new();
    let mut rels = String::new();
    let file_id = format!("code:file:bench/{path}");
    let _ = write!(nodes, r#"{{"id":"{file_id}","labels":["FILE"],"properties":{{"path":"{path}","language":"python"}},"spanRefs":[]}}"#);
    for i in 0..SYMBOLS {
        let start = text.len();
        let _ = writeln!(text, "def function_{i}(argument, other=None):  # calls helper_{} and more words to pad the line out", (i * 7) % SYMBOLS);
        let end = text.len() - 1;
        let sep = if i == 0 { "" } else { "," };
        let _ = write!(spans, r#"{sep}{{"start":{start},"end":{end},"kind":"function"}}"#);
        let _ = write!(
            nodes,
            r#",{{"id":"code:sym:bench/{path}#function_{i}","labels":["FUNCTION"],"properties":{{"name":"function_{i}","signature":"def function_{i}(argument, other=None)","line":{}}},"spanRefs":[{i}]}}"#,
            i + 1
        );
        let _ = write!(rels, r#"{sep}{{"type":"CONTAINS","fromRef":0,"toRef":{}}}"#, i + 1);
    }
    for i in 0..SYMBOLS {
        if i % 2 == 0 {
            let _ = write!(rels, r#",{{"type":"CALLS","fromRef":{},"toRef":{},"properties":{{"count":1}}}}"#, i + 1, (i * 7) % SYMBOLS + 1);
        } else {
            // Another file's symbol, often one not projected yet: a dangling edge.
            let other = (j * 31 + i * 17) % total.max(1);
            let _ = write!(rels, r#",{{"type":"CALLS","fromRef":{},"toId":"code:sym:bench/pkg{}/mod_{other}.py#function_{}","properties":{{"count":1,"cross_file":true}}}}"#, i + 1, other % 40, i % SYMBOLS);
        }
    }
    let _ = write!(rels, r#",{{"type":"IMPORTS","fromRef":0,"toId":"code:file:bench/pkg{}/mod_{}.py"}},{{"type":"IMPORTS","fromRef":0,"toId":"code:file:bench/os.py"}}"#, (j + 1) % 40, (j + 1) % total.max(1));
    let hash = blake3::hash(text.as_bytes()).to_hex().to_string();
    let text_json = serde_json::to_string(&text).expect("text");
    let json = format!(r#"{{"v":1,"seq":0,"partial":false,"canonicalText":{text_json},"spans":[{spans}],"nodes":[{nodes}],"relationships":[{rels}],"contentHash":"{hash}"}}"#);
    (text.into_bytes(), json)
}

pub async fn run(n: usize, merge_rows: u64) {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = telha::config::Config::defaults();
    let store = Store::open_with(dir.path(), config.store.max_batch, config.store.cache_mb << 20, merge_rows).expect("store");
    let policy = Policy::from_config(&config);
    let formats = config.known_formats();
    let redb_file = dir.path().join("telha.redb");
    let (_, sample) = job(0, n);
    println!("graph store bench: reverse edges merged every {merge_rows} staged rows (--merge-rows)");
    println!("graph store bench: {n} one-file jobs in process (enqueue + lease + one final submission of {} bytes: 50 nodes, 100 relationships, 49 spans), 3 durable commits each", sample.len());
    println!("{:>6}  {:>10}  {:>12}  {:>12}  {:>10}   KiB/job by step: blob, enqueue, lease, submit", "jobs", "jobs/s", "KiB/job", "KiB/commit", "redb MiB");
    let marks = [1usize, 100, 500, 1000, 2000, 5000, 10_000, 20_000];
    let mut window = (Instant::now(), write_bytes(), 0usize);
    let started = Instant::now();
    let mut submit_time = 0.0f64;
    // Bytes written by step, per window: blob, enqueue commit, lease commit, submit commit.
    let mut steps = [0u64; 4];
    for j in 0..n {
        let (content, json) = job(j, n);
        let w0 = write_bytes();
        // Enqueue: the content as a blob, then the job's commit (as SubmitJob does).
        let blob = tokio::task::block_in_place(|| {
            let mut w = store.blobs().writer()?;
            w.write(&content)?;
            w.finish()
        })
        .expect("blob");
        let new = NewJob { tenant: "bench".into(), format: "code".into(), name: format!("mod_{j}.py"), options_json: "{}".into(), blob: blob.0, size: blob.1, ..Default::default() };
        let w1 = write_bytes();
        let (rec, _) = store.write(move |t| jobs::insert_once(t, new, telha::time::now_us())).await.expect("enqueue");
        let w2 = write_bytes();
        let p = policy.clone();
        let granted = store.write(move |t| jobs::lease(t, rec.id, "bench-worker", &p, telha::time::now_us())).await.expect("lease").expect("leased");
        let w3 = write_bytes();
        // The submission as the RPC layer stages it (parse, validate, encode: off the writer).
        let t = Instant::now();
        let bytes = json.into_bytes();
        let sub = wire::parse(&bytes).expect("parse");
        validate::validate(&sub, 0, &config.graph, &formats).expect("valid");
        let props = Encoded::of(&sub).expect("props");
        let staged = Staged { job_id: rec.id, worker_id: Some("bench-worker".into()), attempt: granted.lease.attempt, base: 0, result_json: bytes, sub, props, child_blobs: vec![], child_inline: vec![], core_refs: vec![] };
        let p = policy.clone();
        let outcome = store.write(move |t| submit::submit(t, staged, &p, telha::time::now_us())).await.expect("submit");
        submit_time += t.elapsed().as_secs_f64();
        let w4 = write_bytes();
        steps[0] += w1 - w0;
        steps[1] += w2 - w1;
        steps[2] += w3 - w2;
        steps[3] += w4 - w3;
        assert!(matches!(outcome, SubmitOutcome::Accepted { finished: true, .. }), "job {j}: {outcome:?}");
        window.2 += 1;
        if marks.contains(&(j + 1)) || j + 1 == n {
            let written = write_bytes() - window.1;
            let per_job = written as f64 / window.2 as f64 / 1024.0;
            let size = std::fs::metadata(&redb_file).map(|m| m.len()).unwrap_or(0);
            let step = |i: usize| steps[i] as f64 / window.2 as f64 / 1024.0;
            println!("{:>6}  {:>10.1}  {:>12.1}  {:>12.1}  {:>10.1}   {:.1}, {:.1}, {:.1}, {:.1}", j + 1, window.2 as f64 / window.0.elapsed().as_secs_f64(), per_job, per_job / 3.0, size as f64 / 1048576.0, step(0), step(1), step(2), step(3));
            steps = [0; 4];
            window = (Instant::now(), write_bytes(), 0);
        }
    }
    let total = started.elapsed().as_secs_f64();
    let size = std::fs::metadata(&redb_file).map(|m| m.len()).unwrap_or(0);
    println!();
    println!("{n} jobs in {total:.1} s: {:.0} jobs/s end to end, {:.0} submissions/s (submit step alone)", n as f64 / total, n as f64 / submit_time);
    println!("redb file {:.1} MiB ({:.0} bytes per job)", size as f64 / 1048576.0, size as f64 / n as f64);
    store.close().await;
    breakdown(&redb_file);
}

/// Where the redb file's bytes are: live data per table, metadata, fragmentation.
fn breakdown(path: &std::path::Path) {
    use redb::{ReadableDatabase, ReadableTableMetadata};
    let Ok(db) = redb::Database::open(path) else { return };
    let mib = |b: u64| b as f64 / 1048576.0;
    if let Ok(w) = db.begin_write()
        && let Ok(st) = w.stats()
    {
        println!(
            "redb stats: {:.1} MiB allocated ({} pages), stored {:.1} MiB, metadata {:.1} MiB, fragmented {:.1} MiB, height {}",
            mib(st.allocated_pages() * st.page_size() as u64),
            st.allocated_pages(),
            mib(st.stored_bytes()),
            mib(st.metadata_bytes()),
            mib(st.fragmented_bytes()),
            st.tree_height()
        );
        let _ = w.abort();
    }
    let Ok(r) = db.begin_read() else { return };
    let Ok(tables) = r.list_tables() else { return };
    let mut rows = Vec::new();
    for t in tables {
        let name = redb::TableHandle::name(&t).to_string();
        if let Ok(s) = r.open_untyped_table(t).and_then(|t| t.stats().map_err(Into::into)) {
            rows.push((name, s.leaf_pages(), s.branch_pages(), s.stored_bytes(), s.fragmented_bytes()));
        }
    }
    rows.sort_by_key(|r| std::cmp::Reverse(r.1 + r.2));
    println!("{:>18}  {:>8}  {:>8}  {:>10}  {:>10}", "table", "leaves", "branches", "stored MiB", "frag MiB");
    for (name, l, b, stored, frag) in rows.iter().take(10) {
        println!("{name:>18}  {l:>8}  {b:>8}  {:>10.2}  {:>10.2}", mib(*stored), mib(*frag));
    }
}
