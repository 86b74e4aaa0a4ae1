//! How the CLI prints jobs and status: one JSON document with `--json`, aligned text otherwise.
use serde_json::{json, Map, Value};

use crate::proto::{Failure, Job, Status};

pub fn print_json(v: &Value) {
    match serde_json::to_string_pretty(v) {
        Ok(s) => println!("{s}"),
        Err(e) => eprintln!("telha: cannot render JSON: {e}"),
    }
}

fn failure_json(f: &Failure) -> Value {
    let mut m = Map::new();
    m.insert("attempt".into(), json!(f.attempt));
    m.insert("kind".into(), json!(f.kind));
    m.insert("permanent".into(), json!(f.permanent));
    m.insert("reason".into(), json!(f.reason));
    m.insert("at".into(), json!(f.at));
    m.insert("worker_id".into(), json!(f.worker_id));
    if let Some(c) = f.exit_code {
        m.insert("exit_code".into(), json!(c));
    }
    if let Some(s) = f.signal {
        m.insert("signal".into(), json!(s));
    }
    if !f.stderr_tail.is_empty() {
        m.insert("stderr_tail".into(), json!(f.stderr_tail));
    }
    if f.peak_rss_bytes > 0 {
        m.insert("peak_rss_bytes".into(), json!(f.peak_rss_bytes));
    }
    if f.retry_after_ms > 0 {
        m.insert("retry_after_ms".into(), json!(f.retry_after_ms));
    }
    Value::Object(m)
}

/// A job in the JSON shape of DESIGN.md §7.
pub fn job_json(j: &Job) -> Value {
    let options: Value = serde_json::from_str(&j.options_json).unwrap_or_else(|_| json!({}));
    let mut v = json!({
        "id": j.id,
        "name": j.name,
        "tenant": j.tenant_id,
        "organization": j.organization_id,
        "format": j.format,
        "state": j.state,
        "attempts": j.attempts,
        "failures": j.failures.iter().map(failure_json).collect::<Vec<_>>(),
        "options": options,
        "created_at": j.created_at,
        "updated_at": j.updated_at,
        "submission_hash": j.submission_hash,
        "node_count": j.node_count,
        "parents": j.parents,
        "children": j.children,
        "unchanged": j.unchanged,
    });
    if !j.url.is_empty() {
        v["url"] = json!(j.url);
    } else {
        v["content"] = json!({ "blake3": j.content_blake3, "size": j.content_size });
    }
    if j.next_attempt_at > 0 {
        v["next_attempt_at"] = json!(j.next_attempt_at);
    }
    if !j.worker_id.is_empty() {
        v["lease"] = json!({ "worker_id": j.worker_id, "attempt": j.lease_attempt, "deadline": j.lease_deadline });
    }
    v
}

pub fn jobs_table(jobs: &[Job]) {
    println!("{:>8}  {:<10}  {:<10}  {:<12}  {:>3}  NAME", "ID", "STATE", "FORMAT", "TENANT", "ATT");
    for j in jobs {
        println!("{:>8}  {:<10}  {:<10}  {:<12}  {:>3}  {}", j.id, j.state, j.format, j.tenant_id, j.attempts, j.name);
    }
}

pub fn job_text(j: &Job) {
    println!("job {}  {}", j.id, j.state);
    println!("  name:      {}", j.name);
    println!("  tenant:    {}", j.tenant_id);
    println!("  format:    {}", j.format);
    println!("  attempts:  {}", j.attempts);
    if !j.worker_id.is_empty() {
        println!("  lease:     {} by {} until {}", j.lease_attempt, j.worker_id, j.lease_deadline);
    }
    if !j.submission_hash.is_empty() {
        println!("  nodes:     {}", j.node_count);
        println!("  hash:      {}", j.submission_hash);
    }
    for f in &j.failures {
        println!("  failure:   lease {} {}{}: {}", f.attempt, f.kind, if f.permanent { " (permanent)" } else { "" }, f.reason);
    }
}

/// Formats with queued jobs that no open poller declares: they wait for a worker that
/// may never come. (format, queued count)
pub fn unserved(s: &Status) -> Vec<(String, u64)> {
    s.queue
        .iter()
        .filter(|d| d.state == "queued" && d.count > 0 && !s.pollers.iter().any(|p| p.formats.contains(&d.format)))
        .map(|d| (d.format.clone(), d.count))
        .collect()
}

pub fn status_json(s: &Status) -> Value {
    let mut queue: Map<String, Value> = Map::new();
    for d in &s.queue {
        let entry = queue.entry(d.format.clone()).or_insert_with(|| json!({}));
        entry[&d.state] = json!(d.count);
    }
    json!({
        "queue": queue,
        "known_formats": s.known_formats,
        "unserved": unserved(s).into_iter().map(|(f, n)| json!({"format": f, "queued": n})).collect::<Vec<_>>(),
        "pollers": s.pollers.iter().map(|p| json!({"worker_id": p.worker_id, "formats": p.formats, "in_flight": p.in_flight})).collect::<Vec<_>>(),
        "pools": s.pools.iter().map(|p| json!({
            "name": p.name,
            "formats": p.formats,
            "desired": p.desired,
            "live": p.live,
            "degraded": p.degraded,
            "restarts": p.restarts,
            "last_error": p.last_error,
            "workers": p.workers.iter().map(|w| json!({
                "worker_id": w.worker_id,
                "pid": w.pid,
                "state": w.state,
                "job": if w.job_id.is_empty() { Value::Null } else { json!(w.job_id) },
                "restarts": w.restarts,
                "jobs_done": w.jobs_done,
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

pub fn status_text(s: &Status) {
    for p in &s.pools {
        println!(
            "pool {:<12} {:<28} {}/{} live  restarts {}{}",
            p.name,
            p.formats.join(","),
            p.live,
            p.desired,
            p.restarts,
            if p.degraded { "  DEGRADED" } else { "" }
        );
        if p.degraded && !p.last_error.is_empty() {
            println!("  last error: {}", p.last_error);
        }
        for w in &p.workers {
            let job = if w.job_id.is_empty() { String::new() } else { format!("job {}", w.job_id) };
            println!("  {:<24} pid {:<8} {:<9} {:<12} restarts {}", w.worker_id, w.pid, w.state, job, w.restarts);
        }
    }
    if !s.pools.is_empty() {
        println!();
    }
    println!("{:<14}  {:<10}  {:>8}", "FORMAT", "STATE", "JOBS");
    for d in &s.queue {
        println!("{:<14}  {:<10}  {:>8}", d.format, d.state, d.count);
    }
    for (format, n) in unserved(s) {
        println!("unserved: {format} has {n} queued job(s) and no worker polls for it");
    }
    println!();
    println!("{} worker(s) polling", s.pollers.len());
    for p in &s.pollers {
        println!("  {:<24}  {:<30}  in flight {}", p.worker_id, p.formats.join(","), p.in_flight);
    }
}
