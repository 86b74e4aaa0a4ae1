//! `supervisor.toml`: the operator's one file. Parsed strictly: an unknown key or a
//! bad value is refused at start-up with the dotted path of the key.
//!
//! A leaf: it owns every default (limits, caps, timings) and imports only the other
//! leaves ([`crate::failure`], [`crate::rules`]); the layers above read it.
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::failure::FailureKind;

/// The PATH a worker gets (its environment is cleared), and where a bare command name
/// is looked up.
pub const CLEAN_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Largest open-files limit when /proc/sys/fs/nr_open cannot be read (the kernel's default).
const DEFAULT_NR_OPEN: u64 = 1 << 20;

/// Formats the core accepts even when no pool declares them (workers may join from
/// other hosts). Pools add their own.
pub const BUILTIN_FORMATS: &[&str] = &[
    "code", "code-archive", "csv", "doc", "docling", "docx", "eml", "epub", "html", "ics", "image", "latex", "mbox", "md", "mhtml", "msg",
    "odp", "ods", "odt", "parquet", "pdf", "ppt", "pptx", "rtf", "text", "tsv", "txt", "web", "xls", "xlsb", "xlsx",
];

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("invalid config {path}: {key}: {message}")]
    Invalid { path: PathBuf, key: String, message: String },
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    server: ServerConfig,
    #[serde(default)]
    jobs: JobsConfig,
    #[serde(default)]
    store: StoreConfig,
    #[serde(default)]
    pools: BTreeMap<String, PoolConfig>,
    #[serde(default)]
    failures: FailuresConfig,
    #[serde(default)]
    graph: GraphConfig,
}

/// The whole, validated configuration. Relative paths are already resolved against
/// the config file's folder.
#[derive(Debug, Clone)]
pub struct Config {
    /// The file this came from (None for built-in defaults).
    pub path: Option<PathBuf>,
    pub server: ServerConfig,
    pub jobs: JobsConfig,
    pub store: StoreConfig,
    pub pools: BTreeMap<String, PoolConfig>,
    pub failures: FailuresConfig,
    pub graph: GraphConfig,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// gRPC address for clients and workers; port 0 picks a free port, written to
    /// `<data_dir>/serve.addr` once bound.
    pub listen: String,
    pub data_dir: PathBuf,
    /// Default `<data_dir>/token`.
    pub token_file: Option<PathBuf>,
    /// Largest content a client may submit.
    pub max_content_mb: u64,
    /// On SIGTERM/SIGINT: how long in-flight jobs may take to finish before their
    /// workers are stopped and the jobs go back to the queue (without costing an attempt).
    pub shutdown_grace_secs: f64,
    /// The operations endpoint (`/metrics`, `/healthz`, `/readyz`, status page); `""`
    /// turns it off. Absent means [`DEFAULT_HTTP_LISTEN`], and then a port already taken
    /// is a warning rather than an error (an explicit address must bind).
    pub http_listen: Option<String>,
    /// PEM certificate chain and key for gRPC over TLS; both or neither. The certificate
    /// names the hosts clients dial, and `localhost` for the supervised workers.
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    /// PEM CA certificate(s) that signed `tls_cert`: handed to the supervised workers as
    /// `TELHA_CA`, and the CLI's CA when it reads this config (`--ca` overrides).
    pub tls_ca: Option<PathBuf>,
    /// How `telha serve` writes its log: human-readable lines or one JSON object a line.
    pub log_format: LogFormat,
}

/// The operations endpoint's address when `[server].http_listen` is not set.
pub const DEFAULT_HTTP_LISTEN: &str = "127.0.0.1:9464";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:50051".into(),
            data_dir: PathBuf::from("./data"),
            token_file: None,
            max_content_mb: 1024,
            shutdown_grace_secs: 30.0,
            http_listen: None,
            tls_cert: None,
            tls_key: None,
            tls_ca: None,
            log_format: LogFormat::Text,
        }
    }
}

