//! `telha run`: the embedded one-shot mode. Starts the core and its pools in this
//! process (on a free loopback port, so it never collides with a running server),
//! ingests the inputs, waits until every job — child jobs too — is finished, prints
//! a summary per format and stops cleanly. Exits non-zero when any job ended dead.
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};
use serde_json::json;

use super::client::{load_config, options_json, plan_inputs, status_err, submit_all, Client};
use super::{render, Global, RunArgs};
use crate::proto::*;

pub async fn run(g: &Global, args: RunArgs) -> Result<ExitCode> {
    let mut config = load_config(g)?;
    config.server.listen = "127.0.0.1:0".into();
    // A one-shot needs no operations endpoint (and must not contend for a running server's).
    config.server.http_listen = Some(String::new());
    let plan = plan_inputs(g, &args.inputs, args.format.as_ref())?;
    if plan.is_empty() {
        bail!("nothing to ingest in {}", args.inputs.join(" "));
    }
    let served: Vec<&String> = config.pools.values().flat_map(|p| p.formats.iter()).collect();
    if let Some((name, format, _)) = plan.iter().find(|(_, f, _)| !served.contains(&f)) {
        bail!("{name}: no pool in the config serves format {format:?}; add a [pools.NAME] with it (pools serve: {})", served.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", "));
    }
    let options = options_json(&args.options)?;
    let token_path = config.server.token_path();
    let tls_ca = if config.server.tls() { config.server.tls_ca.clone().or_else(|| g.ca.clone()) } else { None };

    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (bound_tx, bound_rx) = tokio::sync::oneshot::channel();
    let server = tokio::spawn(crate::server::serve(
        config,
        async move {
            let _ = stop_rx.await;
        },
        move |b| {
            let _ = bound_tx.send(b.addr);
        },
    ));
    let addr = match bound_rx.await {
        Ok(a) => a,
        Err(_) => {
            return match server.await {
                Ok(Err(e)) => Err(anyhow!("cannot start the core: {e}")),
                _ => Err(anyhow!("the core stopped while starting")),
            };
        }
    };
    let token = std::fs::read_to_string(&token_path).map_err(|e| anyhow!("{}: {e}", token_path.display()))?;
    // Under TLS the embedded client dials `localhost`, the name the certificate carries for
    // the supervised workers too.
    let (target, ca) = match &tls_ca {
        Some(ca) => (format!("localhost:{}", addr.port()), Some(std::fs::read(ca).map_err(|e| anyhow!("{}: {e}", ca.display()))?)),
        None => (addr.to_string(), None),
    };
    let mut client = Client::at_with(&target, token.trim(), ca).await?;

    let started = Instant::now();
    let items = plan
        .into_iter()
        .map(|(name, format, path)| {
            let header = SubmitHeader {
                tenant_id: args.tenant.clone(),
                organization_id: String::new(),
                url: if path.is_none() { name.clone() } else { String::new() },
                format,
                name,
                options_json: options.clone(),
                idempotency_key: String::new(),
            };
            (header, path)
        })
        .collect();
    let submitted = submit_all(&client, items).await;
    if let Some(e) = submitted.error {
        let _ = stop_tx.send(());
        let _ = server.await;
        return Err(e);
    }
    let first_id = submitted.jobs.iter().filter_map(|j| j.id.parse::<u64>().ok()).min().unwrap_or(u64::MAX);
    wait_until_idle(&mut client, first_id).await?;
    let jobs = jobs_since(&mut client, first_id).await?;
    let elapsed = started.elapsed();
    let _ = stop_tx.send(());
    match server.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::error!(error = %e, "the core did not stop cleanly"),
        Err(e) => tracing::error!(error = %e, "the core task failed"),
    }
    let dead = jobs.iter().filter(|j| j.state == "dead").count();
    print_summary(&jobs, elapsed, g.json);
    Ok(if dead > 0 { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// Waits until no job of this run (or a child of one) is queued, leased or retrying.
///
/// Every 100 ms it reads the server's job counts (GetStatus: a few rows, whatever the
/// number of jobs): no open job at all means done. Only every [`EXACT_EVERY`] does it list
/// this run's jobs, and then only from the lowest one still open (a finished job stays
/// finished): that tells its jobs from open ones of an earlier run in the same data dir,
/// and finds jobs waiting for a format nothing serves. Watching an archive's 10,000 child
/// jobs this way costs the core almost nothing (listing them all every 100 ms cost it a
/// good part of a core).
async fn wait_until_idle(client: &mut Client, first_id: u64) -> Result<()> {
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = indicatif::ProgressBar::new(0);
        b.set_style(indicatif::ProgressStyle::with_template("{spinner} {bar:40} {pos}/{len} jobs  {msg}").unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()));
        b
    });
    let open_state = |s: &str| matches!(s, "queued" | "leased" | "retrying");
    let mut unserved_since: Option<Instant> = None;
    let mut known: BTreeMap<u64, Job> = BTreeMap::new();
    let mut from = first_id;
    let mut finished_before: Option<u64> = None;
    let mut last_exact: Option<Instant> = None;
    loop {
        let status = client.ingest.get_status(GetStatusRequest {}).await.map_err(status_err)?.into_inner();
        let count = |open: bool| status.queue.iter().filter(|d| open_state(&d.state) == open).map(|d| d.count).sum::<u64>();
        let (open_now, finished_now) = (count(true), count(false));
        let before = *finished_before.get_or_insert(finished_now);
        let leased: u64 = status.queue.iter().filter(|d| d.state == "leased").map(|d| d.count).sum();
        if let Some(b) = &bar {
            b.set_length(open_now + finished_now - before);
            b.set_position(finished_now - before);
            b.set_message(format!("{leased} in flight"));
        }
        // Jobs in flight mean progress: the run's jobs are listed only when nothing is (its
        // jobs may be done while an earlier run's wait, or wait for a format nobody
        // serves), and now and then while they are. Listing thousands of jobs every
        // second cost the core a tenth of its CPU on a large archive.
        let every = if leased == 0 { EXACT_EVERY } else { EXACT_EVERY_BUSY };
        let idle = open_now == 0 || {
            if last_exact.is_some_and(|t| t.elapsed() < every) {
                false
            } else {
                last_exact = Some(Instant::now());
                for job in jobs_since(client, from).await? {
                    if let Ok(id) = job.id.parse::<u64>() {
                        known.insert(id, job);
                    }
                }
                let open: Vec<&Job> = known.range(from..).map(|(_, j)| j).filter(|j| open_state(&j.state)).collect();
                from = open.first().and_then(|j| j.id.parse().ok()).unwrap_or_else(|| known.keys().next_back().map_or(from, |k| k + 1));
                // Jobs (children, say) of a format nothing serves would wait forever: say so.
                let served: Vec<&String> = status.pollers.iter().flat_map(|p| p.formats.iter()).chain(status.pools.iter().flat_map(|p| p.formats.iter())).collect();
                let stuck: Vec<&&Job> = open.iter().filter(|j| j.state == "queued" && !served.contains(&&j.format)).collect();
                if !open.is_empty() && stuck.len() == open.len() {
                    let since = *unserved_since.get_or_insert_with(Instant::now);
                    if since.elapsed() > Duration::from_secs(3) {
                        let formats: Vec<&str> = stuck.iter().map(|j| j.format.as_str()).collect();
                        bail!("{} job(s) wait for formats no pool serves: {}", stuck.len(), formats.join(", "));
                    }
                } else {
                    unserved_since = None;
                }
                open.is_empty()
            }
        };
        if idle {
            if let Some(b) = bar {
                b.finish_and_clear();
            }
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// How often `wait_until_idle` lists the run's open jobs instead of reading counts, when
/// no job is leased.
const EXACT_EVERY: Duration = Duration::from_secs(1);
/// The same while some job is leased (the run is making progress).
const EXACT_EVERY_BUSY: Duration = Duration::from_secs(10);

async fn jobs_since(client: &mut Client, first_id: u64) -> Result<Vec<Job>> {
    client.list_jobs_all(ListJobsRequest { page_token: first_id.saturating_sub(1).to_string(), ..Default::default() }, usize::MAX).await
}

#[derive(Default)]
struct Row {
    jobs: u64,
    succeeded: u64,
    dead: u64,
    other: u64,
    nodes: u64,
    first: i64,
    last: i64,
}

fn print_summary(jobs: &[Job], elapsed: Duration, as_json: bool) {
    let mut rows: BTreeMap<String, Row> = BTreeMap::new();
    for j in jobs {
        let r = rows.entry(j.format.clone()).or_default();
        r.jobs += 1;
        match j.state.as_str() {
            "succeeded" => r.succeeded += 1,
            "dead" => r.dead += 1,
            _ => r.other += 1,
        }
        r.nodes += u64::from(j.node_count);
        r.first = if r.first == 0 { j.created_at } else { r.first.min(j.created_at) };
        r.last = r.last.max(j.updated_at);
    }
    let secs = |r: &Row| (r.last - r.first).max(0) as f64 / 1e6;
    if as_json {
        let formats: serde_json::Map<String, serde_json::Value> = rows
            .iter()
            .map(|(f, r)| (f.clone(), json!({"jobs": r.jobs, "succeeded": r.succeeded, "dead": r.dead, "other": r.other, "nodes": r.nodes, "seconds": secs(r)})))
            .collect();
        render::print_json(&json!({
            "formats": formats,
            "seconds": elapsed.as_secs_f64(),
            "jobs": jobs.iter().map(render::job_json).collect::<Vec<_>>(),
        }));
        return;
    }
    println!("{:<12} {:>6} {:>10} {:>6} {:>8} {:>9}", "FORMAT", "JOBS", "SUCCEEDED", "DEAD", "NODES", "TIME");
    for (f, r) in &rows {
        println!("{:<12} {:>6} {:>10} {:>6} {:>8} {:>8.2}s", f, r.jobs, r.succeeded, r.dead, r.nodes, secs(r));
    }
    for j in jobs.iter().filter(|j| j.state == "dead") {
        let last = j.failures.last().map(|f| f.reason.as_str()).unwrap_or("");
        println!("dead: job {} {} — {}", j.id, j.name, last);
    }
    println!("{} job(s) in {:.2}s", jobs.len(), elapsed.as_secs_f64());
}
