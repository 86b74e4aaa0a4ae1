//! Client side of the CLI: finds the server and its token from the config, and
//! runs each command over gRPC.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context, Result};
use tokio::io::AsyncReadExt;
use tonic::metadata::MetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

use super::{render, Global, IngestArgs, JobsArgs};
use crate::config::{format_for_path, Config};
use crate::proto::ingest_service_client::IngestServiceClient;
use crate::proto::submit_job_request::Part;
use crate::proto::*;
use crate::store::state::JobState;

const CHUNK: usize = 1 << 20;

type Authed = InterceptedService<Channel, BearerToken>;

/// Adds the bearer token to every request.
#[derive(Clone)]
pub struct BearerToken(MetadataValue<tonic::metadata::Ascii>);

impl tonic::service::Interceptor for BearerToken {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        req.metadata_mut().insert("authorization", self.0.clone());
        Ok(req)
    }
}

/// A connected client of `IngestService`. Clones share one connection.
#[derive(Clone)]
pub struct Client {
    pub ingest: IngestServiceClient<Authed>,
}

/// The config a client command uses: `--config`, else ./supervisor.toml if present, else defaults.
pub(super) fn load_config(g: &Global) -> Result<Config> {
    match &g.config {
        Some(p) => Ok(Config::load(p)?),
        None if Path::new("supervisor.toml").exists() => Ok(Config::load(Path::new("supervisor.toml"))?),
        None => Ok(Config::defaults()),
    }
}

fn config_name(g: &Global) -> String {
    g.config.as_ref().map_or_else(|| "./supervisor.toml".to_string(), |p| p.display().to_string())
}

impl Client {
    pub async fn connect(g: &Global) -> Result<Self> {
        let config = load_config(g)?;
        let (addr, from) = match &g.addr {
            Some(a) => (a.clone(), "--addr / TELHA_ADDR".to_string()),
            None => {
                let listen = &config.server.listen;
                if listen.ends_with(":0") {
                    let file = config.server.addr_file();
                    let a = std::fs::read_to_string(&file).map_err(|_| {
                        anyhow!("[server].listen in {} picks a free port, and {} does not exist: is `telha serve --config {}` running?", config_name(g), file.display(), config_name(g))
                    })?;
                    (a.trim().to_string(), file.display().to_string())
                } else {
                    (listen.replace("0.0.0.0", "127.0.0.1"), format!("[server].listen in {}", config_name(g)))
                }
            }
        };
        let token = match std::env::var("TELHA_TOKEN") {
            Ok(t) if !t.is_empty() => t,
            _ => {
                let path = config.server.token_path();
                std::fs::read_to_string(&path)
                    .with_context(|| format!("cannot read the token file {} (set [server].token_file or TELHA_TOKEN): has `telha serve` run with this config?", path.display()))?
                    .trim()
                    .to_string()
            }
        };
        let ca = match (&g.ca, config.server.tls(), &config.server.tls_ca) {
            (Some(ca), _, _) => Some(ca.clone()),
            (None, true, Some(ca)) => Some(ca.clone()),
            (None, true, None) => bail!("{} turns TLS on ([server].tls_cert): give the CA that signed it with --ca or TELHA_CA", config_name(g)),
            (None, false, _) => None,
        };
        let ca_pem = match &ca {
            Some(p) => Some(std::fs::read(p).with_context(|| format!("cannot read the CA file {}", p.display()))?),
            None => None,
        };
        Self::at_with(&addr, &token, ca_pem)
            .await
            .map_err(|_| anyhow!("no telha server at {addr} (from {from}): start one with `telha serve --config {}`", config_name(g)))
    }