impl ServerConfig {
    pub fn token_path(&self) -> PathBuf {
        self.token_file.clone().unwrap_or_else(|| self.data_dir.join("token"))
    }
    pub fn addr_file(&self) -> PathBuf {
        self.data_dir.join("serve.addr")
    }
    /// Where the operations endpoint's bound address is written (tests use port 0).
    pub fn tls(&self) -> bool {
        self.tls_cert.is_some()
    }
    pub fn http_addr_file(&self) -> PathBuf {
        self.data_dir.join("http.addr")
    }
    /// The operations endpoint's address and whether it was set explicitly; `None` when off.
    pub fn http_listen(&self) -> Option<(&str, bool)> {
        match self.http_listen.as_deref() {
            None => Some((DEFAULT_HTTP_LISTEN, false)),
            Some("") => None,
            Some(a) => Some((a, true)),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct JobsConfig {
    pub max_attempts: u32,
    /// Seconds; fractions allowed.
    pub lease_secs: f64,
    pub backoff_base_ms: u64,
    pub backoff_max_ms: u64,
    /// How long a partial that arrived before its predecessor waits for it (workers
    /// pipeline two partials) before the missing one counts as a gap (`protocol`).
    /// The lease is kept alive meanwhile.
    pub partial_wait_secs: f64,
    /// The longest a worker's `retry_after_ms` hint (an HTTP Retry-After) can hold a
    /// retry back: a server asking for a day does not park the job for a day.
    pub retry_after_max_ms: u64,
}

impl Default for JobsConfig {
    fn default() -> Self {
        Self { max_attempts: 5, lease_secs: 180.0, backoff_base_ms: 1000, backoff_max_ms: 300_000, partial_wait_secs: 5.0, retry_after_max_ms: 3_600_000 }
    }
}

impl JobsConfig {
    pub fn lease(&self) -> Duration {
        Duration::from_secs_f64(self.lease_secs)
    }
    pub fn partial_wait(&self) -> Duration {
        Duration::from_secs_f64(self.partial_wait_secs)
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StoreConfig {
    /// Most state changes one durable commit may carry (group commit). 1 means one
    /// fsync per change, the baseline `bench/dispatch` compares against.
    pub max_batch: usize,
    /// redb's page cache in MiB (read cache and write buffer together): the bound on
    /// the store's share of the server's resident memory.
    pub cache_mb: usize,
    /// The store writer merges the reverse edges that jobs stage next to their other
    /// rows into the by-target index once this many are staged (0: after every
    /// commit). Larger: fewer bytes written per job, more seeks per GetNode.
    pub merge_rows: u64,
    /// Contents up to this many KiB (a client's or a child job's) are kept in the redb
    /// file and made durable by their job's own commit (group commit); larger ones are
    /// blob files, written and fsync'd each. 0: every content is a blob file.
    pub inline_kb: u64,
}

/// The most `[store].inline_kb` may be: an inline content is one redb value, and the
/// whole of it travels in the job's payload.
pub const MAX_INLINE_KB: u64 = 1024;

impl Default for StoreConfig {
    fn default() -> Self {
        Self { max_batch: 4096, cache_mb: DEFAULT_CACHE_BYTES >> 20, merge_rows: crate::store::edges::DEFAULT_MERGE_ROWS, inline_kb: 64 }
    }
}

impl StoreConfig {
    /// The largest content kept inline, in bytes (0: none).
    pub fn inline_bytes(&self) -> usize {
        usize::try_from(self.inline_kb.saturating_mul(1024)).unwrap_or(usize::MAX)
    }
}

/// `[graph]`: per-submission caps on what a worker may send (a submission over a cap
/// fails its attempt as `protocol`); the validator reads this type as is.
pub type GraphConfig = GraphCaps;

/// Per-submission limits, from `[graph]` in supervisor.toml.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GraphCaps {
    pub max_text_bytes: usize,
    pub max_spans: usize,
    pub max_nodes: usize,
    pub max_relationships: usize,
    pub max_child_jobs: usize,
    pub max_ambiguities: usize,
    /// Labels on one node. Bounds the work a node costs (its labels are compared as a set).
    pub max_labels_per_node: usize,
    /// Entries of one node's `spanRefs`. Bounds what one node costs to store and read back
    /// (each entry is kept, duplicates too).
    pub max_span_refs_per_node: usize,
}

impl Default for GraphCaps {
    fn default() -> Self {
        use crate::rules::*;
        Self {
            max_text_bytes: DEFAULT_MAX_TEXT_BYTES,
            max_spans: DEFAULT_MAX_SPANS,
            max_nodes: DEFAULT_MAX_NODES,
            max_relationships: DEFAULT_MAX_RELATIONSHIPS,
            max_child_jobs: DEFAULT_MAX_CHILD_JOBS,
            max_ambiguities: DEFAULT_MAX_AMBIGUITIES,
            max_labels_per_node: DEFAULT_MAX_LABELS_PER_NODE,
            max_span_refs_per_node: DEFAULT_MAX_SPAN_REFS_PER_NODE,
        }
    }
}

/// Largest `result_json` accepted in one submission (also the gRPC decoding limit).
pub const MAX_SUBMISSION_BYTES: usize = 64 * 1024 * 1024;

/// redb's page cache when `[store] cache_mb` is not set. 64 MiB: bench/tabular (1M rows
/// streamed in) runs as fast with 16 MiB as with 128 MiB, and the core's RSS follows the
/// cache (186 MiB peak at 16, 261 at 64, 341 at 128); reads of a hot working set want more.
pub const DEFAULT_CACHE_BYTES: usize = 64 << 20;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolConfig {
    pub formats: Vec<String>,
    #[serde(default = "default_workers")]
    pub workers: u32,
    pub command: Vec<String>,
    #[serde(default)]
    pub job_timeout_secs: Option<f64>,
    #[serde(default)]
    pub max_jobs_per_worker: Option<u64>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub limits: LimitsConfig,
    /// Restart intensity (as OTP's): more than `max_restarts` unexpected exits within
    /// `restart_window_secs` marks the pool degraded and backs off its restarts.
    #[serde(default = "default_max_restarts")]
    pub max_restarts: u32,
    #[serde(default = "default_restart_window")]
    pub restart_window_secs: f64,
    /// Between the SIGTERM of a stop (timeout, recycle, shrink) and the SIGKILL.
    #[serde(default = "default_kill_grace")]
    pub kill_grace_secs: f64,
    /// Jobs a worker of the pool may hold at once (`TELHA_MAX_IN_FLIGHT`): 1 runs one at
    /// a time; N > 1 lets a worker whose jobs are short hold the next jobs while up to
    /// N - 1 results are committed (the harness heartbeats every held job's lease).
    #[serde(default = "default_max_in_flight")]
    pub max_in_flight: u32,
}

/// What the Python harness accepts too (rules.json `max_worker_in_flight`): it runs one
/// job at a time, with at most this many minus one results on their way.
pub const MAX_POOL_IN_FLIGHT: u32 = crate::rules::MAX_WORKER_IN_FLIGHT as u32;

fn default_max_in_flight() -> u32 {
    1
}

fn default_workers() -> u32 {
    1
}
fn default_max_restarts() -> u32 {
    5
}
fn default_restart_window() -> f64 {
    30.0
}
fn default_kill_grace() -> f64 {
    5.0
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    pub memory_mb: Option<u64>,
    pub cpu_secs: Option<u64>,
    pub open_files: Option<u64>,
    pub rss_mb: Option<u64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FailuresConfig {
    /// Kinds that dead-letter at once; replaces the defaults of the taxonomy.
    pub permanent: Vec<String>,
}

impl Default for FailuresConfig {
    fn default() -> Self {
        Self {
            permanent: FailureKind::ALL
                .iter()
                .filter(|k| k.permanent_by_default())
                .map(|k| k.as_str().to_string())
                .collect(),
        }
    }
}

impl Config {
    /// Built-in defaults, as if from an empty file in the current folder.
    pub fn defaults() -> Self {
        Self::from_raw(None, Path::new("."), RawConfig::empty()).expect("defaults are valid")
    }

    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ConfigError::Read { path: path.to_path_buf(), source })?;
        Self::parse(&text, path)
    }

    /// Parses `text` as if read from `path` (relative paths resolve against its folder).
    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let invalid = |key: String, message: String| ConfigError::Invalid { path: path.to_path_buf(), key, message };
        let de = toml::Deserializer::parse(text).map_err(|e| invalid("(syntax)".into(), e.to_string()))?;
        let raw: RawConfig = serde_path_to_error::deserialize(de).map_err(|e| {
            let key = e.path().to_string();
            let message = e.into_inner().message().trim().to_string();
            invalid(if key == "." { "(top level)".into() } else { key }, message)
        })?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let base = if base.as_os_str().is_empty() { PathBuf::from(".") } else { base };
        Self::from_raw(Some(path.to_path_buf()), &base, raw)
    }

    fn from_raw(path: Option<PathBuf>, base: &Path, mut raw: RawConfig) -> Result<Self, ConfigError> {
        let shown = path.clone().unwrap_or_else(|| PathBuf::from("(defaults)"));
        let invalid = |key: &str, message: String| ConfigError::Invalid { path: shown.clone(), key: key.into(), message };
        let resolve = |p: &Path| if p.is_absolute() { p.to_path_buf() } else { base.join(p) };

        if raw.server.listen.parse::<std::net::SocketAddr>().is_err() && !raw.server.listen.starts_with("unix:") {
            return Err(invalid("server.listen", format!("{:?} is not host:port (e.g. 127.0.0.1:50051)", raw.server.listen)));
        }
        if let Some(a) = raw.server.http_listen.as_deref().filter(|a| !a.is_empty()) {
            if a.parse::<std::net::SocketAddr>().is_err() {
                return Err(invalid("server.http_listen", format!("{a:?} is not host:port (e.g. {DEFAULT_HTTP_LISTEN}), or \"\" for off")));
            }
        }
        match (&raw.server.tls_cert, &raw.server.tls_key) {
            (Some(_), None) => return Err(invalid("server.tls_key", "tls_cert is set: set tls_key too".into())),
            (None, Some(_)) => return Err(invalid("server.tls_cert", "tls_key is set: set tls_cert too".into())),
            _ => {}
        }
        if raw.server.tls_cert.is_some() && raw.server.tls_ca.is_none() && !raw.pools.is_empty() {
            return Err(invalid("server.tls_ca", "TLS is on and pools are configured: their workers need the CA that signed tls_cert".into()));
        }
        raw.server.tls_cert = raw.server.tls_cert.as_deref().map(resolve);
        raw.server.tls_key = raw.server.tls_key.as_deref().map(resolve);
        raw.server.tls_ca = raw.server.tls_ca.as_deref().map(resolve);
        raw.server.data_dir = resolve(&raw.server.data_dir);
        raw.server.token_file = raw.server.token_file.as_deref().map(resolve);
        if !(raw.server.shutdown_grace_secs.is_finite() && raw.server.shutdown_grace_secs >= 0.0) {
            return Err(invalid("server.shutdown_grace_secs", "must be zero or a positive number".into()));
        }
        if raw.server.max_content_mb == 0 {
            return Err(invalid("server.max_content_mb", "must be at least 1".into()));
        }
        let j = &raw.jobs;
        if j.max_attempts == 0 {
            return Err(invalid("jobs.max_attempts", "must be at least 1".into()));
        }
        if !(j.lease_secs.is_finite() && j.lease_secs >= 0.05 && j.lease_secs <= 86_400.0 * 7.0) {
            return Err(invalid("jobs.lease_secs", format!("{} is outside 0.05 ..= 604800", j.lease_secs)));
        }
        if !(j.partial_wait_secs.is_finite() && j.partial_wait_secs > 0.0 && j.partial_wait_secs <= 600.0) {
            return Err(invalid("jobs.partial_wait_secs", format!("{} is outside (0, 600]", j.partial_wait_secs)));
        }
        if j.backoff_base_ms == 0 || j.backoff_max_ms < j.backoff_base_ms {
            return Err(invalid("jobs.backoff_max_ms", "need 0 < backoff_base_ms <= backoff_max_ms".into()));
        }
        if raw.store.max_batch == 0 {
            return Err(invalid("store.max_batch", "must be at least 1".into()));
        }
        if !(1..=1 << 20).contains(&raw.store.cache_mb) {
            return Err(invalid("store.cache_mb", "must be 1 ..= 1048576".into()));
        }
        if raw.store.inline_kb > MAX_INLINE_KB {
            return Err(invalid("store.inline_kb", format!("{} is over {MAX_INLINE_KB}", raw.store.inline_kb)));
        }
        if raw.store.merge_rows > 1 << 24 {
            return Err(invalid("store.merge_rows", format!("{} is over 16777216", raw.store.merge_rows)));
        }
        for kind in &raw.failures.permanent {
            if FailureKind::parse(kind).is_none() {
                let known: Vec<_> = FailureKind::ALL.iter().map(|k| k.as_str()).collect();
                return Err(invalid("failures.permanent", format!("unknown kind {kind:?} (known: {})", known.join(", "))));
            }
        }
        let mut served: BTreeMap<String, String> = BTreeMap::new();
        for (name, pool) in raw.pools.iter_mut() {
            let key = |k: &str| format!("pools.{name}.{k}");
            let mut listed = BTreeSet::new();
            for f in &pool.formats {
                if !listed.insert(f.as_str()) {
                    return Err(invalid(&key("formats"), format!("{f:?} is listed twice")));
                }
                if let Some(other) = served.insert(f.clone(), name.clone()) {
                    return Err(invalid(&key("formats"), format!("{f:?} is already served by pool {other:?}: a format belongs to one pool")));
                }
            }
            if !is_identifier(name) {
                return Err(invalid(&format!("pools.{name}"), "pool names are letters, digits, '-' and '_'".into()));
            }
            if pool.formats.is_empty() {
                return Err(invalid(&key("formats"), "declare at least one format".into()));
            }
            if let Some(bad) = pool.formats.iter().find(|f| !is_format_name(f)) {
                return Err(invalid(&key("formats"), format!("{bad:?} is not a format name ({}, at most {} bytes)", crate::rules::FORMAT_PATTERN, crate::rules::MAX_FORMAT_BYTES)));
            }
            if pool.command.is_empty() || pool.command[0].is_empty() {
                return Err(invalid(&key("command"), "needs a program".into()));
            }
            if pool.command[0].contains('/') {
                pool.command[0] = resolve(Path::new(&pool.command[0])).to_string_lossy().into_owned();
            }
            if pool.workers > 256 {
                return Err(invalid(&key("workers"), "at most 256".into()));
            }
            if !(1..=MAX_POOL_IN_FLIGHT).contains(&pool.max_in_flight) {
                return Err(invalid(&key("max_in_flight"), format!("1 to {MAX_POOL_IN_FLIGHT}")));
            }
            if let Some(t) = pool.job_timeout_secs {
                if !(t.is_finite() && t > 0.0) {
                    return Err(invalid(&key("job_timeout_secs"), "must be a positive number".into()));
                }
            }
            for (k, v) in [("restart_window_secs", pool.restart_window_secs), ("kill_grace_secs", pool.kill_grace_secs)] {
                if !(v.is_finite() && v > 0.0) {
                    return Err(invalid(&key(k), "must be a positive number".into()));
                }
            }
            if pool.limits.memory_mb.is_some() && pool.limits.rss_mb.is_some() {
                return Err(invalid(&key("limits"), "set memory_mb (RLIMIT_AS) or rss_mb (watchdog), not both".into()));
            }
            // RLIM_INFINITY is u64::MAX: a limit that reaches it (in bytes) would mean "unlimited".
            let max_mb = (u64::MAX >> 20) - 1;
            for (k, v, max) in [("memory_mb", pool.limits.memory_mb, max_mb), ("cpu_secs", pool.limits.cpu_secs, u64::MAX - 1), ("open_files", pool.limits.open_files, u64::MAX - 1), ("rss_mb", pool.limits.rss_mb, max_mb)] {
                if v == Some(0) {
                    return Err(invalid(&key(&format!("limits.{k}")), "must be at least 1".into()));
                }
                if v.is_some_and(|v| v > max) {
                    return Err(invalid(&key(&format!("limits.{k}")), format!("at most {max} (the kernel reads larger as unlimited)")));
                }
            }
            if let Some(k) = pool.env.keys().find(|k| k.starts_with("TELHA_") || k.is_empty() || k.contains('=')) {
                return Err(invalid(&key("env"), format!("{k:?} cannot be set here (TELHA_* come from the supervisor)")));
            }
        }
        let g = &raw.graph;
        for (k, v) in [("max_text_bytes", g.max_text_bytes), ("max_spans", g.max_spans), ("max_nodes", g.max_nodes), ("max_relationships", g.max_relationships), ("max_labels_per_node", g.max_labels_per_node), ("max_span_refs_per_node", g.max_span_refs_per_node)] {
            if v == 0 {
                return Err(invalid(&format!("graph.{k}"), "must be at least 1".into()));
            }
        }
        if g.max_text_bytes > MAX_SUBMISSION_BYTES {
            return Err(invalid("graph.max_text_bytes", format!("at most {} (the largest submission)", MAX_SUBMISSION_BYTES)));
        }
        Ok(Self { path, server: raw.server, jobs: raw.jobs, store: raw.store, pools: raw.pools, failures: raw.failures, graph: raw.graph })
    }

    /// What only this machine can tell, checked by `telha serve` before it creates the
    /// data dir or binds the port: `data_dir` is not a file, every pool's command is an
    /// executable file, and open-file limits are within the kernel's `nr_open`.
    pub fn check_runnable(&self) -> Result<(), ConfigError> {
        let shown = self.path.clone().unwrap_or_else(|| PathBuf::from("(defaults)"));
        let invalid = |key: String, message: String| ConfigError::Invalid { path: shown.clone(), key, message };
        let dir = &self.server.data_dir;
        if dir.exists() && !dir.is_dir() {
            return Err(invalid("server.data_dir".into(), format!("{} exists and is not a folder", dir.display())));
        }
        for (key, file) in [("server.tls_cert", &self.server.tls_cert), ("server.tls_key", &self.server.tls_key), ("server.tls_ca", &self.server.tls_ca)] {
            if let Some(f) = file {
                if let Err(e) = std::fs::File::open(f) {
                    return Err(invalid(key.into(), format!("{}: {e}", f.display())));
                }
            }
        }
        let nr_open = std::fs::read_to_string("/proc/sys/fs/nr_open").ok().and_then(|s| s.trim().parse().ok()).unwrap_or(DEFAULT_NR_OPEN);
        for (name, pool) in &self.pools {
            if let Some(problem) = program_problem(&pool.command[0]) {
                return Err(invalid(format!("pools.{name}.command"), format!("{:?}: {problem}", pool.command[0])));
            }
            if let Some(n) = pool.limits.open_files.filter(|n| *n > nr_open) {
                return Err(invalid(format!("pools.{name}.limits.open_files"), format!("{n} is over the kernel's nr_open ({nr_open})")));
            }
        }
        Ok(())
    }

    /// Every format a job may have: the built-in ones and those the pools declare.
    pub fn known_formats(&self) -> BTreeSet<String> {
        BUILTIN_FORMATS
            .iter()
            .map(|s| s.to_string())
            .chain(self.pools.values().flat_map(|p| p.formats.iter().cloned()))
            .collect()
    }

    pub fn is_permanent(&self, kind: FailureKind) -> bool {
        self.failures.permanent.iter().any(|k| k == kind.as_str())
    }
}

impl RawConfig {
    fn empty() -> Self {
        Self {
            server: ServerConfig::default(),
            jobs: JobsConfig::default(),
            store: StoreConfig::default(),
            pools: BTreeMap::new(),
            failures: FailuresConfig::default(),
            graph: GraphConfig::default(),
        }
    }
}

/// Why `program` cannot be started (None when it names an executable file: a path, or a
/// name on [`CLEAN_PATH`]).
pub fn program_problem(program: &str) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let candidates: Vec<PathBuf> = if program.contains('/') { vec![PathBuf::from(program)] } else { CLEAN_PATH.split(':').map(|d| PathBuf::from(d).join(program)).collect() };
    for c in &candidates {
        if let Ok(meta) = std::fs::metadata(c) {
            if meta.is_file() && meta.permissions().mode() & 0o111 != 0 {
                return None;
            }
            if meta.is_file() {
                return Some(format!("{} is not executable", c.display()));
            }
        }
    }
    Some(if program.contains('/') { "no such file".into() } else { format!("not found on PATH ({CLEAN_PATH})") })
}

/// rules.json `format_pattern` (`[a-z0-9][a-z0-9_.+-]*`), at most `max_format_bytes`: the
/// names workers declare (TELHA_FORMATS) and jobs carry.
pub fn is_format_name(s: &str) -> bool {
    let mut b = s.bytes();
    s.len() <= crate::rules::MAX_FORMAT_BYTES
        && b.next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && b.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'_' | b'.' | b'+' | b'-'))
}

