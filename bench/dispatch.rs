//! `bench/dispatch`: the job engine's throughput and latency, end to end.
//!
//! Starts the real `telha serve` (release build), enqueues N no-op jobs over gRPC,
//! then drives K concurrent workers (each its own connection: PollJobs → Submit),
//! and prints durable jobs/s and enqueue→lease latency p50/p99 at half the measured
//! rate. Runs twice: with group commit, and with one commit per state change
//! (`[store] max_batch = 1`) as the baseline, and prints the ratio.
//!
//! cargo bench --bench dispatch -- [--jobs 50000] [--workers 16] [--baseline-jobs 10000]
#[path = "../tests/common/mod.rs"]
mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use telha::proto::*;

struct Figures {
    enqueue_per_s: f64,
    jobs_per_s: f64,
    p50_ms: f64,
    p99_ms: f64,
    latency_rate: f64,
}

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn server(max_batch: usize) -> Server {
    let s = Server::start(Some("max_attempts = 5\nlease_secs = 60\nbackoff_base_ms = 100\nbackoff_max_ms = 1000"));
    let text = std::fs::read_to_string(&s.config).unwrap() + &format!("\n[store]\nmax_batch = {max_batch}\n");
    std::fs::write(&s.config, text).unwrap();
    let mut s = s;
    s.restart();
    s
}

async fn enqueue(s: &Server, n: usize, concurrency: usize) -> Duration {
    let start = Instant::now();
    let per = n.div_ceil(concurrency);
    let mut tasks = Vec::new();
    for c in 0..concurrency {
        let mut client = s.client().await;
        tasks.push(tokio::spawn(async move {
            for i in 0..per {
                if c * per + i >= n {
                    break;
                }
                submit(&mut client, &format!("tenant-{}", c % 4), "txt", &format!("noop-{c}-{i}"), b"").await.expect("enqueue");
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    start.elapsed()
}

/// K workers that finish every job at once; they stop after `total` jobs in all.
/// Records when each job id arrived.
fn workers(s: &Server, k: usize, total: usize, arrivals: Arc<Mutex<HashMap<String, Instant>>>) -> Vec<tokio::task::JoinHandle<()>> {
    let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let result = result_with_nodes(0);
    (0..k)
        .map(|i| {
            let (addr, token) = (s.addr.clone(), s.token.clone());
            let (done, arrivals, result) = (done.clone(), arrivals.clone(), result.clone());
            tokio::spawn(async move {
                let ch = tonic::transport::Channel::from_shared(format!("http://{addr}")).unwrap().connect().await.unwrap();
                let bearer = Bearer(Some(format!("Bearer {token}").parse().unwrap()));
                let mut client = telha::proto::worker_service_client::WorkerServiceClient::with_interceptor(ch, bearer);
                let id = format!("bench-{i}");
                let req = PollJobsRequest { worker_id: id.clone(), formats: vec!["txt".into()], max_in_flight: 1 };
                let mut stream = client.poll_jobs(req).await.unwrap().into_inner();
                while done.load(std::sync::atomic::Ordering::Relaxed) < total {
                    let job = match tokio::time::timeout(Duration::from_millis(200), stream.message()).await {
                        Ok(Ok(Some(j))) => j,
                        Ok(_) => return,
                        Err(_) => continue,
                    };
                    arrivals.lock().unwrap().insert(job.job_id.clone(), Instant::now());
                    let r = IngestionResult { job_id: job.job_id, success: true, result_json: result.clone().into_bytes(), worker_id: id.clone(), attempt: job.attempt, ..Default::default() };
                    let resp = client.submit_ingestion_result(r).await.unwrap().into_inner();
                    assert!(resp.accepted, "{}", resp.reason);
                    done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            })
        })
        .collect()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

async fn run(max_batch: usize, n: usize, k: usize) -> Figures {
    let s = server(max_batch);
    // Throughput: N jobs already queued, K workers drain them.
    let enq = enqueue(&s, n, 32).await;
    let arrivals = Arc::new(Mutex::new(HashMap::new()));
    let start = Instant::now();
    for w in workers(&s, k, n, arrivals.clone()) {
        w.await.unwrap();
    }
    let drain = start.elapsed();
    let jobs_per_s = n as f64 / drain.as_secs_f64();

    // Latency: paced enqueue at half the measured rate for ~3 s, K workers waiting.
    let rate = (jobs_per_s / 2.0).max(1.0);
    let m = ((rate * 3.0) as usize).clamp(100, 20_000);
    let arrivals = Arc::new(Mutex::new(HashMap::new()));
    let ws = workers(&s, k, m, arrivals.clone());
    tokio::time::sleep(Duration::from_millis(300)).await;
    let acked: Arc<Mutex<HashMap<String, Instant>>> = Arc::new(Mutex::new(HashMap::new()));
    let producers = 16usize;
    let interval = Duration::from_secs_f64(producers as f64 / rate);
    let mut tasks = Vec::new();
    for p in 0..producers {
        let mut client = s.client().await;
        let acked = acked.clone();
        let count = m / producers + usize::from(p < m % producers);
        tasks.push(tokio::spawn(async move {
            let mut tick = tokio::time::interval(interval);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            for i in 0..count {
                tick.tick().await;
                let job = submit(&mut client, "lat", "txt", &format!("lat-{p}-{i}"), b"").await.unwrap();
                acked.lock().unwrap().insert(job.id, Instant::now());
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    for w in ws {
        w.await.unwrap();
    }
    let acked = acked.lock().unwrap();
    let arrivals = arrivals.lock().unwrap();
    let mut lat: Vec<f64> = acked
        .iter()
        .filter_map(|(id, at)| arrivals.get(id).map(|got| got.saturating_duration_since(*at).as_secs_f64() * 1000.0))
        .collect();
    lat.sort_by(|a, b| a.total_cmp(b));
    Figures { enqueue_per_s: n as f64 / enq.as_secs_f64(), jobs_per_s, p50_ms: percentile(&lat, 0.5), p99_ms: percentile(&lat, 0.99), latency_rate: rate }
}

fn print(label: &str, n: usize, k: usize, f: &Figures) {
    println!(
        "{label:<22} N={n:<6} K={k:<3} enqueue {:>8.0} jobs/s | end to end {:>8.0} jobs/s | enqueue→lease at {:>6.0} jobs/s: p50 {:>6.2} ms, p99 {:>6.2} ms",
        f.enqueue_per_s, f.jobs_per_s, f.latency_rate, f.p50_ms, f.p99_ms
    );
}

#[tokio::main]
async fn main() {
    let n = arg("--jobs", 50_000);
    let k = arg("--workers", 16);
    let nb = arg("--baseline-jobs", 10_000);
    let group = run(4096, n, k).await;
    print("group commit", n, k, &group);
    let single = run(1, nb, k).await;
    print("one commit per change", nb, k, &single);
    println!(
        "ratio (group / one per change): end to end {:.1}x, enqueue {:.1}x",
        group.jobs_per_s / single.jobs_per_s,
        group.enqueue_per_s / single.enqueue_per_s
    );
}
