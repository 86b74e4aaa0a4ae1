//! Operations: the HTTP endpoint beside gRPC (`[server].http_listen`) with Prometheus
//! metrics, health and readiness, and a read-only status page.
//!
//! It only observes. Counters come from the core's event broadcast ([`observer`]),
//! gauges are read at scrape time from the store (on the blocking pool), the
//! supervisor's status snapshot (what `telha status` shows) and /proc.
//!
//! - [`metrics`]: the registry and its label policy.
//! - [`observer`]: events → counters, histograms and the page's recent history.
//! - [`http`]: routes, who may see what, the scrape.
//! - [`status`]: the HTML pages.
//! - [`systemd`]: `sd_notify` READY/STOPPING.
pub mod http;
pub mod metrics;
pub mod observer;
pub mod status;
pub mod systemd;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::actors::supervisor::Supervisor;
use crate::actors::Core;

/// How long a walk of the blob folder is reused: 100 times what it took, at most 30 s,
/// so that a small store is exact and a large one costs a scrape at most 1 % of its time.
const BLOB_WALK_MAX_TTL: Duration = Duration::from_secs(30);

/// Everything the endpoint reads. Shared by the routes.
pub struct Ops {
    pub core: Core,
    pub supervisor: Supervisor,
    pub metrics: Arc<metrics::Metrics>,
    /// A std Mutex: held for a few field updates by the observer or a copy by a page,
    /// never across an await.
    pub recent: Arc<Mutex<observer::Recent>>,
    token: String,
    /// Set when the shutdown began: `/readyz` answers 503 from then on.
    pub draining: AtomicBool,
    /// A tokio Mutex: held across the scrape's awaits so two scrapes do not interleave
    /// setting and encoding the gauges.
    scrape: tokio::sync::Mutex<()>,
    blob_bytes: Arc<BlobBytes>,
}

/// Bytes of blobs on disk, from a walk reused for a while (see [`BLOB_WALK_MAX_TTL`]).
#[derive(Default)]
pub struct BlobBytes(Mutex<Option<(Instant, Duration, u64)>>);

impl BlobBytes {
    /// Blocking: walks `dir` when the last walk is too old.
    pub fn get(&self, dir: &Path) -> u64 {
        let mut g = match self.0.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        if let Some((at, ttl, n)) = *g {
            if at.elapsed() < ttl {
                return n;
            }
        }
        let started = Instant::now();
        let n = dir_bytes(dir);
        *g = Some((Instant::now(), (started.elapsed() * 100).min(BLOB_WALK_MAX_TTL), n));
        n
    }
}

fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_bytes(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map_or(0, |m| m.len()),
            _ => 0,
        })
        .sum()
}

/// What the observer feeds, before the endpoint exists.
pub struct Observed {
    metrics: Arc<metrics::Metrics>,
    recent: Arc<Mutex<observer::Recent>>,
    task: tokio::task::JoinHandle<()>,
}

impl Observed {
    /// Starts observing `core`'s events and the store's commits. Call before the pools
    /// start, so that no worker exit goes unseen.
    pub fn start(core: &Core) -> Self {
        let metrics = Arc::new(metrics::Metrics::new());
        let recent = Arc::new(Mutex::new(observer::Recent::default()));
        let m = metrics.clone();
        core.store.observe_commits(Box::new(move |changes, took| {
            m.commit_batch.observe(changes as f64);
            m.commit_seconds.observe(took.as_secs_f64());
        }));
        let task = tokio::spawn(observer::Observer::new(metrics.clone(), recent.clone()).run(core.events.subscribe()));
        Self { metrics, recent, task }
    }

    /// Stops the observer (the core is stopping).
    pub fn stop(&self) {
        self.task.abort();
    }
}

impl Ops {
    pub fn new(core: Core, supervisor: Supervisor, token: String, observed: &Observed) -> Arc<Self> {
        let (metrics, recent) = (observed.metrics.clone(), observed.recent.clone());
        Arc::new(Self { core, supervisor, metrics, recent, token, draining: AtomicBool::new(false), scrape: tokio::sync::Mutex::new(()), blob_bytes: Arc::new(BlobBytes::default()) })
    }

    /// Serves the routes on `listener` until `stop` resolves; then gives open
    /// connections a moment and returns.
    pub async fn serve(self: Arc<Self>, listener: tokio::net::TcpListener, stop: impl std::future::Future<Output = ()> + Send + 'static) {
        let app = http::router(self).into_make_service_with_connect_info::<SocketAddr>();
        let (closing_tx, closing_rx) = tokio::sync::oneshot::channel::<()>();
        let server = axum::serve(listener, app).with_graceful_shutdown(async move {
            stop.await;
            let _ = closing_tx.send(());
        });
        // A scraper's keep-alive connection must not hold the shutdown up.
        let cap = async move {
            let _ = closing_rx.await;
            tokio::time::sleep(Duration::from_secs(2)).await;
        };
        tokio::select! {
            r = server => if let Err(e) = r { tracing::error!(error = %e, "operations endpoint failed") },
            () = cap => tracing::debug!("operations endpoint: closing connections still open"),
        }
    }
}