    /// Every job `filter` matches, after `filter.page_token` (a job id), page by page,
    /// at most `limit`.
    pub async fn list_jobs_all(&mut self, mut filter: ListJobsRequest, limit: usize) -> Result<Vec<Job>> {
        let mut all = Vec::new();
        loop {
            filter.page_size = u32::try_from(limit.saturating_sub(all.len()).min(1000)).unwrap_or(1000);
            if filter.page_size == 0 {
                return Ok(all);
            }
            let resp = self.ingest.list_jobs(filter.clone()).await.map_err(status_err)?.into_inner();
            all.extend(resp.jobs);
            if resp.next_page_token.is_empty() {
                return Ok(all);
            }
            filter.page_token = resp.next_page_token;
        }
    }

    /// Connects to `addr` with `token`, in plaintext.
    pub async fn at(addr: &str, token: &str) -> Result<Self> {
        Self::at_with(addr, token, None).await
    }

    /// Connects to `addr` with `token`; over TLS verified against `ca_pem` when given.
    pub async fn at_with(addr: &str, token: &str, ca_pem: Option<Vec<u8>>) -> Result<Self> {
        let header: MetadataValue<_> = format!("Bearer {token}").parse().map_err(|_| anyhow!("the token contains characters not allowed in a header"))?;
        let scheme = if ca_pem.is_some() { "https" } else { "http" };
        let uri = if addr.contains("://") { addr.to_string() } else { format!("{scheme}://{addr}") };
        let mut endpoint = Channel::from_shared(uri).map_err(|e| anyhow!("bad server address {addr:?}: {e}"))?.connect_timeout(std::time::Duration::from_secs(5));
        if let Some(pem) = ca_pem {
            let tls = tonic::transport::ClientTlsConfig::new().ca_certificate(tonic::transport::Certificate::from_pem(pem));
            endpoint = endpoint.tls_config(tls).map_err(|e| anyhow!("TLS: {e}"))?;
        }
        let channel = endpoint.connect().await?;
        Ok(Self { ingest: IngestServiceClient::with_interceptor(channel, BearerToken(header)).max_decoding_message_size(64 << 20) })
    }
}

pub(super) fn status_err(e: tonic::Status) -> anyhow::Error {
    anyhow!("{}", e.message())
}

pub async fn serve(g: &Global) -> Result<ExitCode> {
    let config = match &g.config {
        Some(p) => Config::load(p)?,
        None if Path::new("supervisor.toml").exists() => Config::load(Path::new("supervisor.toml"))?,
        None => {
            tracing::warn!("no supervisor.toml here and no --config: using built-in defaults");
            Config::defaults()
        }
    };
    crate::server::serve(config, crate::server::shutdown_signal(), |_| {}).await?;
    Ok(ExitCode::SUCCESS)
}

/// `--option KEY=VALUE`s as a JSON object.
pub(super) fn options_json(pairs: &[String]) -> Result<String> {
    let mut map = serde_json::Map::new();
    for p in pairs {
        let (k, v) = p.split_once('=').ok_or_else(|| anyhow!("--option {p:?}: expected KEY=VALUE"))?;
        if k.is_empty() {
            bail!("--option {p:?}: the key is empty");
        }
        let value = serde_json::from_str(v).unwrap_or_else(|_| serde_json::Value::String(v.to_string()));
        map.insert(k.to_string(), value);
    }
    Ok(serde_json::Value::Object(map).to_string())
}

fn is_url(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    l.starts_with("http://") || l.starts_with("https://")
}

/// One input to submit: its job name, format, and file (None for a URL).
pub(super) type Planned = (String, String, Option<PathBuf>);

/// Submissions in flight at once from one `ingest` or `run`: enough for the server's
/// group commit to batch many of them (a folder of small files: 32 gave ~4,000 files/s,
/// 128 ~6,000), below the server's HTTP/2 limit of 200 streams per connection.
const SUBMIT_CONCURRENCY: usize = 128;

