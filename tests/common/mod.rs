//! Test harness: the real `telha` binary serving on 127.0.0.1:0 with a redb file in
//! a temp dir, and a test worker speaking WorkerService through the generated client.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use telha::proto::ingest_service_client::IngestServiceClient;
use telha::proto::submit_job_request::Part;
use telha::proto::worker_service_client::WorkerServiceClient;
use telha::proto::*;
use tonic::metadata::MetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

pub type Authed = InterceptedService<Channel, Bearer>;

#[derive(Clone)]
pub struct Bearer(pub Option<MetadataValue<tonic::metadata::Ascii>>);

impl tonic::service::Interceptor for Bearer {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(v) = &self.0 {
            req.metadata_mut().insert("authorization", v.clone());
        }
        Ok(req)
    }
}

/// A `telha serve` process with its own data dir.
pub struct Server {
    pub dir: tempfile::TempDir,
    pub config: PathBuf,
    pub addr: String,
    pub token: String,
    child: Option<Child>,
}

pub const BASE_CONFIG: &str = r#"
[server]
listen = "127.0.0.1:0"
data_dir = "data"

[jobs]
max_attempts = 3
lease_secs = 30
backoff_base_ms = 50
backoff_max_ms = 200
"#;

impl Server {
    /// Starts a server whose config is `BASE_CONFIG` with `jobs` replacing its [jobs] table when given.
    pub fn start(jobs: Option<&str>) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let text = match jobs {
            Some(j) => format!("[server]\nlisten = \"127.0.0.1:0\"\ndata_dir = \"data\"\n\n[jobs]\n{j}\n"),
            None => BASE_CONFIG.to_string(),
        };
        let config = dir.path().join("supervisor.toml");
        std::fs::write(&config, text).expect("write config");
        let mut s = Self { dir, config, addr: String::new(), token: String::new(), child: None };
        s.spawn();
        s
    }

    /// Starts a server with this whole config text; `{repo}` becomes the repository root.
    pub fn start_config(text: &str) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = dir.path().join("supervisor.toml");
        std::fs::write(&config, text.replace("{repo}", env!("CARGO_MANIFEST_DIR"))).expect("write config");
        let mut s = Self { dir, config, addr: String::new(), token: String::new(), child: None };
        s.spawn();
        s
    }

    /// Rewrites the config file (then send SIGHUP to apply it).
    pub fn rewrite_config(&self, text: &str) {
        std::fs::write(&self.config, text.replace("{repo}", env!("CARGO_MANIFEST_DIR"))).expect("write config");
    }

    /// Sends `sig` to the server process.
    pub fn signal(&self, sig: i32) {
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe { libc::kill(self.pid() as i32, sig) };
    }

    /// Waits for the server process to exit and returns its status. Async, so the
    /// test's own connections keep being served (and closed) meanwhile.
    pub async fn wait_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let start = Instant::now();
        let child = self.child.as_mut()?;
        loop {
            if let Ok(Some(st)) = child.try_wait() {
                self.child = None;
                return Some(st);
            }
            if start.elapsed() > limit {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub async fn status(&self) -> telha::proto::Status {
        self.client().await.get_status(GetStatusRequest {}).await.expect("status").into_inner()
    }

    /// Polls status until `pred` holds (or panics after `limit`).
    pub async fn wait_status(&self, limit: Duration, what: &str, pred: impl Fn(&telha::proto::Status) -> bool) -> telha::proto::Status {
        let start = Instant::now();
        loop {
            let s = self.status().await;
            if pred(&s) {
                return s;
            }
            assert!(start.elapsed() < limit, "timed out waiting for {what}; last status: {s:?}\nlog:\n{}", self.log());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Submits a job with options (a JSON object).
    pub async fn submit_with(&self, format: &str, name: &str, content: &[u8], options_json: &str) -> Job {
        let header = SubmitHeader { tenant_id: "t".into(), format: format.into(), name: name.into(), options_json: options_json.into(), ..Default::default() };
        let mut msgs = vec![SubmitJobRequest { part: Some(Part::Header(header)) }];
        if !content.is_empty() {
            msgs.push(SubmitJobRequest { part: Some(Part::Chunk(content.to_vec())) });
        }
        self.client().await.submit_job(tokio_stream::iter(msgs)).await.expect("submit").into_inner()
    }

    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn spawn(&mut self) {
        let addr_file = self.data_dir().join("serve.addr");
        let _ = std::fs::remove_file(&addr_file);
        let log = std::fs::OpenOptions::new().create(true).append(true).open(self.dir.path().join("serve.log")).expect("log");
        // A bench may serve from another build (before/after in one sitting): TELHA_BENCH_SERVER.
        let bin = std::env::var_os("TELHA_BENCH_SERVER").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_telha")));
        let child = Command::new(bin)
            .args(["--config", self.config.to_str().expect("utf-8 path"), "serve"])
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn telha serve");
        self.child = Some(child);
        let start = Instant::now();
        loop {
            if let Ok(a) = std::fs::read_to_string(&addr_file) {
                if !a.is_empty() {
                    self.addr = a.trim().to_string();
                    break;
                }
            }
            assert!(start.elapsed() < Duration::from_secs(20), "server did not start: {}", self.log());
            std::thread::sleep(Duration::from_millis(10));
        }
        self.token = std::fs::read_to_string(self.data_dir().join("token")).expect("token").trim().to_string();
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("serve.log")).unwrap_or_default()
    }

    /// SIGKILL, as a crash would.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Kill -9 and start again on the same data dir.
    pub fn restart(&mut self) {
        self.kill9();
        self.spawn();
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(Child::id).unwrap_or(0)
    }

    pub async fn channel(&self) -> Channel {
        Channel::from_shared(format!("http://{}", self.addr)).expect("uri").connect().await.expect("connect")
    }

    pub fn bearer(&self) -> Bearer {
        Bearer(Some(format!("Bearer {}", self.token).parse().expect("header")))
    }

    pub async fn client(&self) -> IngestServiceClient<Authed> {
        IngestServiceClient::with_interceptor(self.channel().await, self.bearer())
    }

    pub async fn worker_client(&self) -> WorkerServiceClient<Authed> {
        WorkerServiceClient::with_interceptor(self.channel().await, self.bearer())
    }

    /// Submits a job with `content` and returns it.
    pub async fn submit(&self, tenant: &str, format: &str, name: &str, content: &[u8]) -> Job {
        submit(&mut self.client().await, tenant, format, name, content).await.expect("submit")
    }

    pub async fn job(&self, id: &str) -> Job {
        self.client().await.get_job(GetJobRequest { job_id: id.into(), tenant_id: String::new() }).await.expect("get job").into_inner()
    }

    /// Polls the job until `pred` holds (or panics after `limit`).
    pub async fn wait_for(&self, id: &str, limit: Duration, pred: impl Fn(&Job) -> bool) -> Job {
        let start = Instant::now();
        loop {
            let j = self.job(id).await;
            if pred(&j) {
                return j;
            }
            assert!(start.elapsed() < limit, "job {id} never reached the expected state; last: {j:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Runs the CLI against this server.
    pub fn cli(&self, args: &[&str]) -> std::process::Output {
        Command::new(env!("CARGO_BIN_EXE_telha"))
            .arg("--config")
            .arg(&self.config)
            .args(args)
            .env_remove("TELHA_ADDR")
            .env_remove("TELHA_TOKEN")
            .output()
            .expect("run telha")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill9();
    }
}

pub async fn submit(client: &mut IngestServiceClient<Authed>, tenant: &str, format: &str, name: &str, content: &[u8]) -> Result<Job, tonic::Status> {
    let header = SubmitHeader { tenant_id: tenant.into(), format: format.into(), name: name.into(), ..Default::default() };
    let mut msgs = vec![SubmitJobRequest { part: Some(Part::Header(header)) }];
    for c in content.chunks(64 * 1024) {
        msgs.push(SubmitJobRequest { part: Some(Part::Chunk(c.to_vec())) });
    }
    client.submit_job(tokio_stream::iter(msgs)).await.map(|r| r.into_inner())
}

/// A worker speaking WorkerService directly.
pub struct Worker {
    pub id: String,
    pub client: WorkerServiceClient<Authed>,
    stream: Option<tonic::Streaming<JobPayload>>,
}

impl Worker {
    pub async fn connect(server: &Server, id: &str, formats: &[&str]) -> Self {
        Self::connect_with(server, id, formats, 1).await
    }

    pub async fn connect_with(server: &Server, id: &str, formats: &[&str], max_in_flight: u32) -> Self {
        let mut client = server.worker_client().await;
        let req = PollJobsRequest { worker_id: id.into(), formats: formats.iter().map(|s| s.to_string()).collect(), max_in_flight };
        let stream = client.poll_jobs(req).await.expect("poll").into_inner();
        Self { id: id.into(), client, stream: Some(stream) }
    }

    /// The next job, or None if none arrives within `limit`.
    pub async fn next(&mut self, limit: Duration) -> Option<JobPayload> {
        let stream = self.stream.as_mut()?;
        match tokio::time::timeout(limit, stream.message()).await {
            Ok(Ok(Some(j))) => Some(j),
            Ok(Ok(None)) => None,
            Ok(Err(e)) => panic!("poll stream failed: {e}"),
            Err(_) => None,
        }
    }

    /// Closes the poll stream (the worker keeps its client for submissions).
    pub fn stop_polling(&mut self) {
        self.stream = None;
    }

    pub async fn expect_job(&mut self) -> JobPayload {
        self.next(Duration::from_secs(10)).await.expect("a job within 10 s")
    }

    pub async fn succeed(&mut self, job: &JobPayload, result_json: &str) -> SubmitResponse {
        self.submit_as(&job.job_id, job.attempt, true, result_json, "", false).await
    }

    pub async fn fail(&mut self, job: &JobPayload, reason: &str, permanent: bool) -> SubmitResponse {
        self.submit_as(&job.job_id, job.attempt, false, "", reason, permanent).await
    }

    /// A retryable failure asking the retry to wait at least `retry_after_ms`.
    pub async fn fail_after(&mut self, job: &JobPayload, reason: &str, retry_after_ms: u64) -> SubmitResponse {
        let r = IngestionResult { job_id: job.job_id.clone(), failure_reason: reason.into(), worker_id: self.id.clone(), attempt: job.attempt, retry_after_ms, ..Default::default() };
        self.client.submit_ingestion_result(r).await.expect("submit result").into_inner()
    }

    pub async fn submit_as(&mut self, job_id: &str, attempt: u64, success: bool, result_json: &str, reason: &str, permanent: bool) -> SubmitResponse {
        let r = IngestionResult {
            job_id: job_id.into(),
            success,
            result_json: result_json.as_bytes().to_vec(),
            failure_reason: reason.into(),
            permanent,
            worker_id: self.id.clone(),
            attempt,
            retry_after_ms: 0,
            request_id: 0,
        };
        self.client.submit_ingestion_result(r).await.expect("submit result").into_inner()
    }

    pub async fn heartbeat(&mut self, leases: &[(&str, u64)]) -> HeartbeatResponse {
        let req = HeartbeatRequest {
            worker_id: self.id.clone(),
            job_ids: vec![],
            leases: leases.iter().map(|(j, a)| LeaseRef { job_id: j.to_string(), attempt: *a }).collect(),
        };
        self.client.heartbeat(req).await.expect("heartbeat").into_inner()
    }
}

/// A minimal valid final submission with `n` nodes.
/// The core's submission hash of a job's submissions: blake3 over the hex blake3 of
/// each one, in `seq` order. Pass each with the core ids of earlier submissions of its
/// lease already written as their positions (`@<seq>.<index>`, README).
pub fn submission_hash<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> String {
    let mut h = blake3::Hasher::new();
    for part in parts {
        h.update(blake3::hash(part).to_hex().as_bytes());
    }
    h.finalize().to_hex().to_string()
}

pub fn result_with_nodes(n: usize) -> String {
    let nodes: Vec<String> = (0..n).map(|i| format!(r#"{{"labels":["PARAGRAPH"],"properties":{{"i":{i}}},"spanRefs":[]}}"#)).collect();
    format!(r#"{{"v":1,"canonicalText":"","spans":[],"nodes":[{}],"relationships":[]}}"#, nodes.join(","))
}

pub fn path_str(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// A CA and a server certificate for `localhost` and 127.0.0.1 (plus `extra` names),
/// written as ca.pem, cert.pem and key.pem in `dir`.
pub fn make_tls(dir: &Path, extra: &[&str]) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
    let ca_key = KeyPair::generate().expect("CA key");
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, "telha test CA");
    let ca = ca.self_signed(&ca_key).expect("CA");
    let key = KeyPair::generate().expect("server key");
    let names: Vec<String> = ["localhost", "127.0.0.1"].iter().chain(extra).map(|s| s.to_string()).collect();
    let cert = CertificateParams::new(names).expect("params").signed_by(&key, &ca, &ca_key).expect("server certificate");
    std::fs::write(dir.join("ca.pem"), ca.pem()).expect("ca.pem");
    std::fs::write(dir.join("cert.pem"), cert.pem()).expect("cert.pem");
    std::fs::write(dir.join("key.pem"), key.serialize_pem()).expect("key.pem");
}
