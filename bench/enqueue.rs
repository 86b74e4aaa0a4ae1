//! `bench/enqueue`: how fast real small contents get in, durably.
//!
//! Starts the real `telha serve` (release build) twice in one run: with the shipped
//! `[store] inline_kb` (small contents stored in the job's own group commit) and with
//! `inline_kb = 0` (every content a blob file with its own fsyncs) as the baseline. For
//! each it measures, in this order:
//! - `--clients` gRPC connections (default 8), each with `--streams` SubmitJob calls in
//!   flight (default 32), submitting `--jobs` small text contents in all (default
//!   20,000; 200 B to 8 KiB, like a folder of notes or source files): files/s and the
//!   p50/p99 of one call. Every reply comes after the commit that made the job durable.
//! - the real `telha ingest` of a folder of `--files` small files (default 10,000), from
//!   its start to its exit: files/s.
//!
//! Each timed phase starts after a `sync`, so that writeback of earlier phases (the
//! folder just written, a data dir just removed) is not charged to it.
//!
//! cargo bench --bench enqueue -- [--jobs 20000] [--clients 8] [--streams 32] [--files 10000]
#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::*;

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The i-th content: 200 B to 8 KiB of text, distinct per i (so none is deduplicated).
fn content(i: usize) -> Vec<u8> {
    let len = 200 + (i * 7919) % (8 * 1024 - 200);
    let line = format!("note {i}: the quick brown fox jumps over the lazy dog.\n");
    line.bytes().cycle().take(len).collect()
}

fn server(inline_kb: u64) -> Server {
    let mut s = Server::start(None);
    let text = std::fs::read_to_string(&s.config).unwrap() + &format!("\n[store]\ninline_kb = {inline_kb}\n");
    std::fs::write(&s.config, text).unwrap();
    s.restart();
    s
}

struct Figures {
    grpc_per_s: f64,
    p50_ms: f64,
    p99_ms: f64,
    ingest_per_s: f64,
}

async fn over_grpc(s: &Server, jobs: usize, clients: usize, streams: usize) -> (f64, f64, f64) {
    let contents: Vec<Vec<u8>> = (0..jobs).map(content).collect();
    let contents = std::sync::Arc::new(contents);
    let callers = clients * streams;
    nix::unistd::sync();
    let start = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
        // Its own connection, shared by its streams (as one client process would).
        let client = s.client().await;
        for k in 0..streams {
            let (mut client, contents) = (client.clone(), contents.clone());
            let caller = c * streams + k;
            tasks.push(tokio::spawn(async move {
                let mut took = Vec::new();
                for i in (caller..contents.len()).step_by(callers) {
                    let t = Instant::now();
                    submit(&mut client, "bench", "txt", &format!("notes/{i}.txt"), &contents[i]).await.expect("submit");
                    took.push(t.elapsed());
                }
                took
            }));
        }
    }
    let mut all: Vec<Duration> = Vec::with_capacity(jobs);
    for t in tasks {
        all.extend(t.await.expect("caller"));
    }
    let secs = start.elapsed().as_secs_f64();
    all.sort();
    let pct = |p: f64| all.get(((all.len() as f64 * p) as usize).min(all.len().saturating_sub(1))).map_or(0.0, |d| d.as_secs_f64() * 1e3);
    (jobs as f64 / secs, pct(0.5), pct(0.99))
}

fn ingest_folder(s: &Server, files: usize) -> f64 {
    let dir = tempfile::tempdir().expect("tempdir");
    for i in 0..files {
        let sub = dir.path().join(format!("d{:03}", i % 100));
        std::fs::create_dir_all(&sub).expect("mkdir");
        std::fs::write(sub.join(format!("f{i}.txt")), content(i + 1_000_000)).expect("write");
    }
    // The files just written are flushed first: their writeback would otherwise compete
    // with the server's commits (and on this machine's `discard` mount, so would the
    // trim of a data dir removed before).
    nix::unistd::sync();
    let start = Instant::now();
    let out = s.cli(&["ingest", dir.path().to_str().expect("utf-8 path")]);
    let secs = start.elapsed().as_secs_f64();
    assert!(out.status.success(), "telha ingest failed: {}", String::from_utf8_lossy(&out.stderr));
    let listed = String::from_utf8_lossy(&out.stdout).lines().count();
    assert_eq!(listed, files, "telha ingest listed {listed} jobs");
    files as f64 / secs
}

async fn measure(inline_kb: u64, jobs: usize, clients: usize, streams: usize, files: usize) -> Figures {
    let s = server(inline_kb);
    let (grpc_per_s, p50_ms, p99_ms) = over_grpc(&s, jobs, clients, streams).await;
    let ingest_per_s = ingest_folder(&s, files);
    Figures { grpc_per_s, p50_ms, p99_ms, ingest_per_s }
}

fn print(label: &str, f: &Figures) {
    println!(
        "{label:<24} gRPC {:>8.0} files/s (call p50 {:>6.2} ms, p99 {:>6.2} ms) | telha ingest of a folder {:>7.0} files/s",
        f.grpc_per_s, f.p50_ms, f.p99_ms, f.ingest_per_s
    );
}

#[tokio::main]
async fn main() {
    let (jobs, clients, streams, files) = (arg("--jobs", 20_000), arg("--clients", 8), arg("--streams", 32), arg("--files", 10_000));
    println!("bench/enqueue: {jobs} contents of 200 B-8 KiB over gRPC ({clients} connections x {streams} calls in flight); telha ingest of {files} files");
    let inline = measure(64, jobs, clients, streams, files).await;
    print("inline_kb = 64 (shipped)", &inline);
    let files_only = measure(0, jobs, clients, streams, files).await;
    print("inline_kb = 0 (files)", &files_only);
    println!("ratio (inline / files): gRPC {:.1}x, telha ingest {:.1}x", inline.grpc_per_s / files_only.grpc_per_s, inline.ingest_per_s / files_only.ingest_per_s);
}
