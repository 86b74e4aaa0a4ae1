//! `bench/graph`: the graph store under one big streamed projection.
//!
//! Starts the real `telha serve` (release build), submits one job, and has a worker
//! stream N nodes (each with a span and an edge) in P partials, the last one final.
//! Prints: partial submissions/s and the server's resident memory as partials pile
//! up (VmRSS and peak VmHWM from /proc/<pid>/status: the peak must not grow with
//! the number of partials already accepted), the final commit's latency, nodes/s
//! committed end to end, and bytes on disk per node.
//!
//! cargo bench --bench graph -- [--nodes 1000000] [--partials 100]
//!
//! `--jobs N` instead runs the store alone, in process (no gRPC, no Python): N one-shot
//! jobs, each enqueued (blob + commit), leased (commit) and finished with one realistic
//! submission (commit) through the same store writer and `lifecycle::submit` the server
//! uses. It prints the bytes this process wrote to disk per job and per commit
//! (/proc/self/io `write_bytes`) and the redb file's size as the store grows: the
//! per-job figure must stay flat.
//!
//! cargo bench --bench graph -- --jobs 2000
#[path = "../tests/common/mod.rs"]
mod common;
#[path = "graph_store.rs"]
mod graph_store;

use std::fmt::Write as _;
use std::time::Instant;

use common::*;
use telha::proto::*;

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// (VmRSS, VmHWM) of `pid` in MiB.
fn memory(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status.lines().find(|l| l.starts_with(name)).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) / 1024.0
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn disk_bytes(dir: &std::path::Path) -> u64 {
    let mut total = 0;
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let Ok(meta) = e.metadata() else { continue };
            total += if meta.is_dir() { disk_bytes(&e.path()) } else { meta.len() };
        }
    }
    total
}