/// Checks every input before any is submitted, so a typo does not leave half a batch
/// queued. A folder stands for the files under it (sorted, hidden ones skipped); a file
/// found in a folder whose format the extension does not tell is skipped and counted
/// (said on stderr), while a file named on the command line must have a format.
pub(super) fn plan_inputs(g: &Global, inputs: &[String], format: Option<&String>) -> Result<Vec<Planned>> {
    let mut plan: Vec<Planned> = Vec::new();
    for input in inputs {
        if is_url(input) {
            plan.push((input.clone(), format.cloned().unwrap_or_else(|| "web".into()), None));
            continue;
        }
        let path = PathBuf::from(input);
        let meta = std::fs::metadata(&path).map_err(|e| anyhow!("{input}: {}", if e.kind() == std::io::ErrorKind::NotFound { "no such file".to_string() } else { e.to_string() }))?;
        if meta.is_dir() {
            // Walked from its canonical path, without following links: every file found
            // is named by its canonical path already (one canonicalize per folder).
            let root = std::fs::canonicalize(&path).map_err(|e| anyhow!("{input}: {e}"))?;
            let mut files = Vec::new();
            let mut passed = Passed::default();
            let listing = std::fs::read_dir(&root).map_err(|e| anyhow!("{input}: {e}"))?;
            walk(&root, listing, &mut files, &mut passed);
            if let Some(said) = passed.summary() {
                eprintln!("telha: {input}: {said}");
            }
            let mut skipped: BTreeMap<String, usize> = BTreeMap::new();
            for file in files {
                match format.cloned().or_else(|| format_for_path(&file).map(str::to_string)) {
                    Some(f) => plan.push((file.display().to_string(), f, Some(file))),
                    None => *skipped.entry(extension_of(&file)).or_default() += 1,
                }
            }
            if !skipped.is_empty() {
                let total: usize = skipped.values().sum();
                eprintln!(
                    "telha: {input}: skipped {total} file(s) whose format the name does not tell ({}); pass --format to ingest them as one format",
                    skipped_summary(&skipped)
                );
            }
            continue;
        }
        if !meta.is_file() {
            bail!("{input}: not a file or a folder");
        }
        let format = match format {
            Some(f) => f.clone(),
            None => format_for_path(&path)
                .ok_or_else(|| {
                    let known = load_config(g).map(|c| c.known_formats().into_iter().collect::<Vec<_>>().join(", ")).unwrap_or_default();
                    anyhow!("{input}: cannot tell the format from the extension; pass --format (known: {known})")
                })?
                .to_string(),
        };
        plan.push((absolute(&path), format, Some(path)));
    }
    Ok(plan)
}

/// A skipped file's extension as the skip summary shows it (`.pyc`, or `no extension`).
fn extension_of(path: &Path) -> String {
    match path.file_name().and_then(|n| n.to_str()).and_then(|n| n.rsplit_once('.')) {
        Some((stem, ext)) if !stem.is_empty() => format!(".{}", ext.to_ascii_lowercase()),
        _ => "no extension".to_string(),
    }
}

/// The most common skipped extensions first (ties by name), at most eight, then how many more.
fn skipped_summary(skipped: &BTreeMap<String, usize>) -> String {
    let mut counts: Vec<(&String, &usize)> = skipped.iter().collect();
    counts.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
    let mut parts: Vec<String> = counts.iter().take(8).map(|(ext, n)| format!("{ext}: {n}")).collect();
    if counts.len() > 8 {
        parts.push(format!("{} more kinds", counts.len() - 8));
    }
    parts.join(", ")
}

/// The job name of a file: its canonical path.
fn absolute(path: &Path) -> String {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()).display().to_string()
}

/// What a folder walk passed over besides hidden entries, said on stderr: nothing of it
/// is ingested, and nothing of it stops the rest.
#[derive(Default)]
struct Passed {
    /// Symbolic links: not followed (a link loop cannot make the walk endless, and a link
    /// cannot take the walk out of the folder named).
    links: usize,
    /// FIFOs, sockets, devices: reading one could block or never end.
    special: usize,
    /// Folders (or entries) that could not be read, with the first one's error.
    unreadable: usize,
    first_unreadable: Option<String>,
}