/// Letters, digits, `-`, `_` and `.`, 1..=64 bytes: names that are safe in paths, logs and keys.
pub fn is_identifier(s: &str) -> bool {
    !s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
}

/// The format a file's extension implies, if any.
pub fn format_for_path(path: &Path) -> Option<&'static str> {
    let name = path.file_name()?.to_str()?.to_ascii_lowercase();
    // A `.crate` (crates.io) is a tar.gz; a `.whl` (a Python wheel), a `.pyz` (a Python zipapp)
    // and a `.jar` (a Java archive; a `-sources.jar` holds the .java files) are zips: packaged source.
    const ARCHIVES: &[&str] = &[".zip", ".tar", ".tar.gz", ".tgz", ".tar.xz", ".txz", ".tar.bz2", ".tbz2", ".tbz", ".crate", ".whl", ".pyz", ".jar"];
    if ARCHIVES.iter().any(|suffix| name.ends_with(suffix)) {
        return Some("code-archive");
    }
    // Compressed delimited text: the tabular worker tells gzip/zstd/bzip2/xz from the bytes.
    if let Some((stem, _)) = name.rsplit_once('.').filter(|(_, z)| matches!(*z, "gz" | "zst" | "zstd" | "bz2" | "xz")) {
        match stem.rsplit_once('.').map(|(_, e)| e) {
            Some("csv") => return Some("csv"),
            Some("tsv" | "tab") => return Some("tsv"),
            _ => {}
        }
    }
    // Files a project keeps without an extension: its prose to the text worker, its build
    // scripts to the code worker (a FILE node, no symbols, for a language it has no grammar for).
    match name.as_str() {
        "readme" | "license" | "licence" | "copying" | "notice" | "authors" | "contributors" | "changelog" | "changes"
        | "history" | "news" | "todo" | "install" | "thanks" => return Some("txt"),
        n if n.starts_with("license-") || n.starts_with("licence-") => return Some("txt"),
        "makefile" | "gnumakefile" | "dockerfile" | "containerfile" | "jenkinsfile" | "gemfile" | "rakefile"
        | "vagrantfile" => return Some("code"),
        _ => {}
    }
    let ext = name.rsplit_once('.')?.1;
    Some(match ext {
        "txt" | "text" | "rst" | "rest" | "log" | "adoc" | "asciidoc" | "org" => "txt",
        "md" | "markdown" => "md",
        "csv" => "csv",
        "tsv" | "tab" => "tsv",
        // Excel templates (xltx, xltm) are workbooks; calamine reads them as they are.
        "xlsx" | "xlsm" | "xltx" | "xltm" => "xlsx",
        "xls" => "xls",
        "xlsb" => "xlsb",
        // OpenDocument templates are the same packages (ott, otp, ots).
        "ods" | "ots" => "ods",
        "parquet" => "parquet",
        "pdf" => "pdf",
        "png" | "jpg" | "jpeg" | "tif" | "tiff" | "bmp" | "webp" | "gif" | "pbm" | "pgm" | "ppm" | "pnm" => "image",
        // Macro-enabled documents, templates and slide shows are the same packages.
        "docx" | "docm" | "dotx" | "dotm" => "docx",
        "pptx" | "pptm" | "ppsx" | "ppsm" | "potx" | "potm" => "pptx",
        // Word and PowerPoint 97-2003 (and their templates / shows) and RTF: the docling
        // worker has LibreOffice make them DOCX/PPTX.
        "doc" | "dot" => "doc",
        "ppt" | "pps" => "ppt",
        "rtf" => "rtf",
        // Templates, and LibreOffice's flat XML (one XML file) of a text or presentation.
        "odt" | "ott" | "fodt" => "odt",
        "odp" | "otp" | "fodp" => "odp",
        "epub" => "epub",
        "tex" | "latex" => "latex",
        "html" | "htm" => "html",
        "mht" | "mhtml" => "mhtml",
        "eml" => "eml",
        "msg" => "msg",
        "mbox" | "mbx" => "mbox",
        "ics" | "ical" | "ifb" => "ics",
        "py" | "pyi" | "ipynb" | "rs" | "js" | "mjs" | "cjs" | "jsx" | "ts" | "mts" | "cts" | "tsx" | "go" | "java" | "c" | "h"
        | "cc" | "cpp" | "cxx" | "c++" | "hh" | "hpp" | "hxx" | "h++" | "rb" => "code",
        // Configuration, scripts and other languages: FILE nodes over their text.
        "toml" | "yaml" | "yml" | "ini" | "cfg" | "conf" | "properties" | "sh" | "bash" | "zsh" | "fish"
        | "ps1" | "bat" | "cmd" | "css" | "scss" | "sass" | "less" | "sql" | "graphql" | "gql" | "proto" | "xml"
        | "xsd" | "kt" | "kts" | "swift" | "php" | "cs" | "fs" | "scala" | "lua" | "pl" | "pm" | "r" | "jl"
        | "dart" | "ex" | "exs" | "erl" | "hs" | "ml" | "clj" | "vue" | "svelte" | "cmake" | "gradle" | "tf"
        | "nix" | "zig" | "v" | "sv" | "vhd" | "asm" | "s" => "code",
        "json" | "jsonl" | "ndjson" => "docling",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("/etc/telha/supervisor.toml"))
    }

    #[test]
    fn unknown_key_is_refused_with_its_path() {
        let err = parse("[pools.tabular]\nformats=['csv']\ncommand=['x']\n[pools.tabular.limits]\nmemroy_mb = 5\n").unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("pools.tabular.limits.memroy_mb"), "{msg}");
    }

    #[test]
    fn bad_value_is_refused_with_its_path() {
        let msg = parse("[jobs]\nmax_attempts = \"five\"\n").unwrap_err().to_string();
        assert!(msg.contains("jobs.max_attempts"), "{msg}");
        let msg = parse("[jobs]\nmax_attempts = 0\n").unwrap_err().to_string();
        assert!(msg.contains("jobs.max_attempts"), "{msg}");
        let msg = parse("[server]\nlisten = \"nowhere\"\n").unwrap_err().to_string();
        assert!(msg.contains("server.listen"), "{msg}");
        let msg = parse("[failures]\npermanent = [\"bogus\"]\n").unwrap_err().to_string();
        assert!(msg.contains("failures.permanent") && msg.contains("bogus"), "{msg}");
        for bad in [0, crate::rules::MAX_WORKER_IN_FLIGHT as u32 + 1] {
            let msg = parse(&format!("[pools.p]\nformats = ['txt']\ncommand = ['x']\nmax_in_flight = {bad}\n")).unwrap_err().to_string();
            assert!(msg.contains("pools.p.max_in_flight"), "{msg}");
        }
        let c = parse("[pools.p]\nformats = ['txt']\ncommand = ['x']\nmax_in_flight = 2\n").unwrap();
        assert_eq!(c.pools["p"].max_in_flight, 2);
        assert_eq!(c.jobs.retry_after_max_ms, 3_600_000);
    }

    #[test]
    fn operations_keys_have_defaults_and_are_checked_by_name() {
        let c = parse("").unwrap();
        assert_eq!(c.server.http_listen(), Some((DEFAULT_HTTP_LISTEN, false)));
        assert_eq!(c.server.log_format, LogFormat::Text);
        assert_eq!(parse("[server]\nhttp_listen = \"\"\n").unwrap().server.http_listen(), None);
        assert_eq!(parse("[server]\nhttp_listen = \"0.0.0.0:1\"\n").unwrap().server.http_listen(), Some(("0.0.0.0:1", true)));
        assert_eq!(parse("[server]\nlog_format = \"json\"\n").unwrap().server.log_format, LogFormat::Json);
        for (text, key) in [
            ("[server]\nhttp_listen = \"nowhere\"\n", "server.http_listen"),
            ("[server]\nlog_format = \"xml\"\n", "server.log_format"),
            ("[server]\ntls_cert = \"c.pem\"\n", "server.tls_key"),
            ("[server]\ntls_key = \"k.pem\"\n", "server.tls_cert"),
            ("[server]\ntls_cert = \"c\"\ntls_key = \"k\"\n[pools.p]\nformats = ['txt']\ncommand = ['x']\n", "server.tls_ca"),
        ] {
            let msg = parse(text).unwrap_err().to_string();
            assert!(msg.contains(key), "{text}: {msg}");
        }
        let c = parse("[server]\ntls_cert = \"c.pem\"\ntls_key = \"/k.pem\"\n").unwrap();
        assert_eq!(c.server.tls_cert, Some(PathBuf::from("/etc/telha/c.pem")));
        let msg = c.check_runnable().unwrap_err().to_string();
        assert!(msg.contains("server.tls_cert") && msg.contains("/etc/telha/c.pem"), "{msg}");
    }

    #[test]
    fn relative_paths_resolve_against_the_config_folder() {
        let c = parse("[server]\ndata_dir = \"d\"\n[pools.p]\nformats=['txt']\ncommand=['.venv/bin/python','-m','x']\n").unwrap();
        assert_eq!(c.server.data_dir, PathBuf::from("/etc/telha/d"));
        assert_eq!(c.server.token_path(), PathBuf::from("/etc/telha/d/token"));
        assert_eq!(c.pools["p"].command[0], "/etc/telha/.venv/bin/python");
        assert!(c.known_formats().contains("txt"));
    }

    #[test]
    fn format_names_follow_the_shared_rule() {
        assert!(BUILTIN_FORMATS.iter().all(|f| is_format_name(f)));
        for good in ["csv", "code-archive", "c++", "x.y_z", "9p"] {
            assert!(is_format_name(good), "{good}");
        }
        for bad in ["", "CSV", "-x", ".x", "a b", "é", &"x".repeat(65)] {
            assert!(!is_format_name(bad), "{bad}");
        }
        let msg = parse("[pools.p]\nformats = ['CSV']\ncommand = ['x']\n").unwrap_err().to_string();
        assert!(msg.contains("pools.p.formats: \"CSV\" is not a format name"), "{msg}");
    }

    #[test]
    fn formats_belong_to_one_pool_and_limits_stay_finite() {
        let pool = |name: &str, formats: &str| format!("[pools.{name}]\nformats = {formats}\ncommand = ['x']\n");
        let msg = parse(&pool("a", "['csv', 'csv']")).unwrap_err().to_string();
        assert!(msg.contains("pools.a.formats: \"csv\" is listed twice"), "{msg}");
        let msg = parse(&(pool("a", "['csv']") + &pool("b", "['tsv', 'csv']"))).unwrap_err().to_string();
        assert!(msg.contains("pools.b.formats: \"csv\" is already served by pool \"a\""), "{msg}");
        let msg = parse(&(pool("a", "['csv']") + "[pools.a.limits]\nmemory_mb = 18446744073709551615\n")).unwrap_err().to_string();
        assert!(msg.contains("pools.a.limits.memory_mb: at most"), "{msg}");
        let msg = parse(&(pool("a", "['csv']") + "[pools.a.limits]\ncpu_secs = 18446744073709551615\n")).unwrap_err().to_string();
        assert!(msg.contains("pools.a.limits.cpu_secs: at most"), "{msg}");
        assert!(parse(&(pool("a", "['csv']") + "[pools.a.limits]\nmemory_mb = 1048576\n")).is_ok());
    }

    #[test]
    fn lease_secs_takes_integers_and_fractions() {
        assert_eq!(parse("[jobs]\nlease_secs = 2\n").unwrap().jobs.lease(), Duration::from_secs(2));
        assert_eq!(parse("[jobs]\nlease_secs = 0.5\n").unwrap().jobs.lease(), Duration::from_millis(500));
    }

    #[test]
    fn graph_caps_parse_strictly() {
        assert_eq!(Config::defaults().graph, GraphCaps::default());
        let c = parse("[graph]\nmax_nodes = 10\nmax_text_bytes = 4096\n").unwrap();
        assert_eq!((c.graph.max_nodes, c.graph.max_text_bytes, c.graph.max_spans), (10, 4096, Config::defaults().graph.max_spans));
        let msg = parse("[graph]\nmax_nodes = 0\n").unwrap_err().to_string();
        assert!(msg.contains("graph.max_nodes"), "{msg}");
        let msg = parse("[graph]\nmax_node = 5\n").unwrap_err().to_string();
        assert!(msg.contains("graph.max_node"), "{msg}");
        let msg = parse("[graph]\nmax_relationships = -1\n").unwrap_err().to_string();
        assert!(msg.contains("graph.max_relationships"), "{msg}");
        let msg = parse("[graph]\nmax_text_bytes = 999999999999\n").unwrap_err().to_string();
        assert!(msg.contains("graph.max_text_bytes"), "{msg}");
        assert_eq!(parse("[store]\ncache_mb = 64\n").unwrap().store.cache_mb, 64);
        let msg = parse("[store]\ncache_mb = 0\n").unwrap_err().to_string();
        assert!(msg.contains("store.cache_mb"), "{msg}");
    }

    #[test]
    fn default_permanent_kinds_follow_the_taxonomy() {
        let c = Config::defaults();
        assert!(c.is_permanent(FailureKind::InvalidInput));
        assert!(c.is_permanent(FailureKind::Protocol));
        assert!(!c.is_permanent(FailureKind::Oom));
        let c = parse("[failures]\npermanent = [\"oom\"]\n").unwrap();
        assert!(c.is_permanent(FailureKind::Oom) && !c.is_permanent(FailureKind::InvalidInput));
    }

    /// Every archive suffix the code worker reads maps to `code-archive`, source files to `code`,
    /// and the document formats to docling's.
    #[test]
    fn formats_follow_the_file_name() {
        let cases = [
            ("repo.tar.gz", "code-archive"), ("repo.TGZ", "code-archive"), ("repo.tar.xz", "code-archive"),
            ("repo.tar.bz2", "code-archive"), ("repo.tar", "code-archive"), ("repo.zip", "code-archive"),
            ("serde-1.0.200.crate", "code-archive"), ("attrs-23.2.0-py3-none-any.whl", "code-archive"), ("tool.pyz", "code-archive"), ("guava-33.0-sources.jar", "code-archive"),
            ("lib.rs", "code"), ("analysis.ipynb", "code"), ("app.tsx", "code"), ("x.hpp", "code"), ("m.mjs", "code"),
            ("paper.pdf", "pdf"), ("memo.DOCX", "docx"), ("deck.pptx", "pptx"), ("old.DOC", "doc"), ("macros.docm", "docx"), ("show.ppsx", "pptx"), ("old.ppt", "ppt"), ("note.rtf", "rtf"), ("letter.odt", "odt"), ("slides.ODP", "odp"), ("letter.ott", "odt"), ("deck.otp", "odp"), ("notes.fodt", "odt"), ("deck.fodp", "odp"), ("book.epub", "epub"), ("paper.tex", "latex"), ("Inbox.mbox", "mbox"), ("team.ics", "ics"), ("page.htm", "html"), ("saved.mht", "mhtml"), ("notes.md", "md"),
            ("doc.json", "docling"), ("events.jsonl", "docling"), ("dump.NDJSON", "docling"), ("scan.PNG", "image"), ("photo.jpeg", "image"), ("fax.tif", "image"), ("logo.GIF", "image"), ("page-1.ppm", "image"), ("sheet.csv", "csv"), ("sheet.csv.gz", "csv"), ("sheet.CSV.ZST", "csv"),
            ("t.tsv.xz", "tsv"), ("book.xlsm", "xlsx"), ("form.xltx", "xlsx"), ("old.xls", "xls"), ("b.xlsb", "xlsb"), ("c.ods", "ods"), ("c.ots", "ods"),
        ];
        for (name, format) in cases {
            assert_eq!(format_for_path(Path::new(name)), Some(format), "{name}");
        }
        let more = [
            ("README", "txt"), ("LICENSE", "txt"), ("LICENSE-MIT", "txt"), ("docs/CHANGELOG", "txt"), ("guide.rst", "txt"), ("run.log", "txt"),
            ("Makefile", "code"), ("Dockerfile", "code"), ("Cargo.toml", "code"), ("ci.yml", "code"),
            ("setup.cfg", "code"), ("build.sh", "code"), ("schema.sql", "code"), ("pom.xml", "code"),
        ];
        for (name, format) in more {
            assert_eq!(format_for_path(Path::new(name)), Some(format), "{name}");
        }
        assert_eq!(format_for_path(Path::new("blob.bin")), None);
        assert_eq!(format_for_path(Path::new("module.pyc")), None);
        assert_eq!(format_for_path(Path::new("notes")), None);
    }
}