/// Partial `k` of `p`: `per` nodes with one span each, a NEXT edge between
/// consecutive nodes, and (from partial 1 on) an edge by id to the previous
/// partial's last node. Returns the JSON and this partial's text length.
fn partial(k: usize, p: usize, per: usize, base: u64, prev_last: Option<&str>) -> (String, u64) {
    let mut text = String::with_capacity(per * 14);
    let mut spans = String::with_capacity(per * 40);
    let mut nodes = String::with_capacity(per * 60);
    let mut rels = String::with_capacity(per * 50);
    for i in 0..per {
        let start = base + text.len() as u64;
        let _ = writeln!(text, "row {k}.{i}");
        let end = base + text.len() as u64 - 1;
        let sep = if i == 0 { "" } else { "," };
        let _ = write!(spans, r#"{sep}{{"start":{start},"end":{end},"kind":"row"}}"#);
        let _ = write!(nodes, r#"{sep}{{"labels":["ROW"],"properties":{{"k":{k},"i":{i}}},"spanRefs":[{i}]}}"#);
        if i > 0 {
            let _ = write!(rels, r#"{}{{"type":"NEXT","fromRef":{},"toRef":{i}}}"#, if i == 1 { "" } else { "," }, i - 1);
        }
    }
    if let Some(prev) = prev_last {
        let _ = write!(rels, r#"{}{{"type":"NEXT","fromId":"{prev}","toRef":0}}"#, if per > 1 { "," } else { "" });
    }
    let text_json = serde_json::to_string(&text).expect("text");
    let json = format!(
        r#"{{"v":1,"seq":{k},"partial":{},"canonicalText":{text_json},"spans":[{spans}],"nodes":[{nodes}],"relationships":[{rels}]}}"#,
        k + 1 < p
    );
    (json, text.len() as u64)
}

#[tokio::main]
async fn main() {
    if std::env::args().any(|a| a == "--jobs") {
        return graph_store::run(arg("--jobs", 2000), arg("--merge-rows", telha::store::edges::DEFAULT_MERGE_ROWS as usize) as u64).await;
    }
    let n = arg("--nodes", 1_000_000);
    let p = arg("--partials", 100).max(1);
    let per = n / p;
    let s = Server::start(Some("max_attempts = 1\nlease_secs = 600\nbackoff_base_ms = 100\nbackoff_max_ms = 1000"));
    let pid = s.pid();
    let (rss0, _) = memory(pid);
    let job = s.submit("bench", "csv", "big.csv", b"x").await;
    let mut w = Worker::connect(&s, "bench-worker", &["csv"]).await;
    let j = w.expect_job().await;
    assert_eq!(j.job_id, job.id);
    println!("graph bench: {} nodes in {p} partials of {per} (each node: 1 span, 1 edge), server pid {pid}, idle RSS {rss0:.0} MiB", per * p);
    println!("{:>8}  {:>10}  {:>10}  {:>10}  {:>10}", "partials", "nodes", "subm/s", "RSS MiB", "peak MiB");

    let start = Instant::now();
    let mut base = 0u64;
    let mut prev_last: Option<String> = None;
    let mut window = Instant::now();
    let mut window_n = 0usize;
    let mut bytes_sent = 0usize;
    let mut partials_peak = 0.0f64;
    let mut final_latency = 0.0;
    for k in 0..p {
        let (json, len) = partial(k, p, per, base, prev_last.as_deref());
        bytes_sent += json.len();
        let t = Instant::now();
        let r = w.succeed(&j, &json).await;
        assert!(r.accepted, "partial {k}: {}", r.reason);
        assert_eq!(r.node_ids.len(), per);
        if k + 1 == p {
            final_latency = t.elapsed().as_secs_f64();
        }
        base += len;
        prev_last = r.node_ids.last().cloned();
        window_n += 1;
        let (rss, hwm) = memory(pid);
        if k + 1 < p {
            partials_peak = hwm;
        }
        if [1, 10, 25, 50, 75].contains(&(k + 1)) || k + 2 == p {
            println!("{:>8}  {:>10}  {:>10.1}  {:>10.0}  {:>10.0}", k + 1, (k + 1) * per, window_n as f64 / window.elapsed().as_secs_f64(), rss, hwm);
            window = Instant::now();
            window_n = 0;
        }
    }
    let total = start.elapsed().as_secs_f64();
    let (rss, hwm) = memory(pid);
    let done = s.job(&job.id).await;
    assert_eq!(done.state, "succeeded");
    assert_eq!(done.node_count as usize, per * p);
    let disk = disk_bytes(&s.data_dir());
    println!("{:>8}  {:>10}  {:>10}  {:>10.0}  {:>10.0}   (after the final commit)", p, per * p, "-", rss, hwm);
    println!();
    println!("final commit (after {p} partials applied as they came): {final_latency:.2} s");
    println!("end to end: {:.0} nodes/s committed ({} nodes, {:.1} s, {:.0} MiB of result_json)", (per * p) as f64 / total, per * p, total, bytes_sent as f64 / 1048576.0);
    println!("disk: {:.0} MiB in the data dir, {:.0} bytes per node (node + version + span + edge + indexes)", disk as f64 / 1048576.0, disk as f64 / (per * p) as f64);
    println!("server peak RSS: {partials_peak:.0} MiB while partials arrive, {hwm:.0} MiB after the final commit");

    // A read of the committed projection (first items only) and of one node.
    let mut c = s.client().await.max_decoding_message_size(256 << 20);
    let t = Instant::now();
    let proj = c.get_projection(GetProjectionRequest { job_id: job.id.clone(), tenant_id: "bench".into(), max_items: 1000, skip: 0 }).await.expect("projection").into_inner();
    println!("GetProjection (max_items 1000, {} MiB of text): {:.0} ms, truncated: {}", proj.canonical_text.len() / 1048576, t.elapsed().as_secs_f64() * 1000.0, proj.truncated);
    let id = proj.nodes[0].id.clone();
    let t = Instant::now();
    let node = c.get_node(GetNodeRequest { tenant_id: "bench".into(), node_id: id }).await.expect("node").into_inner();
    println!("GetNode: {:.2} ms ({} edges out, {} in)", t.elapsed().as_secs_f64() * 1000.0, node.edges_out.len(), node.edges_in.len());
}