impl Passed {
    fn unreadable(&mut self, path: &Path, e: &std::io::Error) {
        self.unreadable += 1;
        self.first_unreadable.get_or_insert_with(|| format!("{}: {e}", path.display()));
    }

    fn summary(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.links > 0 {
            parts.push(format!("{} symbolic link(s) not followed", self.links));
        }
        if self.special > 0 {
            parts.push(format!("{} FIFO(s), socket(s) or device(s) not read", self.special));
        }
        if let Some(first) = &self.first_unreadable {
            parts.push(format!("{} unreadable (the first: {first})", self.unreadable));
        }
        (!parts.is_empty()).then(|| format!("passed over {}", parts.join("; ")))
    }
}

/// The regular files under `dir` (its `listing`), sorted, skipping hidden entries;
/// symbolic links are not followed and special files not read (counted in `passed`, as
/// is a subfolder that cannot be read: the rest of the walk goes on).
fn walk(dir: &Path, listing: std::fs::ReadDir, out: &mut Vec<PathBuf>, passed: &mut Passed) {
    let mut entries: Vec<std::fs::DirEntry> = Vec::new();
    for entry in listing {
        match entry {
            Ok(entry) => entries.push(entry),
            Err(e) => passed.unreadable(dir, &e),
        }
    }
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        match entry.file_type() {
            Ok(kind) if kind.is_dir() => {
                let sub = entry.path();
                match std::fs::read_dir(&sub) {
                    Ok(listing) => walk(&sub, listing, out, passed),
                    Err(e) => passed.unreadable(&sub, &e),
                }
            }
            Ok(kind) if kind.is_file() => out.push(entry.path()),
            Ok(kind) if kind.is_symlink() => passed.links += 1,
            Ok(_) => passed.special += 1,
            Err(e) => passed.unreadable(&entry.path(), &e),
        }
    }
}

/// What one `ingest` or `run` submits: each input's header and file, in input order.
pub(super) type Submission = (SubmitHeader, Option<PathBuf>);

/// The jobs `submit_all` made, in input order, and the first error (inputs after it
/// that had not started were not submitted).
pub(super) struct Submitted {
    pub jobs: Vec<Job>,
    pub error: Option<anyhow::Error>,
    pub not_submitted: usize,
}

/// Submits `items` with up to [`SUBMIT_CONCURRENCY`] in flight (each retried on
/// UNAVAILABLE under its idempotency key), with a progress bar on a terminal. After the
/// first error no new submission starts; those in flight finish.
pub(super) async fn submit_all(client: &Client, items: Vec<Submission>) -> Submitted {
    use futures_util::StreamExt;
    use std::io::IsTerminal;
    use std::sync::atomic::{AtomicBool, Ordering};
    let total = items.len();
    let bar = (total > 1 && std::io::stderr().is_terminal()).then(|| {
        let b = indicatif::ProgressBar::new(total as u64);
        b.set_style(indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} submitted  {per_sec}").unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()));
        b
    });
    let stop = AtomicBool::new(false);
    let (stop, bar_ref) = (&stop, bar.as_ref());
    // One thread reads the small files ahead, in input order (a blocking read each, no
    // hop to the blocking pool per file); the submissions go out as they are read.
    let (read_tx, read_rx) = tokio::sync::mpsc::channel::<(SubmitHeader, Option<PathBuf>, Option<std::io::Result<Vec<u8>>>)>(SUBMIT_CONCURRENCY);
    let reader = std::thread::spawn(move || {
        for (header, path) in items {
            let data = path.as_deref().and_then(|p| read_if_small(p).transpose());
            if read_tx.blocking_send((header, path, data)).is_err() {
                return;
            }
        }
    });
    let results: Vec<Option<Result<Job>>> = tokio_stream::wrappers::ReceiverStream::new(read_rx)
        .map(|(header, path, data)| {
            let mut client = client.clone();
            async move {
                if stop.load(Ordering::Relaxed) {
                    return None;
                }
                let result = match data {
                    Some(Err(e)) => Err(anyhow!("{}: cannot read: {e}", path.as_deref().map(|p| p.display().to_string()).unwrap_or_default())),
                    Some(Ok(data)) => submit_retrying(&mut client, header, Source::Bytes(data), path.as_deref()).await,
                    None => submit_retrying(&mut client, header, Source::File, path.as_deref()).await,
                };
                if result.is_err() {
                    stop.store(true, Ordering::Relaxed);
                }
                if let Some(b) = bar_ref {
                    b.inc(1);
                }
                Some(result)
            }
        })
        .buffered(SUBMIT_CONCURRENCY)
        .collect()
        .await;
    let _ = reader.join();
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let mut out = Submitted { jobs: Vec::with_capacity(total), error: None, not_submitted: 0 };
    for r in results {
        match r {
            Some(Ok(job)) => out.jobs.push(job),
            Some(Err(e)) if out.error.is_none() => out.error = Some(e),
            Some(Err(e)) => eprintln!("telha: {e:#}"),
            None => out.not_submitted += 1,
        }
    }
    out
}

