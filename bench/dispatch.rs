//! `bench/dispatch`: the job engine's throughput and latency, end to end.
//!
//! Starts the real `telha serve` (release build), enqueues N no-op jobs over gRPC,
//! then drives K concurrent workers (each its own connection: PollJobs, and its results
//! as messages of one SubmitIngestionResults stream, or with `--unary` one
//! SubmitIngestionResult call each) and prints durable jobs/s. Each worker handles one
//! job at a time and holds at most `--max-in-flight` leases, as a real worker may
//! (`PollJobsRequest.max_in_flight`): jobs prefetched into its stream and results sent
//! but not yet answered. Every result counts only once its answer is in, and the core
//! answers only after the commit that stored it. Then enqueue→lease p50/p99 at a steady 200 jobs/s and at
//! half the drained rate (the time from an enqueue's reply to the job reaching a
//! waiting worker). Then, unless `--baseline-jobs 0`, the same with one commit per
//! state change (`[store] max_batch = 1`) as the baseline, and the ratio.
//!
//! cargo bench --bench dispatch -- [--jobs 50000] [--workers 16] [--max-in-flight 8]
//!     [--baseline-jobs 10000] [--latency-secs 3] [--unary] [--json]
//!
//! `--json` prints one JSON line of the group-commit figures last (bench/peer reads it).
#[path = "../tests/common/mod.rs"]
mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use telha::proto::*;

/// One latency measurement: the rate asked for, the rate the producers kept, p50/p99 (ms).
struct Latency {
    rate: f64,
    achieved: f64,
    measured: usize,
    p50_ms: f64,
    p99_ms: f64,
    /// From the start of the enqueue call (not its reply) to the job reaching a worker:
    /// a job leased in the commit that creates it can reach the worker before the
    /// client hears back, so the figure above is then 0.
    call_p50_ms: f64,
    call_p99_ms: f64,
}

/// CPU time per drained job (µs): the server process, its store-writer thread (part of
/// it), and the bench's own clients and workers.
struct CpuPerJob {
    server_us: f64,
    writer_us: f64,
    bench_us: f64,
}

