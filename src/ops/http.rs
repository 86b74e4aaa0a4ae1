//! The HTTP side of operations: routes, the access rule, and the scrape.
//!
//! `/healthz`, `/readyz` and `/metrics` answer anyone who can reach the port (they carry
//! no document data: see [`super::metrics`] on labels). The status pages (`/`,
//! `/jobs/<id>`) answer a loopback peer, or any peer with the server's token; document
//! contents (canonical text, stderr tails, failure reasons) only with the token.
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use subtle::ConstantTimeEq;

use super::{status, Ops};
use crate::actors::pool::WorkerState;
use crate::store::jobs;
use crate::store::state::JobState;

const TOKEN_COOKIE: &str = "telha_token";

pub fn router(ops: Arc<Ops>) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/", get(index))
        .route("/jobs/{id}", get(job))
        .fallback(|| async { (StatusCode::NOT_FOUND, "not found\n") })
        .with_state(ops)
}

/// What a request may see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Neither loopback nor the token: nothing but the health and metrics endpoints.
    Denied,
    /// A loopback peer without the token: figures, no document contents.
    Overview,
    /// The token: everything the pages show.
    Full,
}

#[derive(serde::Deserialize, Default)]
pub struct TokenQuery {
    token: Option<String>,
}

fn access(ops: &Ops, peer: SocketAddr, headers: &HeaderMap, query: Option<&str>) -> Access {
    let bearer = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
    let cookie = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|c| c.trim().strip_prefix(TOKEN_COOKIE).and_then(|r| r.strip_prefix('=')));
    let offered = [bearer, cookie, query];
    let good = offered.iter().flatten().any(|t| bool::from(t.trim().as_bytes().ct_eq(ops.token.as_bytes())));
    if good {
        Access::Full
    } else if peer.ip().to_canonical().is_loopback() {
        Access::Overview
    } else {
        Access::Denied
    }
}

async fn healthz() -> &'static str {
    "ok\n"
}

/// 200 when the store is open, the server is not draining and every pool has its
/// desired number of workers polling; else 503 with the reasons, one a line.
async fn readyz(State(ops): State<Arc<Ops>>) -> Response {
    let mut reasons = Vec::new();
    if ops.draining.load(std::sync::atomic::Ordering::Relaxed) {
        reasons.push("draining: shutting down".to_string());
    }
    let store = ops.core.store.clone();
    match tokio::task::spawn_blocking(move || store.read().map(drop)).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => reasons.push(format!("store: {e}")),
        Err(e) => reasons.push(format!("store: {e}")),
    }
    for p in ops.supervisor.status().await {
        let ready = p.workers.iter().filter(|w| matches!(w.state, WorkerState::Idle | WorkerState::Busy)).count();
        if ready < p.desired as usize {
            let why = if p.degraded { format!(" (degraded: {})", p.last_error) } else { String::new() };
            reasons.push(format!("pool {}: {ready} of {} workers ready{why}", p.name, p.desired));
        }
    }
    if reasons.is_empty() {
        (StatusCode::OK, "ready\n").into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, reasons.join("\n") + "\n").into_response()
    }
}