pub async fn ingest(g: &Global, args: IngestArgs) -> Result<ExitCode> {
    let options = options_json(&args.options)?;
    let plan = plan_inputs(g, &args.inputs, args.format.as_ref())?;
    if plan.is_empty() {
        bail!("nothing to ingest in {}", args.inputs.join(" "));
    }
    let mut client = Client::connect(g).await?;
    warn_unserved(&mut client, plan.iter().map(|p| p.1.as_str()), args.wait).await;
    // One key per input per invocation: a submission retried after UNAVAILABLE (the
    // server may have committed before it went away) returns the job it made.
    let invocation = {
        let mut bytes = [0u8; 12];
        getrandom::fill(&mut bytes).map_err(|e| anyhow!("cannot draw an idempotency key: {e}"))?;
        hex::encode(bytes)
    };
    let items = plan
        .into_iter()
        .enumerate()
        .map(|(i, (name, format, path))| {
            let header = SubmitHeader {
                tenant_id: args.tenant.clone(),
                organization_id: args.organization.clone(),
                format,
                url: if path.is_none() { name.clone() } else { String::new() },
                name,
                options_json: options.clone(),
                idempotency_key: format!("cli-{invocation}-{i}"),
            };
            (header, path)
        })
        .collect();
    let Submitted { mut jobs, error, not_submitted } = submit_all(&client, items).await;
    let mut code = ExitCode::SUCCESS;
    if args.wait {
        for job in jobs.iter_mut() {
            *job = wait(&mut client, &job.id).await?;
            if job.state != JobState::Succeeded.as_str() {
                code = ExitCode::FAILURE;
            }
        }
    }
    if g.json {
        let docs: Vec<_> = jobs.iter().map(render::job_json).collect();
        let doc = if docs.len() == 1 && error.is_none() { docs.into_iter().next().unwrap_or_default() } else { serde_json::Value::Array(docs) };
        render::print_json(&doc);
    } else {
        // One write per few KiB, not one per line (a folder may be 100,000 files).
        use std::io::Write;
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        for job in &jobs {
            let _ = writeln!(out, "{}\t{}\t{}\t{}", job.id, job.state, job.format, job.name);
        }
        let _ = out.flush();
    }
    match error {
        Some(e) if not_submitted > 0 => Err(e.context(format!("{} job(s) submitted; {not_submitted} input(s) after the error were not", jobs.len()))),
        Some(e) => Err(e),
        None => Ok(code),
    }
}