struct Figures {
    enqueue_per_s: f64,
    jobs_per_s: f64,
    drain_secs: f64,
    cpu: CpuPerJob,
    at_200: Latency,
    at_half: Latency,
}

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn flag(name: &str) -> bool {
    std::env::args().any(|a| a == name)
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

/// When each job id reached a worker (latency runs only).
type Arrivals = Arc<Mutex<HashMap<String, Instant>>>;

/// K workers that finish every job at once; they stop after `total` jobs in all and
/// return when the last reply came in. Each takes its jobs one at a time from its
/// stream and sends each result without waiting for the one before to be answered
/// (the core lets it hold `max_in_flight` leases).
async fn workers(addr: String, token: String, k: usize, max_in_flight: u32, total: usize, arrivals: Option<Arrivals>) -> Instant {
    let done = Arc::new(AtomicUsize::new(0));
    let (finished, watch) = tokio::sync::watch::channel(None::<Instant>);
    let finished = Arc::new(finished);
    let result = result_with_nodes(0);
    let streamed = results_mode() == "stream";
    let tasks: Vec<_> = (0..k)
        .map(|i| {
            let (addr, token) = (addr.clone(), token.clone());
            let (done, arrivals, result, finished, mut watch) = (done.clone(), arrivals.clone(), result.clone(), finished.clone(), watch.clone());
            tokio::spawn(async move {
                let ch = tonic::transport::Channel::from_shared(format!("http://{addr}")).unwrap().connect().await.unwrap();
                let bearer = Bearer(Some(format!("Bearer {token}").parse().unwrap()));
                let mut client = telha::proto::worker_service_client::WorkerServiceClient::with_interceptor(ch, bearer);
                let id = format!("bench-{i}");
                let req = PollJobsRequest { worker_id: id.clone(), formats: vec!["txt".into()], max_in_flight };
                let mut stream = client.poll_jobs(req).await.unwrap().into_inner();
                let mut replies = tokio::task::JoinSet::new();
                // Every result a message of one SubmitIngestionResults stream (unless --unary).
                let results = if streamed {
                    let (tx, rx) = tokio::sync::mpsc::channel::<IngestionResult>(1024);
                    let mut answers = client.submit_ingestion_results(tokio_stream::wrappers::ReceiverStream::new(rx)).await.unwrap().into_inner();
                    let (done, finished) = (done.clone(), finished.clone());
                    replies.spawn(async move {
                        while let Some(resp) = answers.message().await.unwrap() {
                            count_answer(&resp, &done, total, &finished);
                        }
                    });
                    Some(tx)
                } else {
                    None
                };
                loop {
                    while replies.try_join_next().is_some() {}
                    let job = tokio::select! {
                        j = stream.message() => match j {
                            Ok(Some(j)) => j,
                            _ => break,
                        },
                        _ = watch.wait_for(Option::is_some) => break,
                    };
                    if let Some(a) = &arrivals {
                        a.lock().unwrap().insert(job.job_id.clone(), Instant::now());
                    }
                    let r = IngestionResult { job_id: job.job_id, success: true, result_json: result.clone().into_bytes(), worker_id: id.clone(), attempt: job.attempt, ..Default::default() };
                    if let Some(tx) = &results {
                        tx.send(r).await.unwrap();
                        continue;
                    }
                    let (mut client, done, finished) = (client.clone(), done.clone(), finished.clone());
                    replies.spawn(async move {
                        let resp = client.submit_ingestion_result(r).await.unwrap().into_inner();
                        count_answer(&resp, &done, total, &finished);
                    });
                }
                drop(results);
                while let Some(r) = replies.join_next().await {
                    r.unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let end = *watch.borrow();
    end.expect("every job answered")
}

/// Counts an answer, which must be an acceptance; the `total`-th marks the end of the drain.
fn count_answer(resp: &SubmitResponse, done: &AtomicUsize, total: usize, finished: &tokio::sync::watch::Sender<Option<Instant>>) {
    assert!(resp.accepted, "{}", resp.reason);
    if done.fetch_add(1, Ordering::Relaxed) + 1 == total {
        finished.send_replace(Some(Instant::now()));
    }
}

/// CPU seconds (user + system) of process `pid` and of its store-writer thread, from /proc.
fn cpu_secs(pid: u32) -> (f64, f64) {
    // Fields 14 and 15 of a stat line, after the command in parentheses, in clock ticks.
    fn ticks(path: &str) -> Option<f64> {
        let text = std::fs::read_to_string(path).ok()?;
        let rest = &text[text.rfind(')')? + 2..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        Some(f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?)
    }
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let total = ticks(&format!("/proc/{pid}/stat")).unwrap_or(0.0) / hz;
    let mut writer = 0.0;
    for t in std::fs::read_dir(format!("/proc/{pid}/task")).into_iter().flatten().flatten() {
        let dir = t.path();
        if std::fs::read_to_string(dir.join("comm")).is_ok_and(|c| c.starts_with("telha-store-wri")) {
            writer += ticks(&dir.join("stat").to_string_lossy()).unwrap_or(0.0) / hz;
        }
    }
    (total, writer)
}

/// This process's CPU seconds (the bench's clients and workers).
fn own_cpu_secs() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Enqueue→lease at a steady `rate` for `secs`, K workers waiting.
async fn latency(s: &Server, k: usize, max_in_flight: u32, rate: f64, secs: f64, tag: &str) -> Latency {
    let m = ((rate * secs) as usize).clamp(100, 50_000);
    let arrivals: Arrivals = Arc::new(Mutex::new(HashMap::new()));
    let ws = tokio::spawn(workers(s.addr.clone(), s.token.clone(), k, max_in_flight, m, Some(arrivals.clone())));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let acked: Arc<Mutex<HashMap<String, (Instant, Instant)>>> = Arc::new(Mutex::new(HashMap::new()));
    // Enough producers (each waits for its enqueue's commit) that a slow commit under
    // load does not hold the rate back.
    let producers = ((rate / 25.0).ceil() as usize).clamp(4, 64);
    let interval = Duration::from_secs_f64(producers as f64 / rate);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for p in 0..producers {
        let mut client = s.client().await;
        let acked = acked.clone();
        let count = m / producers + usize::from(p < m % producers);
        let tag = tag.to_string();
        tasks.push(tokio::spawn(async move {
            let mut tick = tokio::time::interval(interval);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            for i in 0..count {
                tick.tick().await;
                let sent = Instant::now();
                let job = submit(&mut client, "lat", "txt", &format!("lat-{tag}-{p}-{i}"), b"").await.unwrap();
                acked.lock().unwrap().insert(job.id, (sent, Instant::now()));
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let achieved = m as f64 / started.elapsed().as_secs_f64();
    ws.await.unwrap();
    let acked = acked.lock().unwrap();
    let arrivals = arrivals.lock().unwrap();
    let since = |pick: fn(&(Instant, Instant)) -> Instant| {
        let mut lat: Vec<f64> = acked
            .iter()
            .filter_map(|(id, at)| arrivals.get(id).map(|got| got.saturating_duration_since(pick(at)).as_secs_f64() * 1000.0))
            .collect();
        lat.sort_by(|a, b| a.total_cmp(b));
        lat
    };
    let (lat, call) = (since(|at| at.1), since(|at| at.0));
    Latency {
        rate,
        achieved,
        measured: lat.len(),
        p50_ms: percentile(&lat, 0.5),
        p99_ms: percentile(&lat, 0.99),
        call_p50_ms: percentile(&call, 0.5),
        call_p99_ms: percentile(&call, 0.99),
    }
}

async fn run(max_batch: usize, n: usize, k: usize, max_in_flight: u32, secs: f64) -> Figures {
    let s = server(max_batch);
    // Throughput: N jobs already queued, K workers drain them.
    let enq = enqueue(&s, n, 32).await;
    let (cpu0, writer0, own0) = { let (c, w) = cpu_secs(s.pid()); (c, w, own_cpu_secs()) };
    let start = Instant::now();
    let drain = workers(s.addr.clone(), s.token.clone(), k, max_in_flight, n, None).await - start;
    let jobs_per_s = n as f64 / drain.as_secs_f64();
    let (cpu1, writer1) = cpu_secs(s.pid());
    let per_job = |secs: f64| secs * 1e6 / n.max(1) as f64;
    let cpu = CpuPerJob { server_us: per_job(cpu1 - cpu0), writer_us: per_job(writer1 - writer0), bench_us: per_job(own_cpu_secs() - own0) };
    let at_200 = latency(&s, k, max_in_flight, 200.0, secs, "200").await;
    let at_half = latency(&s, k, max_in_flight, (jobs_per_s / 2.0).max(1.0), secs, "half").await;
    Figures { enqueue_per_s: n as f64 / enq.as_secs_f64(), jobs_per_s, drain_secs: drain.as_secs_f64(), cpu, at_200, at_half }
}

/// How the bench's workers send their results.
fn results_mode() -> &'static str {
    if flag("--unary") {
        "unary"
    } else {
        "stream"
    }
}

fn print(label: &str, n: usize, k: usize, m: u32, f: &Figures) {
    println!("{label:<22} N={n:<6} K={k:<3} max_in_flight={m:<3} results={:<6} enqueue {:>8.0} jobs/s | end to end {:>8.0} jobs/s", results_mode(), f.enqueue_per_s, f.jobs_per_s);
    println!(
        "{:<22} CPU per drained job: server {:.0} µs (store writer thread {:.0} µs, the rest gRPC, actors, parse/validate), bench clients {:.0} µs",
        "", f.cpu.server_us, f.cpu.writer_us, f.cpu.bench_us
    );
    for l in [&f.at_200, &f.at_half] {
        println!(
            "{:<22} enqueue→lease at {:>6.0} jobs/s (kept {:>6.0}): p50 {:>6.2} ms, p99 {:>6.2} ms ({} jobs); from the enqueue call's start: p50 {:>6.2} ms, p99 {:>6.2} ms",
            "", l.rate, l.achieved, l.p50_ms, l.p99_ms, l.measured, l.call_p50_ms, l.call_p99_ms
        );
    }
}

fn json_latency(l: &Latency) -> String {
    format!(
        r#"{{"rate":{:.1},"achieved_rate":{:.1},"measured":{},"p50_ms":{:.4},"p99_ms":{:.4},"call_p50_ms":{:.4},"call_p99_ms":{:.4}}}"#,
        l.rate, l.achieved, l.measured, l.p50_ms, l.p99_ms, l.call_p50_ms, l.call_p99_ms
    )
}

#[tokio::main]
async fn main() {
    let n = arg("--jobs", 50_000);
    let k = arg("--workers", 16);
    let m = u32::try_from(arg("--max-in-flight", 8)).unwrap_or(8);
    let nb = arg("--baseline-jobs", 10_000);
    let secs = arg("--latency-secs", 3) as f64;
    let group = run(4096, n, k, m, secs).await;
    print("group commit", n, k, m, &group);
    if nb > 0 {
        let single = run(1, nb, k, m, secs).await;
        print("one commit per change", nb, k, m, &single);
        println!(
            "ratio (group / one per change): end to end {:.1}x, enqueue {:.1}x",
            group.jobs_per_s / single.jobs_per_s,
            group.enqueue_per_s / single.enqueue_per_s
        );
    }
    if flag("--json") {
        println!(
            r#"{{"side":"telha","jobs":{n},"seconds":{:.4},"jobs_per_s":{:.1},"enqueue_per_s":{:.1},"cpu_us_per_job":{{"server":{:.1},"writer":{:.1},"bench":{:.1}}},"lat200":{},"lathalf":{},"settings":{{"workers":{k},"max_in_flight":{m},"max_batch":4096,"results":"{}"}}}}"#,
            group.drain_secs,
            group.jobs_per_s,
            group.enqueue_per_s,
            group.cpu.server_us,
            group.cpu.writer_us,
            group.cpu.bench_us,
            json_latency(&group.at_200),
            json_latency(&group.at_half),
            results_mode()
        );
    }
}