async fn metrics(State(ops): State<Arc<Ops>>) -> Response {
    // One scrape at a time: gauges are set, then encoded.
    let _one = ops.scrape.lock().await;
    refresh_gauges(&ops).await;
    let body = ops.metrics.encode();
    ([(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")], body).into_response()
}

/// Reads the gauges' sources: job counts and inline content bytes from the store and blob
/// file bytes from disk (both on the blocking pool), pools from the supervisor's snapshot,
/// worker RSS and CPU from /proc.
async fn refresh_gauges(ops: &Ops) {
    let store = ops.core.store.clone();
    let config = ops.core.config();
    let known = config.known_formats();
    let blobs_dir = config.server.data_dir.join("blobs");
    let blob_cache = ops.blob_bytes.clone();
    let read = tokio::task::spawn_blocking(move || {
        let (depths, inline) = match store.read() {
            Ok(t) => (jobs::depths(&t), jobs::inline_bytes(&t).unwrap_or(0)),
            Err(e) => (Err(e), 0),
        };
        (depths, blob_cache.get(&blobs_dir) + inline)
    });
    let pools = ops.supervisor.status().await;
    let pids: Vec<(String, Vec<u32>)> = pools.iter().map(|p| (p.name.clone(), p.workers.iter().map(|w| w.pid).filter(|p| *p != 0).collect())).collect();
    let procs = tokio::task::spawn_blocking(move || {
        pids.into_iter()
            .map(|(pool, pids)| {
                let rss: u64 = pids.iter().map(|p| crate::supervise::procfs::group_rss_bytes(*p)).sum();
                let cpu: f64 = pids.iter().filter_map(|p| crate::supervise::procfs::cpu_secs(*p)).sum();
                (pool, rss, cpu)
            })
            .collect::<Vec<_>>()
    });
    let m = &ops.metrics;
    if let Ok((depths, blob_bytes)) = read.await {
        match depths {
            Ok(depths) => {
                // Every known format and state is present, at 0 when empty: a series that
                // vanishes reads as "unknown" to the scraper, not as zero.
                let formats = known.iter().cloned().chain(depths.iter().map(|(f, _, _)| f.clone())).collect::<std::collections::BTreeSet<_>>();
                for format in formats {
                    for state in JobState::ALL {
                        let n = depths.iter().find(|(f, s, _)| *f == format && *s == state).map_or(0, |d| d.2);
                        m.jobs.get_or_create(&super::metrics::JobsLabels { format: format.clone(), state: state.as_str().into() }).set(i64::try_from(n).unwrap_or(i64::MAX));
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "metrics: cannot read job counts"),
        }
        m.blob_bytes.set(i64::try_from(blob_bytes).unwrap_or(i64::MAX));
    }
    for p in &pools {
        let l = super::metrics::PoolLabel { pool: p.name.clone() };
        m.pool_desired.get_or_create(&l).set(i64::from(p.desired));
        m.pool_live.get_or_create(&l).set(i64::from(p.live));
        m.pool_degraded.get_or_create(&l).set(i64::from(p.degraded));
        m.set_restarts(&p.name, p.restarts);
    }
    if let Ok(procs) = procs.await {
        for (pool, rss, cpu) in procs {
            let l = super::metrics::PoolLabel { pool };
            m.pool_rss.get_or_create(&l).set(i64::try_from(rss).unwrap_or(i64::MAX));
            m.pool_cpu.get_or_create(&l).set(cpu);
        }
    }
}

fn html(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "text/html; charset=utf-8"), (header::CACHE_CONTROL, "no-store")], body).into_response()
}

/// The answer to a peer without access, or the cookie that `?token=` asks for.
// The refusal is the response itself, built once per refused request: not worth a box.
#[allow(clippy::result_large_err)]
fn gate(ops: &Ops, peer: SocketAddr, headers: &HeaderMap, q: &TokenQuery) -> Result<(Access, Option<String>), Response> {
    let a = access(ops, peer, headers, q.token.as_deref());
    if a == Access::Denied {
        return Err(html(StatusCode::UNAUTHORIZED, status::denied()));
    }
    // A good `?token=` becomes a cookie, so links on the page need not carry it.
    let cookie = (a == Access::Full && q.token.is_some()).then(|| format!("{TOKEN_COOKIE}={}; Path=/; HttpOnly; SameSite=Strict", ops.token));
    Ok((a, cookie))
}

fn with_cookie(mut r: Response, cookie: Option<String>) -> Response {
    if let Some(c) = cookie.and_then(|c| c.parse().ok()) {
        r.headers_mut().insert(header::SET_COOKIE, c);
    }
    r
}

async fn index(State(ops): State<Arc<Ops>>, ConnectInfo(peer): ConnectInfo<SocketAddr>, headers: HeaderMap, Query(q): Query<TokenQuery>) -> Response {
    let (a, cookie) = match gate(&ops, peer, &headers, &q) {
        Ok(v) => v,
        Err(r) => return r,
    };
    let page = status::overview(&ops, a).await;
    with_cookie(html(StatusCode::OK, page), cookie)
}

async fn job(State(ops): State<Arc<Ops>>, ConnectInfo(peer): ConnectInfo<SocketAddr>, headers: HeaderMap, Path(id): Path<String>, Query(q): Query<TokenQuery>) -> Response {
    let (a, cookie) = match gate(&ops, peer, &headers, &q) {
        Ok(v) => v,
        Err(r) => return r,
    };
    let Ok(id) = id.parse::<u64>() else {
        return html(StatusCode::NOT_FOUND, status::not_found(&id));
    };
    let r = match status::job_page(&ops, id, a).await {
        Some(page) => html(StatusCode::OK, page),
        None => html(StatusCode::NOT_FOUND, status::not_found(&id.to_string())),
    };
    with_cookie(r, cookie)
}