/// Says so on stderr when no pool of the server serves a format and no worker polls for
/// it: such a job waits until a worker that declares the format connects.
async fn warn_unserved<'a>(client: &mut Client, formats: impl Iterator<Item = &'a str>, wait: bool) {
    let Ok(status) = client.ingest.get_status(GetStatusRequest {}).await.map(|r| r.into_inner()) else { return };
    let served = |f: &str| status.pools.iter().any(|p| p.formats.iter().any(|x| x == f)) || status.pollers.iter().any(|p| p.formats.iter().any(|x| x == f));
    let mut told = std::collections::BTreeSet::new();
    for f in formats.filter(|f| !served(f)) {
        if told.insert(f.to_string()) {
            eprintln!("telha: no pool of this server serves format {f:?} and no worker polls for it: its jobs wait until a worker that declares {f:?} connects");
            if wait {
                eprintln!("telha: --wait may wait forever for those jobs (Ctrl-C stops waiting; the jobs stay queued)");
            }
        }
    }
}

/// Attempts of one submission while the server answers UNAVAILABLE.
const SUBMIT_ATTEMPTS: u32 = 5;

/// What a submission sends after its header: bytes already read, or the file at its
/// path streamed in chunks (none for a URL job).
#[derive(Clone)]
enum Source {
    Bytes(Vec<u8>),
    File,
}

/// [`try_submit`], again on UNAVAILABLE (with the header's idempotency key, so a retry of a
/// submission the server did commit returns that job), up to [`SUBMIT_ATTEMPTS`] times.
async fn submit_retrying(client: &mut Client, header: SubmitHeader, source: Source, path: Option<&Path>) -> Result<Job> {
    let mut attempt = 1;
    loop {
        match try_submit(client, header.clone(), source.clone(), path).await {
            Err(SubmitError::Status(s)) if s.code() == tonic::Code::Unavailable && attempt < SUBMIT_ATTEMPTS => {
                tracing::warn!(attempt, error = %s.message(), "the server is unavailable; submitting again");
                tokio::time::sleep(std::time::Duration::from_millis(200 << attempt)).await;
                attempt += 1;
            }
            other => return other.map_err(|e| e.into_anyhow(&header, path)),
        }
    }
}

/// Why one submission failed: the server's answer, or something on our side.
enum SubmitError {
    Status(tonic::Status),
    Local(anyhow::Error),
}

impl SubmitError {
    fn into_anyhow(self, header: &SubmitHeader, path: Option<&Path>) -> anyhow::Error {
        match self {
            Self::Local(e) => e,
            Self::Status(s) => anyhow!("{}: {}", path.map(|p| p.display().to_string()).unwrap_or_else(|| header.url.clone()), s.message()),
        }
    }
}

async fn try_submit(client: &mut Client, header: SubmitHeader, source: Source, path: Option<&Path>) -> Result<Job, SubmitError> {
    let local = SubmitError::Local;
    if let Source::Bytes(data) = source {
        // Most files people ingest are small: read whole beforehand, sent as one message.
        let mut parts = vec![SubmitJobRequest { part: Some(Part::Header(header)) }];
        if !data.is_empty() {
            parts.push(SubmitJobRequest { part: Some(Part::Chunk(data)) });
        }
        return client.ingest.submit_job(tokio_stream::iter(parts)).await.map(tonic::Response::into_inner).map_err(SubmitError::Status);
    }
    let (tx, rx) = tokio::sync::mpsc::channel::<SubmitJobRequest>(4);
    let send = tx.clone();
    let label = path.map(|p| p.display().to_string()).unwrap_or_else(|| header.url.clone());
    send.send(SubmitJobRequest { part: Some(Part::Header(header)) }).await.map_err(|_| local(anyhow!("submit stream closed")))?;
    let reader = match path {
        Some(p) => Some(tokio::fs::File::open(p).await.with_context(|| format!("{}: cannot open", p.display())).map_err(local)?),
        None => None,
    };
    drop(tx);
    let feeder = tokio::spawn(async move {
        if let Some(mut file) = reader {
            let mut buf = vec![0u8; CHUNK];
            loop {
                let n = file.read(&mut buf).await?;
                if n == 0 {
                    break;
                }
                if send.send(SubmitJobRequest { part: Some(Part::Chunk(buf[..n].to_vec())) }).await.is_err() {
                    break;
                }
            }
        }
        Ok::<_, std::io::Error>(())
    });
    let job = client.ingest.submit_job(tokio_stream::wrappers::ReceiverStream::new(rx)).await.map_err(SubmitError::Status)?.into_inner();
    feeder.await.map_err(|e| local(anyhow!("{e}")))?.with_context(|| format!("{label}: read error")).map_err(local)?;
    Ok(job)
}

