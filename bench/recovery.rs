//! `bench/recovery`: how fast the supervisor recovers from a worker's death.
//!
//! A pool of two real Python workers (the harness, `tests/workers/misbehave.py`);
//! each round, a job sleeps on one worker, that worker gets SIGKILL, and we measure
//! (a) from the kill to the job leased again on the other worker — the pool actor
//! fails the job at once, no lease expiry involved (the lease is 10 minutes) — and
//! (b) from the kill to the replacement process polling. Prints median and p90.
//!
//! cargo bench --bench recovery -- [--rounds 20]
#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::*;
use telha::proto::*;

const CONFIG: &str = r#"
[server]
listen = "127.0.0.1:0"
data_dir = "data"

[jobs]
max_attempts = 1000
lease_secs = 600
backoff_base_ms = 1
backoff_max_ms = 1

[pools.bench]
formats = ["txt"]
workers = 2
command = ["{repo}/.venv/bin/python", "{repo}/tests/workers/misbehave.py"]
max_restarts = 100000
"#;

fn stats(label: &str, mut v: Vec<f64>) {
    v.sort_by(|a, b| a.total_cmp(b));
    let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
    println!("{label:<44} n={:<3} median {:>7.1} ms  p90 {:>7.1} ms  min {:>7.1} ms  max {:>7.1} ms", v.len(), q(0.5), q(0.9), v[0], v[v.len() - 1]);
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rounds: usize = args.iter().position(|a| a == "--rounds").and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(20);
    let s = Server::start_config(CONFIG);
    let idle2 = |st: &telha::proto::Status| st.pools[0].workers.iter().filter(|w| w.state == "idle").count() == 2;
    s.wait_status(Duration::from_secs(30), "two idle workers", idle2).await;
    let mut to_lease = Vec::new();
    let mut to_polling = Vec::new();
    let mut client = s.client().await;
    for round in 0..rounds {
        let job = s.submit_with("txt", &format!("r{round}"), b"x", r#"{"mode":"sleep"}"#).await;
        let st = s.wait_status(Duration::from_secs(30), "busy", |st| st.pools[0].workers.iter().any(|w| w.state == "busy")).await;
        let victim = st.pools[0].workers.iter().find(|w| w.state == "busy").cloned().expect("busy worker");
        let mut watch = client.watch_job(GetJobRequest { job_id: job.id.clone(), tenant_id: String::new() }).await.unwrap().into_inner();
        let first = watch.message().await.unwrap().unwrap();
        let killed = Instant::now();
        // SAFETY: kill(2) on a worker pid the server reported.
        unsafe { libc::kill(victim.pid as i32, libc::SIGKILL) };
        // (a) the job leased again, under a newer lease.
        while let Some(j) = watch.message().await.unwrap() {
            if j.state == "leased" && j.lease_attempt > first.lease_attempt {
                to_lease.push(killed.elapsed().as_secs_f64() * 1000.0);
                break;
            }
        }
        // (b) the replacement polling: same slot ("bench-<slot>-"), a new generation.
        let slot = victim.worker_id.rsplit_once('-').map(|(s, _)| format!("{s}-")).unwrap_or_default();
        loop {
            let st = s.status().await;
            if st.pools[0].workers.iter().any(|w| w.worker_id.starts_with(&slot) && w.worker_id != victim.worker_id && w.state == "idle") {
                to_polling.push(killed.elapsed().as_secs_f64() * 1000.0);
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        // Clean up: cancel the job, and stop the worker that now sleeps on it.
        client.cancel_job(GetJobRequest { job_id: job.id.clone(), tenant_id: String::new() }).await.unwrap();
        let st = s.status().await;
        for w in st.pools[0].workers.iter().filter(|w| w.job_id == job.id) {
            // SAFETY: as above.
            unsafe { libc::kill(w.pid as i32, libc::SIGKILL) };
        }
        s.wait_status(Duration::from_secs(30), "two idle workers", idle2).await;
    }
    stats("SIGKILL of a busy worker -> job leased again", to_lease);
    stats("SIGKILL -> replacement worker polling", to_polling);
}
