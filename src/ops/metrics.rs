//! The Prometheus metrics: one registry per server (no global recorder, so two servers in
//! one process never mix), counters and histograms fed by [`super::observer`], gauges
//! read at scrape time.
//!
//! Labels are `format`, `kind`, `state` and `pool` only. Each has a small set of values
//! fixed by the config or the code: formats are the built-in ones and those the pools
//! declare (a job of another format is refused at submission), kinds are the failure
//! taxonomy (an unknown one is counted as `other`), states are the job state machine's,
//! pools are `[pools.NAME]`. No label carries a job id, a tenant, a name or anything read
//! from a document: those grow without bound (each value is a new series kept forever by
//! the scraper) and would put tenants' data into a system with its own access rules.
use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::{Registry, Unit};

use crate::failure::FailureKind;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FormatLabel {
    pub format: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FailedLabels {
    pub format: String,
    pub kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct JobsLabels {
    pub format: String,
    pub state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PoolLabel {
    pub pool: String,
}

type Seconds = Family<FormatLabel, Histogram, fn() -> Histogram>;

fn latency() -> Histogram {
    // 1 ms .. ~9 h in factors of 4.
    Histogram::new(exponential_buckets(0.001, 4.0, 13))
}

/// A failure kind as a label value: one of the taxonomy's, else `other`.
pub fn kind_label(kind: &str) -> String {
    FailureKind::parse(kind).map_or("other", FailureKind::as_str).to_string()
}

pub struct Metrics {
    registry: Registry,
    pub enqueued: Family<FormatLabel, Counter>,
    pub succeeded: Family<FormatLabel, Counter>,
    pub failed: Family<FailedLabels, Counter>,
    pub dead: Family<FormatLabel, Counter>,
    pub queue_wait: Seconds,
    pub run_time: Seconds,
    pub submissions: Family<FormatLabel, Counter>,
    pub partials: Family<FormatLabel, Counter>,
    pub submission_bytes: Family<FormatLabel, Counter>,
    pub nodes_applied: Family<FormatLabel, Counter>,
    pub commit_batch: Histogram,
    pub commit_seconds: Histogram,
    pub events_lagged: Counter,
    // Gauges, set at each scrape.
    pub jobs: Family<JobsLabels, Gauge>,
    pub pool_desired: Family<PoolLabel, Gauge>,
    pub pool_live: Family<PoolLabel, Gauge>,
    pub pool_degraded: Family<PoolLabel, Gauge>,
    pub pool_restarts: Family<PoolLabel, Counter>,
    pub pool_rss: Family<PoolLabel, Gauge>,
    pub pool_cpu: Family<PoolLabel, Gauge<f64, AtomicU64>>,
    pub blob_bytes: Gauge,
    /// The restart totals last seen per pool: the counter moves by the difference (a
    /// pool actor restarted by a reload starts again from zero).
    restarts_seen: Mutex<HashMap<String, u32>>,
}

impl Metrics {
    pub fn new() -> Self {
        let mut m = Self {
            registry: Registry::with_prefix("telha"),
            enqueued: Family::default(),
            succeeded: Family::default(),
            failed: Family::default(),
            dead: Family::default(),
            queue_wait: Family::new_with_constructor(latency),
            run_time: Family::new_with_constructor(latency),
            submissions: Family::default(),
            partials: Family::default(),
            submission_bytes: Family::default(),
            nodes_applied: Family::default(),
            commit_batch: Histogram::new(exponential_buckets(1.0, 2.0, 12)),
            commit_seconds: Histogram::new(exponential_buckets(0.0001, 2.0, 16)),
            events_lagged: Counter::default(),
            jobs: Family::default(),
            pool_desired: Family::default(),
            pool_live: Family::default(),
            pool_degraded: Family::default(),
            pool_restarts: Family::default(),
            pool_rss: Family::default(),
            pool_cpu: Family::default(),
            blob_bytes: Gauge::default(),
            restarts_seen: Mutex::new(HashMap::new()),
        };
        let r = &mut m.registry;
        r.register("jobs_enqueued", "Jobs created (by clients and as child jobs)", m.enqueued.clone());
        r.register("jobs_succeeded", "Jobs whose final submission committed", m.succeeded.clone());
        r.register("jobs_failed", "Failed attempts, by failure kind", m.failed.clone());
        r.register("jobs_dead", "Jobs dead-lettered (permanent failure or attempts exhausted)", m.dead.clone());
        r.register_with_unit("job_queue_wait", "From a job's creation to its first lease", Unit::Seconds, m.queue_wait.clone());
        r.register_with_unit("job_run", "From a lease to its end (success or failure)", Unit::Seconds, m.run_time.clone());
        r.register("submissions", "Submissions accepted (partial and final)", m.submissions.clone());
        r.register("partials", "Partial submissions accepted", m.partials.clone());
        r.register_with_unit("submission", "Bytes of result_json accepted", Unit::Bytes, m.submission_bytes.clone());
        r.register("nodes_applied", "Nodes applied by accepted submissions", m.nodes_applied.clone());
        r.register("store_commit_batch_changes", "State changes per durable store commit", m.commit_batch.clone());
        r.register_with_unit("store_commit", "Time of one durable store commit (apply and fsync)", Unit::Seconds, m.commit_seconds.clone());
        r.register("observer_events_lagged", "Core events the metrics observer missed (it fell behind)", m.events_lagged.clone());
        r.register("jobs", "Jobs by state and format, now", m.jobs.clone());
        r.register("pool_workers_desired", "Worker processes a pool should have", m.pool_desired.clone());
        r.register("pool_workers_live", "Worker processes a pool has running", m.pool_live.clone());
        r.register("pool_degraded", "1 when a pool is crash-looping and backing off", m.pool_degraded.clone());
        r.register("pool_restarts", "Unexpected worker exits (or failed starts) of a pool", m.pool_restarts.clone());
        r.register_with_unit("pool_worker_rss", "Resident size of a pool's live worker process groups, summed", Unit::Bytes, m.pool_rss.clone());
        r.register_with_unit("pool_worker_cpu", "CPU time of a pool's live worker processes, summed", Unit::Seconds, m.pool_cpu.clone());
        r.register_with_unit("blob_store", "Bytes of stored contents: blob files on disk and small contents kept in the database", Unit::Bytes, m.blob_bytes.clone());
        m
    }

    /// Moves a pool's restart counter to the status's total.
    pub fn set_restarts(&self, pool: &str, total: u32) {
        let mut seen = match self.restarts_seen.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let last = seen.insert(pool.to_string(), total).unwrap_or(0);
        let delta = if total >= last { total - last } else { total };
        self.pool_restarts.get_or_create(&PoolLabel { pool: pool.to_string() }).inc_by(u64::from(delta));
    }

    /// The OpenMetrics text exposition of everything registered.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}