/// Files up to this size are read whole ahead of their submission (at most
/// 2 x [`SUBMIT_CONCURRENCY`] of them in memory: 64 MiB); larger ones are streamed.
const READ_AHEAD_MAX: u64 = 256 * 1024;

/// The whole file when it is at most [`READ_AHEAD_MAX`], else None (it is streamed). Blocking.
fn read_if_small(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    if file.metadata()?.len() > READ_AHEAD_MAX {
        return Ok(None);
    }
    let mut data = Vec::new();
    // One byte past the limit: a file that grew since the stat is streamed instead.
    file.take(READ_AHEAD_MAX + 1).read_to_end(&mut data)?;
    Ok((data.len() as u64 <= READ_AHEAD_MAX).then_some(data))
}

/// Follows a job until it is finished.
async fn wait(client: &mut Client, id: &str) -> Result<Job> {
    let mut stream = client.ingest.watch_job(GetJobRequest { job_id: id.to_string(), tenant_id: String::new() }).await.map_err(status_err)?.into_inner();
    let mut last = None;
    while let Some(job) = stream.message().await.map_err(status_err)? {
        last = Some(job);
    }
    last.ok_or_else(|| anyhow!("job {id}: the server ended the watch without a state"))
}

pub async fn jobs(g: &Global, args: JobsArgs) -> Result<ExitCode> {
    let mut client = Client::connect(g).await?;
    let filter = ListJobsRequest {
        state: args.state.clone().unwrap_or_default(),
        format: args.format.clone().unwrap_or_default(),
        tenant_id: args.tenant.clone().unwrap_or_default(),
        ..Default::default()
    };
    let all = client.list_jobs_all(filter, args.limit).await?;
    if g.json {
        render::print_json(&serde_json::Value::Array(all.iter().map(render::job_json).collect()));
    } else {
        render::jobs_table(&all);
    }
    Ok(ExitCode::SUCCESS)
}

async fn one(g: &Global, id: &str, op: &str) -> Result<ExitCode> {
    let mut client = Client::connect(g).await?;
    let req = GetJobRequest { job_id: id.to_string(), tenant_id: String::new() };
    let job = match op {
        "retry" => client.ingest.retry_job(req).await,
        "cancel" => client.ingest.cancel_job(req).await,
        _ => client.ingest.get_job(req).await,
    }
    .map_err(status_err)?
    .into_inner();
    if g.json {
        render::print_json(&render::job_json(&job));
    } else {
        render::job_text(&job);
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn job(g: &Global, id: &str) -> Result<ExitCode> {
    one(g, id, "get").await
}

pub async fn retry(g: &Global, id: &str) -> Result<ExitCode> {
    one(g, id, "retry").await
}

pub async fn cancel(g: &Global, id: &str) -> Result<ExitCode> {
    one(g, id, "cancel").await
}

pub async fn status(g: &Global) -> Result<ExitCode> {
    let mut client = Client::connect(g).await?;
    let s = client.ingest.get_status(GetStatusRequest {}).await.map_err(status_err)?.into_inner();
    if g.json {
        render::print_json(&render::status_json(&s));
    } else {
        render::status_text(&s);
    }
    Ok(ExitCode::SUCCESS)
}
